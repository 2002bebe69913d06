-- Webhooks: endpoints a user registered, the outbox of messages to deliver to them (written in the same
-- transaction as the state change a message describes), and the log of delivery attempts.
CREATE TABLE webhooks (
    id                  TEXT PRIMARY KEY,
    user_id             TEXT NOT NULL REFERENCES users(id),
    url                 TEXT NOT NULL,
    events              TEXT NOT NULL,
    description         TEXT,
    secret              TEXT NOT NULL,
    previous_secret     TEXT,
    previous_until      BIGINT,
    created_at          BIGINT NOT NULL,
    deleted_at          BIGINT
);
CREATE INDEX webhooks_user ON webhooks(user_id);

-- One row per message and endpoint. `id` is the message's webhook-id (kept across retries); a row is
-- claimed by one node at a time (claimed_until), so a cluster delivers each message once.
CREATE TABLE webhook_outbox (
    id              TEXT PRIMARY KEY,
    webhook_id      TEXT NOT NULL REFERENCES webhooks(id),
    event_type      TEXT NOT NULL,
    body            TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    claimed_until   BIGINT NOT NULL DEFAULT 0,
    status          TEXT NOT NULL
);
CREATE INDEX webhook_outbox_due ON webhook_outbox(status, next_attempt_at);

CREATE TABLE webhook_deliveries (
    id            TEXT PRIMARY KEY,
    webhook_id    TEXT NOT NULL,
    message_id    TEXT NOT NULL,
    event_type    TEXT NOT NULL,
    attempt       BIGINT NOT NULL,
    status_code   BIGINT,
    error         TEXT,
    latency_ms    BIGINT NOT NULL,
    created_at    BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_hook ON webhook_deliveries(webhook_id, created_at);
