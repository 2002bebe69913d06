-- What each user holds of the cluster right now, counted by every node alike: one row per open session
-- ('session', micros 0) and per running task ('task', micros = its hold on the balance). A row is taken
-- in the same transaction that counts the user's rows (under a lock on the user's row), and deleted when
-- the session or task ends; a node declared lost, or recovering after a crash, drops its own rows.
CREATE TABLE claims (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id),
    node_id     TEXT NOT NULL,
    kind        TEXT NOT NULL,
    micros      BIGINT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX claims_user ON claims(user_id);
CREATE INDEX claims_node ON claims(node_id);
