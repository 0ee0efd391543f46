-- 0001: the first schema. Times are unix milliseconds (INTEGER), NULL when absent. Text columns
-- that may be absent are '' rather than NULL so Go strings map onto them without null wrappers.
-- STRICT keeps a mistyped bind from being stored silently as the wrong type. States are checked
-- in Go, not with CHECK constraints, because SQLite cannot change a CHECK without rebuilding
-- the table and the list of states may grow.

CREATE TABLE runs (
	id                       TEXT PRIMARY KEY,
	worktree                 TEXT NOT NULL,
	git_dir                  TEXT NOT NULL DEFAULT '',
	task_file                TEXT NOT NULL DEFAULT '',
	task_file_hash           TEXT NOT NULL DEFAULT '',
	task_file_content        BLOB,
	base_ref                 TEXT NOT NULL DEFAULT '',
	base_tree                TEXT NOT NULL DEFAULT '',
	state                    TEXT NOT NULL,
	reason                   TEXT NOT NULL DEFAULT '',
	started_at               INTEGER NOT NULL,
	finished_at              INTEGER,
	max_cost_usd             REAL,
	options_json             TEXT,
	-- the owner: the process allowed to write the run, fenced by owner_epoch
	owner_pid                INTEGER,
	owner_host               TEXT,
	owner_start_ticks        INTEGER,
	owner_epoch              INTEGER NOT NULL DEFAULT 0,
	heartbeat_at             INTEGER,
	resumes_without_progress INTEGER NOT NULL DEFAULT 0,
	pruned                   INTEGER NOT NULL DEFAULT 0
) STRICT;

-- ls (newest first) and "last"
CREATE INDEX runs_by_start ON runs (started_at, id);
-- "last" within one worktree
CREATE INDEX runs_by_worktree ON runs (worktree, started_at, id);
-- supervise: runs that are not finished
CREATE INDEX runs_by_state ON runs (state);

CREATE TABLE tasks (
	run_id               TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	id                   TEXT NOT NULL,
	ord                  INTEGER NOT NULL,
	state                TEXT NOT NULL,
	reason               TEXT NOT NULL DEFAULT '',
	needs_json           TEXT NOT NULL DEFAULT '[]',
	resume_at            INTEGER,
	consecutive_failures INTEGER NOT NULL DEFAULT 0,
	retries_used         INTEGER NOT NULL DEFAULT 0,
	base_tree            TEXT NOT NULL DEFAULT '',
	started_at           INTEGER,
	finished_at          INTEGER,
	PRIMARY KEY (run_id, id)
) STRICT;

-- Prompt and log come last: SQLite reads a row's columns in order, so ls's sums of tokens and
-- cost never have to step over a long prompt's overflow pages.
CREATE TABLE attempts (
	run_id         TEXT NOT NULL,
	task_id        TEXT NOT NULL,
	n              INTEGER NOT NULL,
	agent          TEXT NOT NULL DEFAULT '',
	state          TEXT NOT NULL,
	class          TEXT NOT NULL DEFAULT '',
	code           TEXT NOT NULL DEFAULT '',
	message        TEXT NOT NULL DEFAULT '',
	hint           TEXT NOT NULL DEFAULT '',
	retry_after_ms INTEGER,
	retry_eligible INTEGER,
	counted        INTEGER NOT NULL DEFAULT 0,
	exit_code      INTEGER,
	started_at     INTEGER NOT NULL,
	finished_at    INTEGER,
	duration_ms    INTEGER,
	pre_ref        TEXT NOT NULL DEFAULT '',
	pre_tree       TEXT NOT NULL DEFAULT '',
	ref            TEXT NOT NULL DEFAULT '',
	tree           TEXT NOT NULL DEFAULT '',
	files_changed  INTEGER,
	schema_retries INTEGER NOT NULL DEFAULT 0,
	tokens_in      INTEGER,
	tokens_out     INTEGER,
	cost_usd       REAL,
	prompt         TEXT NOT NULL DEFAULT '',
	log            TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (run_id, task_id, n),
	FOREIGN KEY (run_id, task_id) REFERENCES tasks (run_id, id) ON DELETE CASCADE
) STRICT;

-- AUTOINCREMENT so a sequence number is never handed out twice, even after the newest events
-- are deleted: `events -f` followers remember the last seq they saw.
CREATE TABLE events (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	time         INTEGER NOT NULL,
	run_id       TEXT REFERENCES runs (id) ON DELETE CASCADE,
	task_id      TEXT NOT NULL DEFAULT '',
	attempt      INTEGER,
	type         TEXT NOT NULL,
	payload_json TEXT
) STRICT;

CREATE INDEX events_by_run ON events (run_id, seq);

CREATE TABLE agent_health (
	run_id   TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	agent    TEXT NOT NULL,
	disabled INTEGER NOT NULL DEFAULT 1,
	class    TEXT NOT NULL DEFAULT '',
	reason   TEXT NOT NULL DEFAULT '',
	at       INTEGER NOT NULL,
	PRIMARY KEY (run_id, agent)
) STRICT;

CREATE TABLE worktree_locks (
	worktree          TEXT PRIMARY KEY,
	run_id            TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	owner_pid         INTEGER NOT NULL,
	owner_host        TEXT NOT NULL,
	owner_start_ticks INTEGER NOT NULL,
	acquired_at       INTEGER NOT NULL
) STRICT;

CREATE INDEX worktree_locks_by_run ON worktree_locks (run_id);
