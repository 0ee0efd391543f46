-- 0006: what an attempt changed outside the working tree (SPEC §2.1): HEAD, the refs outside
-- refs/mulligan/, the stash and the user's index. `pre` is the state recorded with the attempt's
-- pre snapshot, `post` what differed when it ended (null until then), `changes` the list shown
-- as git_changes, and `reset` what became of them: '' not yet decided, 'put_back' (all put back),
-- 'partial' (some left because someone changed them again), 'kept' (the attempt's work, or
-- `git: allow`).
CREATE TABLE attempt_git (
	run_id  TEXT NOT NULL,
	task_id TEXT NOT NULL,
	n       INTEGER NOT NULL,
	pre     TEXT NOT NULL,
	post    TEXT,
	changes TEXT NOT NULL DEFAULT '[]',
	reset   TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (run_id, task_id, n),
	FOREIGN KEY (run_id, task_id, n) REFERENCES attempts (run_id, task_id, n) ON DELETE CASCADE
) STRICT;
