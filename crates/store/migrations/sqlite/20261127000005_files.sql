-- Session files: what a session's pages downloaded (or a client uploaded), with their bytes, kept after
-- the session ended so any node can serve them until they are purged (--file-retention-hours).
CREATE TABLE files (
    session_id  TEXT NOT NULL,
    user_id     TEXT NOT NULL REFERENCES users(id),
    name        TEXT NOT NULL,
    bytes       BIGINT NOT NULL,
    sha256      TEXT NOT NULL,
    mime_type   TEXT NOT NULL,
    source      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    content     BLOB NOT NULL,
    PRIMARY KEY (session_id, name)
);
CREATE INDEX files_created ON files(created_at);
