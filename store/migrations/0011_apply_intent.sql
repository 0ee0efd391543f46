-- 0011: an apply of an attempt's change into a working tree, recorded before its first file is
-- written and deleted once the last is (SPEC §4.1): a row found later is an apply a crash
-- interrupted, which the next command that opens the run finishes or rolls back.
CREATE TABLE apply_intents (
	id        INTEGER PRIMARY KEY,
	worktree  TEXT NOT NULL,
	run_id    TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	task_id   TEXT NOT NULL,
	attempt   INTEGER NOT NULL,
	undo_ref  TEXT NOT NULL,
	from_tree TEXT NOT NULL,
	tree      TEXT NOT NULL,
	paths     TEXT NOT NULL,
	settle    INTEGER NOT NULL,
	at        INTEGER NOT NULL
) STRICT;
