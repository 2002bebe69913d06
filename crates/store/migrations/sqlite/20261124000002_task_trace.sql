-- A task's action trace (JSON, for replayOf) and, for a replay, what it replayed (data.replay).
ALTER TABLE tasks ADD COLUMN trace TEXT;
ALTER TABLE tasks ADD COLUMN replay TEXT;
