-- The JSON a task with an outputSchema answered with (data.output).
ALTER TABLE tasks ADD COLUMN output TEXT;
