-- The action cache: a user's finished model runs, replayed without the model when the same task starts
-- again. `cache_key` is a digest of the normalized task text, the start URL's origin and path and a
-- fingerprint of the first page; `steps` the run's action trace (JSON, secrets as `<secret:NAME>`).
CREATE TABLE action_cache (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id),
    cache_key   TEXT NOT NULL,
    task_text   TEXT NOT NULL,
    start_url   TEXT NOT NULL,
    steps       TEXT NOT NULL,
    tokens      BIGINT NOT NULL,
    hits        BIGINT NOT NULL DEFAULT 0,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    UNIQUE (user_id, cache_key)
);
CREATE INDEX action_cache_by_user ON action_cache (user_id, updated_at);

-- What the action cache did for a task (`data.cache`): hit, healed, miss or off.
ALTER TABLE tasks ADD COLUMN cache TEXT;
