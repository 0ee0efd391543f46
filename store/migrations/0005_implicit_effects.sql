-- 0005: the possible effect of an attempt of a task marked `side_effects: non_idempotent`.
-- The runner records one implicit row (name 'attempt', no compensation) in the transaction that
-- starts the attempt: the task's author said every started attempt may have acted on the world.
-- An effect the attempt records itself (`mulligan effect record`) is the finer account and
-- replaces the row; an attempt whose agent never started drops it.
ALTER TABLE effects ADD COLUMN implicit INTEGER NOT NULL DEFAULT 0;
