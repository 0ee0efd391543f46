-- 0008: the tree on disk when a run last stopped without finishing (blocked, parked, paused), so
-- that resume and supervise can tell work done after it (SPEC §2.1, tree-moved-on).
CREATE TABLE run_stop (
	run_id TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
	tree   TEXT NOT NULL,
	at     INTEGER NOT NULL
) STRICT;
