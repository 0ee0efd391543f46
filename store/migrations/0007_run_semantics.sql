-- 0007: run semantics (issue 15).
--
-- tasks.parked_ms is the time the task spent parked (the run paused, waiting for a quota reset or
-- for an approval) since it started; parked_at is when the current parking began (NULL when not
-- parked). A task's deadline is started_at + deadline + parked_ms: parked time is not the task's.
-- tasks.silent_at is when the attempt in flight raised its silence flag (NULL: not silent).
-- attempts.fingerprint identifies a failure (class, code, normalised decisive lines, post tree) so
-- the same failure again in a row can hold the task (no-progress) instead of paying for it again.
ALTER TABLE tasks ADD COLUMN parked_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN parked_at INTEGER;
ALTER TABLE tasks ADD COLUMN silent_at INTEGER;
ALTER TABLE attempts ADD COLUMN fingerprint TEXT NOT NULL DEFAULT '';

-- the inventory (`mulligan tasks --state`): held tasks across runs
CREATE INDEX tasks_by_state ON tasks (state);
