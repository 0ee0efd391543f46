-- 0002: operator control of a live run. `mulligan pause` and `cancel` write the request here;
-- the run's process polls it (with its heartbeat) and acts: '' (none), 'pause-drain',
-- 'pause-cancel' or 'cancel'. The runner clears it when the run stops.
ALTER TABLE runs ADD COLUMN control TEXT NOT NULL DEFAULT '';
