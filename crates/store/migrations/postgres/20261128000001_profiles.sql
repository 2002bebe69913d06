-- Profiles: a user's saved browser storage states by name, sealed with AES-256-GCM by the service
-- (content is never stored in clear; name, sizes, origin names and counts are, for listing).
CREATE TABLE profiles (
    user_id     TEXT NOT NULL REFERENCES users(id),
    name        TEXT NOT NULL,
    sealed      BYTEA NOT NULL,
    bytes       BIGINT NOT NULL,
    origins     TEXT NOT NULL,
    cookies     BIGINT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (user_id, name)
);

-- The one writer of a profile: the live session that opened it with persistProfile. A row whose session
-- has ended (also as instance_lost, when its node was reaped) is stale and taken over.
CREATE TABLE profile_locks (
    user_id     TEXT NOT NULL,
    name        TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (user_id, name)
);
