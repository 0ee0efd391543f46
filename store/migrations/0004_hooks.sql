-- 0004: lifecycle hooks through an outbox.
--
-- hooks holds the hook commands of a run as the task file declared them when the run started
-- (task '' for the run-level hooks at the top of the file), with their templates unexpanded.
-- hook_deliveries is the outbox: AppendEvent inserts a row for every hook a task or run state
-- change fires, in the transaction that records the change, so a change is never committed
-- without its hooks. A process delivers a row after the commit: it claims it (claimed_*,
-- claimed_until, tries + 1), runs the command and records delivered or failed. A row that stays
-- pending with a claim whose process died, or whose claim expired, is delivered again by the
-- next mulligan process with the same delivery_id ("<run>-h<id>").
CREATE TABLE hooks (
	run_id  TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	task_id TEXT NOT NULL DEFAULT '',
	hook    TEXT NOT NULL,
	ord     INTEGER NOT NULL,
	command TEXT NOT NULL,
	PRIMARY KEY (run_id, task_id, hook, ord)
) STRICT;

CREATE TABLE hook_deliveries (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	run_id        TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	task_id       TEXT NOT NULL DEFAULT '',
	attempt       INTEGER,
	hook          TEXT NOT NULL,
	level         TEXT NOT NULL,
	command       TEXT NOT NULL,
	event_seq     INTEGER NOT NULL,
	state_to      TEXT NOT NULL DEFAULT '',
	reason        TEXT NOT NULL DEFAULT '',
	state         TEXT NOT NULL DEFAULT 'pending',
	delivery_id   TEXT NOT NULL DEFAULT '',
	tries         INTEGER NOT NULL DEFAULT 0,
	exit_code     INTEGER,
	output        TEXT NOT NULL DEFAULT '',
	error         TEXT NOT NULL DEFAULT '',
	created_at    INTEGER NOT NULL,
	claimed_pid   INTEGER,
	claimed_host  TEXT,
	claimed_ticks INTEGER,
	claimed_until INTEGER,
	delivered_at  INTEGER
) STRICT;

-- the deliverers' scan: pending rows, oldest first
CREATE INDEX hook_deliveries_by_state ON hook_deliveries (state, id);
CREATE INDEX hook_deliveries_by_run ON hook_deliveries (run_id, id);
