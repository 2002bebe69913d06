-- The nodes of a cluster (one row per --node-id; a node keeps its id in its data directory) and the node
-- holding each session. A node heartbeats its row; one that stops is declared lost by another node, which
-- ends its sessions (instance_lost) and fails their running tasks (INSTANCE_UNAVAILABLE).
CREATE TABLE nodes (
    id            TEXT PRIMARY KEY,
    address       TEXT NOT NULL,
    capacity      BIGINT NOT NULL,
    free          BIGINT NOT NULL,
    started_at    BIGINT NOT NULL,
    heartbeat_at  BIGINT NOT NULL,
    stopped_at    BIGINT
);
ALTER TABLE sessions ADD COLUMN node_id TEXT;
CREATE INDEX sessions_node ON sessions(node_id);
