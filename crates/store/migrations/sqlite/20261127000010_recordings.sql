-- Recordings of sessions: the video and timeline files live under the data directory
-- (recordings/<session_id>/); this row says whose they are and what they hold. `status` is
-- recording | ready | failed; a row left `recording` by a crash of its node is settled when the node
-- starts again.
CREATE TABLE recordings (
    session_id   TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users(id),
    node_id      TEXT NOT NULL,
    status       TEXT NOT NULL,
    started_at   BIGINT NOT NULL,
    ended_at     BIGINT,
    duration_ms  BIGINT NOT NULL DEFAULT 0,
    bytes        BIGINT NOT NULL DEFAULT 0,
    frames       BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX recordings_user ON recordings(user_id, started_at);
