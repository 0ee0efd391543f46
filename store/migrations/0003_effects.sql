-- 0003: the effect ledger. `mulligan effect record` appends a row from inside an attempt;
-- revert/timetravel run the compensations newest first and record the outcome here.
-- state: recorded | compensated | compensation_failed | unresolved.
-- delivery_id is stable ("<run>-<id>"): every redelivery of a compensation carries it.
CREATE TABLE effects (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    run         TEXT    NOT NULL,
    task        TEXT    NOT NULL,
    attempt     INTEGER NOT NULL,
    name        TEXT    NOT NULL,
    idempotent  INTEGER NOT NULL DEFAULT 0,
    compensate  TEXT    NOT NULL DEFAULT '[]',
    data        TEXT    NOT NULL DEFAULT 'null',
    state       TEXT    NOT NULL DEFAULT 'recorded',
    delivery_id TEXT    NOT NULL DEFAULT '',
    output      TEXT    NOT NULL DEFAULT '',
    recorded_at INTEGER NOT NULL,
    resolved_at INTEGER
);
CREATE INDEX effects_run ON effects(run, id);
