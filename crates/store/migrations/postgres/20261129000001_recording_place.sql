-- Where a finished recording's files are: `node` (under the data directory of the node that recorded
-- it, served by it or forwarded to it) or, once uploaded, `object_store` (`--object-store`), which
-- every node reads.
ALTER TABLE recordings ADD COLUMN storage TEXT NOT NULL DEFAULT 'node';
