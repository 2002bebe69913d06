-- webpilot schema v1. Kept to SQL that PostgreSQL runs too (see ../postgres): TEXT ids, BIGINT unix
-- milliseconds and micro-dollars, no booleans, no SQLite-only syntax.
CREATE TABLE users (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    balance_micros  BIGINT NOT NULL DEFAULT 0,
    deactivated_at  BIGINT,
    created_at      BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users(id),
    key_hash      TEXT NOT NULL UNIQUE,
    prefix        TEXT NOT NULL,
    name          TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT,
    revoked_at    BIGINT,
    last_used_at  BIGINT
);
CREATE INDEX api_keys_user ON api_keys(user_id);

CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id),
    state       TEXT NOT NULL,
    params      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    ended_at    BIGINT,
    end_reason  TEXT
);
CREATE INDEX sessions_user ON sessions(user_id);
CREATE INDEX sessions_open ON sessions(ended_at);

CREATE TABLE tasks (
    id              TEXT PRIMARY KEY,
    session_id      TEXT NOT NULL REFERENCES sessions(id),
    user_id         TEXT NOT NULL REFERENCES users(id),
    details         TEXT NOT NULL,
    status          TEXT NOT NULL,
    result_message  TEXT,
    error           TEXT,
    code            TEXT,
    guardrail       TEXT,
    input_tokens    BIGINT NOT NULL DEFAULT 0,
    output_tokens   BIGINT NOT NULL DEFAULT 0,
    compute_ms      BIGINT NOT NULL DEFAULT 0,
    cost_micros     BIGINT NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL,
    completed_at    BIGINT
);
CREATE INDEX tasks_session ON tasks(session_id);
CREATE INDEX tasks_status ON tasks(status);

-- One row per charge against a balance (task usage) or credit (admin top-up).
CREATE TABLE usage_ledger (
    id             TEXT PRIMARY KEY,
    user_id        TEXT NOT NULL REFERENCES users(id),
    task_id        TEXT,
    amount_micros  BIGINT NOT NULL,
    kind           TEXT NOT NULL,
    created_at     BIGINT NOT NULL
);
CREATE INDEX usage_ledger_user ON usage_ledger(user_id);
