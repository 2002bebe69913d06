-- Keys every node must hold alike (the socket capability key, the node-to-node key): made once by the node
-- that starts first, read by the others.
CREATE TABLE shared_secrets (
    name        TEXT PRIMARY KEY,
    value       TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
