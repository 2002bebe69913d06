-- Session time is billed: what a session's open time cost (charged once, when it ends, in the same
-- transaction that records its end), and the session a ledger movement belongs to.
ALTER TABLE sessions ADD COLUMN cost_micros BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_ledger ADD COLUMN session_id TEXT;
