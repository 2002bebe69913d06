-- A session file's bytes live in the blob store, not in this table: `blob_key` names them there
-- (`files/<sessionId>/<id>`), `storage` says which store (`node`: the folder of the node `node_id`,
-- under its data directory, served by it or forwarded to it; `object_store`: `--object-store`, which
-- every node reads). Rows written before this change keep their bytes in `content` (`storage` =
-- `database`, `blob_key` NULL) and are served from there until they are deleted or purged; new rows
-- store an empty `content`.
ALTER TABLE files ADD COLUMN blob_key TEXT;
ALTER TABLE files ADD COLUMN node_id TEXT NOT NULL DEFAULT '';
ALTER TABLE files ADD COLUMN storage TEXT NOT NULL DEFAULT 'database';
