package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Hook names (SPEC §5), as the task file writes them.
const (
	HookOnRetry        = "on_retry"
	HookOnSuccess      = "on_success"
	HookOnFailed       = "on_failed"
	HookOnBlocked      = "on_blocked"
	HookOnWaitingQuota = "on_waiting_quota"
	HookOnCancelled    = "on_cancelled"
	// HookOnTimeout: an attempt ended by its timeout or heartbeat (attempt.failed).
	HookOnTimeout = "on_timeout"
	// HookOnPaused: a task or run entering paused.
	HookOnPaused = "on_paused"
	// HookOnSilent: an attempt was silent for the task's `silence` (task.silent).
	HookOnSilent = "on_silent"
	// HookOnWaitingApproval: a task or run entering waiting_approval.
	HookOnWaitingApproval = "on_waiting_approval"
	// HookOnNoProgress: a task held blocked for no-progress (besides on_blocked).
	HookOnNoProgress = "on_no_progress"
)

// reasonNoProgress is the block reason of the no-progress rule (attempt.ReasonNoProgress).
const reasonNoProgress = "no-progress"

// hooksByEvent are the hooks fired by events that are not state changes: they are about a task's
// attempt and fire the task's hook and the run-level one, like on_retry.
var hooksByEvent = map[string]string{
	EventTaskSilent: HookOnSilent,
}

// Hook delivery states.
const (
	HookPending   = "pending"
	HookDelivered = "delivered"
	HookFailed    = "failed"
)

// Hook levels: a task's own hooks, or the run-level ones at the top of the task file.
const (
	HookLevelTask = "task"
	HookLevelRun  = "run"
)

// HookDef is one hook command of a run: task "" for a run-level hook.
type HookDef struct {
	Task    string
	Hook    string
	Command []string // templates unexpanded
}

// HookDelivery is one row of the outbox.
type HookDelivery struct {
	ID      int64
	RunID   string
	TaskID  string // the task whose change fired it; "" for a run state change
	Attempt int    // the attempt that ended (0: none)
	Hook    string
	Level   string
	Command []string // templates unexpanded
	// EventSeq is the event that fired it; To and Reason the state entered and why.
	EventSeq   int64
	To, Reason string

	State        string
	DeliveryID   string // "<run>-h<id>": the same on every delivery of this row
	Tries        int
	ExitCode     *int
	Output       string
	Error        string
	CreatedAt    time.Time
	Claim        *Owner
	ClaimedUntil *time.Time
	DeliveredAt  *time.Time
}

// InsertHooks records the hook commands of a run (once, when the run starts).
func (tx *Tx) InsertHooks(run string, defs []HookDef) error {
	ord := map[[2]string]int{}
	for _, d := range defs {
		if !knownHook(d.Hook) {
			return fmt.Errorf("insert hooks of run %s: unknown hook %q", run, d.Hook)
		}
		if len(d.Command) == 0 {
			return fmt.Errorf("insert hooks of run %s: %s has an empty command", run, d.Hook)
		}
		cmd, err := json.Marshal(d.Command)
		if err != nil {
			return err
		}
		k := [2]string{d.Task, d.Hook}
		if _, err := tx.exec(`INSERT INTO hooks (run_id, task_id, hook, ord, command) VALUES (?, ?, ?, ?, ?)`,
			run, d.Task, d.Hook, ord[k], string(cmd)); err != nil {
			return fmt.Errorf("insert hooks of run %s: %w", run, err)
		}
		ord[k]++
	}
	return nil
}

// ReplaceHooks replaces the hook commands of a run (resume --reload): the hooks later state
// changes fire are the new file's. Deliveries already in the outbox are kept as they are.
func (tx *Tx) ReplaceHooks(run string, defs []HookDef) error {
	if _, err := tx.exec(`DELETE FROM hooks WHERE run_id = ?`, run); err != nil {
		return fmt.Errorf("replace hooks of run %s: %w", run, err)
	}
	return tx.InsertHooks(run, defs)
}

func knownHook(hook string) bool {
	for _, h := range hookByState {
		if h == hook {
			return true
		}
	}
	for _, h := range hooksByEvent {
		if h == hook {
			return true
		}
	}
	return hook == HookOnTimeout || hook == HookOnNoProgress
}

// hookByState maps the state a task or run enters to the hook it fires (task and run alike;
// on_retry: a task entering backoff, that is an automatic retry scheduled).
var hookByState = map[string]string{
	TaskBackoff:         HookOnRetry,
	TaskSucceeded:       HookOnSuccess,
	TaskFailed:          HookOnFailed,
	TaskBlocked:         HookOnBlocked,
	TaskWaitingQuota:    HookOnWaitingQuota,
	TaskCancelled:       HookOnCancelled,
	TaskPaused:          HookOnPaused,
	TaskWaitingApproval: HookOnWaitingApproval,
}

// queueTaskHooks puts into the outbox the hooks a task entering state `to` fires (TransitionTask
// calls it for a change, never for staying): the task's hook of that state's name (succeeded,
// failed, blocked, waiting_quota, waiting_approval, paused, cancelled); entering backoff (an
// automatic retry) fires on_retry, the task's and the run-level one; entering blocked for
// no-progress fires on_no_progress as well, the task's and the run-level one.
func (tx *Tx) queueTaskHooks(run, task string, attempt int, to TaskState, reason string, seq int64) error {
	hook, ok := hookByState[string(to)]
	if !ok {
		return nil
	}
	taskAndRun := []hookScope{{task, HookLevelTask}, {"", HookLevelRun}}
	scopes := []hookScope{{task, HookLevelTask}}
	if hook == HookOnRetry {
		scopes = taskAndRun
	}
	f := firing{to: string(to), reason: reason, seq: seq}
	if err := tx.insertDeliveries(run, task, attempt, hook, f, scopes); err != nil {
		return err
	}
	if to == TaskBlocked && reason == reasonNoProgress {
		return tx.insertDeliveries(run, task, attempt, HookOnNoProgress, f, taskAndRun)
	}
	return nil
}

// queueRunHooks puts into the outbox the run-level hook a run entering `to` fires (TransitionRun
// calls it for a change): the same names as a task's, on_retry excepted.
func (tx *Tx) queueRunHooks(run string, to RunState, reason string, seq int64) error {
	hook, ok := hookByState[string(to)]
	if !ok || hook == HookOnRetry {
		return nil
	}
	return tx.insertDeliveries(run, "", 0, hook, firing{to: string(to), reason: reason, seq: seq},
		[]hookScope{{"", HookLevelRun}})
}

// fireEventHooks puts into the outbox the hooks of an event that is not a state change, decided
// from the Go value its writer passed (no JSON read back): an attempt ended by its timeout or
// heartbeat (attempt.failed) fires on_timeout, and task.silent fires on_silent, the task's and
// the run-level one.
func (tx *Tx) fireEventHooks(run, task string, attempt int, typ string, payload any, seq int64) error {
	if run == "" || task == "" {
		return nil
	}
	taskAndRun := []hookScope{{task, HookLevelTask}, {"", HookLevelRun}}
	switch {
	case typ == EventAttemptFailed:
		var f AttemptFailedPayload
		switch p := payload.(type) {
		case AttemptFailedPayload:
			f = p
		case *AttemptFailedPayload:
			f = *p
		default:
			return fmt.Errorf("append event %s: the payload is a store.AttemptFailedPayload, not %T", typ, payload)
		}
		if f.Class != "attempt_timeout" && f.Class != "heartbeat_timeout" {
			return nil
		}
		return tx.insertDeliveries(run, task, attempt, HookOnTimeout, firing{reason: f.Class, seq: seq}, taskAndRun)
	case hooksByEvent[typ] != "":
		return tx.insertDeliveries(run, task, attempt, hooksByEvent[typ], firing{seq: seq}, taskAndRun)
	}
	return nil
}

// firing is what a queued hook records of what fired it: the state entered, why, the event.
type firing struct {
	to, reason string
	seq        int64
}

// hookScope is whose commands of a hook a firing queues: the task's own, or the run-level ones.
type hookScope struct{ task, level string }

// insertDeliveries queues the commands of hook, for each scope, as outbox rows.
func (tx *Tx) insertDeliveries(run, task string, attempt int, hook string, f firing, scopes []hookScope) error {
	// Most changes fire nothing: one indexed read says so.
	var defined int
	if err := tx.queryRow(`SELECT EXISTS (SELECT 1 FROM hooks WHERE run_id = ? AND hook = ?)`, run, hook).Scan(&defined); err != nil {
		return fmt.Errorf("fire hooks: %w", err)
	}
	if defined == 0 {
		return nil
	}
	if task != "" && attempt == 0 {
		// a change an operator made (cancel, stop): the hook is about the task's latest attempt
		if err := tx.queryRow(`SELECT coalesce(max(n), 0) FROM attempts WHERE run_id = ? AND task_id = ?`,
			run, task).Scan(&attempt); err != nil {
			return fmt.Errorf("fire hooks: %w", err)
		}
	}
	var attemptArg any
	if attempt != 0 {
		attemptArg = attempt
	}
	now := ms(tx.now())
	for _, s := range scopes {
		res, err := tx.exec(`INSERT INTO hook_deliveries (run_id, task_id, attempt, hook, level, command,
				event_seq, state_to, reason, state, created_at)
			SELECT run_id, ?, ?, hook, ?, command, ?, ?, ?, ?, ? FROM hooks
			WHERE run_id = ? AND task_id = ? AND hook = ? ORDER BY ord`,
			task, attemptArg, s.level, f.seq, f.to, f.reason, HookPending, now, run, s.task, hook)
		if err != nil {
			return fmt.Errorf("fire %s hooks: %w", hook, err)
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			continue
		}
		// The rows just inserted have the ids up to the last one, in one writer's transaction.
		last, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("fire %s hooks: %w", hook, err)
		}
		if _, err := tx.exec(`UPDATE hook_deliveries SET delivery_id = run_id || '-h' || id WHERE id BETWEEN ? AND ?`,
			last-n+1, last); err != nil {
			return fmt.Errorf("fire %s hooks: %w", hook, err)
		}
	}
	return nil
}

const hookCols = `id, run_id, task_id, attempt, hook, level, command, event_seq, state_to, reason,
	state, delivery_id, tries, exit_code, output, error, created_at, claimed_pid, claimed_host,
	claimed_ticks, claimed_until, delivered_at`

func scanHookDelivery(sc scanner) (HookDelivery, error) {
	var (
		d                        HookDelivery
		cmd                      string
		attempt, exit            sql.Null[int]
		created                  int64
		pid                      sql.Null[int]
		host                     sql.Null[string]
		ticks, until, deliveredA sql.Null[int64]
	)
	err := sc.Scan(&d.ID, &d.RunID, &d.TaskID, &attempt, &d.Hook, &d.Level, &cmd, &d.EventSeq,
		&d.To, &d.Reason, &d.State, &d.DeliveryID, &d.Tries, &exit, &d.Output, &d.Error, &created,
		&pid, &host, &ticks, &until, &deliveredA)
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal([]byte(cmd), &d.Command); err != nil {
		return d, fmt.Errorf("hook delivery %d: command: %w", d.ID, err)
	}
	d.Attempt, d.ExitCode = attempt.V, fromNull(exit)
	d.CreatedAt, d.ClaimedUntil, d.DeliveredAt = fromMS(created), fromNullMS(until), fromNullMS(deliveredA)
	if pid.Valid {
		d.Claim = &Owner{PID: pid.V, Host: host.V, StartTicks: uint64(ticks.V)}
	}
	return d, nil
}

func (tx *Tx) hookDeliveries(where string, args ...any) ([]HookDelivery, error) {
	rows, err := tx.query(`SELECT `+hookCols+` FROM hook_deliveries `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read hook deliveries: %w", err)
	}
	defer rows.Close()
	var out []HookDelivery
	for rows.Next() {
		d, err := scanHookDelivery(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// HookDeliveries returns a run's deliveries (all runs' when run is ""), oldest first.
func (tx *Tx) HookDeliveries(run string) ([]HookDelivery, error) {
	if run == "" {
		return tx.hookDeliveries(`ORDER BY id`)
	}
	return tx.hookDeliveries(`WHERE run_id = ? ORDER BY id`, run)
}

// PendingHookDeliveries returns the deliveries not yet delivered or failed, of one run or of
// all (run ""), oldest first, claimed or not: the caller decides whether a claim still holds.
func (tx *Tx) PendingHookDeliveries(run string) ([]HookDelivery, error) {
	if run == "" {
		return tx.hookDeliveries(`WHERE state = ? ORDER BY id`, HookPending)
	}
	return tx.hookDeliveries(`WHERE state = ? AND run_id = ? ORDER BY id`, HookPending, run)
}

// HasPendingHooks reports whether any delivery of run (of any run when run is "") is pending: the
// cheap read a deliverer makes before it takes the write lock to claim one.
func (tx *Tx) HasPendingHooks(run string) (bool, error) {
	var n int
	err := tx.queryRow(`SELECT EXISTS (SELECT 1 FROM hook_deliveries WHERE state = ? AND (? = '' OR run_id = ?))`,
		HookPending, run, run).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("read hook deliveries: %w", err)
	}
	return n == 1, nil
}

// ErrClaimed is returned by ClaimHookDelivery when another process claimed the delivery (or
// recorded it) since the caller read it.
var ErrClaimed = errors.New("hook delivery claimed by another process")

// ClaimHookDelivery makes o the deliverer of d until `until`, if d is still pending with the
// tries the caller read (compare-and-swap: of two processes, one wins), and counts the try.
func (tx *Tx) ClaimHookDelivery(d *HookDelivery, o Owner, until time.Time) error {
	res, err := tx.exec(`UPDATE hook_deliveries SET claimed_pid = ?, claimed_host = ?,
			claimed_ticks = ?, claimed_until = ?, tries = tries + 1
		WHERE id = ? AND state = ? AND tries = ?`,
		o.PID, o.Host, int64(o.StartTicks), ms(until), d.ID, HookPending, d.Tries)
	if err != nil {
		return fmt.Errorf("claim hook delivery %d: %w", d.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("claim hook delivery %d: %w", d.ID, err)
	} else if n == 0 {
		return fmt.Errorf("hook delivery %d: %w", d.ID, ErrClaimed)
	}
	d.Tries++
	d.Claim, d.ClaimedUntil = &o, &until
	return nil
}

// FinishHookDelivery records the outcome of a delivery the caller claimed (state delivered or
// failed) with a hook.delivered event. It fails with ErrClaimed when the claim was lost
// meanwhile (expired and taken by another process, which will record its own outcome).
func (tx *Tx) FinishHookDelivery(d *HookDelivery, o Owner, state string, exit *int, output, errText string) error {
	if state != HookDelivered && state != HookFailed {
		return fmt.Errorf("finish hook delivery %d: state %q", d.ID, state)
	}
	now := tx.now()
	res, err := tx.exec(`UPDATE hook_deliveries SET state = ?, exit_code = ?, output = ?, error = ?,
			delivered_at = ?, claimed_until = NULL
		WHERE id = ? AND state = ? AND tries = ? AND claimed_pid = ? AND claimed_ticks = ?`,
		state, orNil(exit), output, errText, ms(now), d.ID, HookPending, d.Tries, o.PID, int64(o.StartTicks))
	if err != nil {
		return fmt.Errorf("record hook delivery %d: %w", d.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("record hook delivery %d: %w", d.ID, err)
	} else if n == 0 {
		return fmt.Errorf("hook delivery %d: %w", d.ID, ErrClaimed)
	}
	d.State, d.ExitCode, d.Output, d.Error, d.DeliveredAt = state, exit, output, errText, &now
	_, err = tx.AppendEvent(d.RunID, d.TaskID, d.Attempt, EventHookDelivered, HookDeliveredPayload{Hook: d.Hook, Level: d.Level,
		DeliveryID: d.DeliveryID, State: state, Tries: d.Tries, ExitCode: exit, Error: errText})
	return err
}

// RedeliverHooks puts a run's failed deliveries back to pending (same delivery ids) and
// returns how many.
func (tx *Tx) RedeliverHooks(run string) (int, error) {
	res, err := tx.exec(`UPDATE hook_deliveries SET state = ?, claimed_until = NULL
		WHERE run_id = ? AND state = ?`, HookPending, run, HookFailed)
	if err != nil {
		return 0, fmt.Errorf("redeliver hooks of run %s: %w", run, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// hookJSON is the `hooks -o json` element.
type hookJSON struct {
	ID          int64    `json:"id"`
	Run         string   `json:"run"`
	Task        *string  `json:"task"`
	Attempt     *int     `json:"attempt"`
	Hook        string   `json:"hook"`
	Level       string   `json:"level"`
	Command     []string `json:"command"`
	To          string   `json:"to"`
	State       string   `json:"state"`
	DeliveryID  string   `json:"delivery_id"`
	Tries       int      `json:"tries"`
	ExitCode    *int     `json:"exit_code"`
	Error       *string  `json:"error"`
	CreatedAt   *string  `json:"created_at"`
	DeliveredAt *string  `json:"delivered_at"`
}

// MarshalJSON writes the `hooks -o json` shape.
func (d HookDelivery) MarshalJSON() ([]byte, error) {
	j := hookJSON{ID: d.ID, Run: d.RunID, Hook: d.Hook, Level: d.Level, Command: d.Command, To: d.To,
		State: d.State, DeliveryID: d.DeliveryID, Tries: d.Tries, ExitCode: d.ExitCode,
		CreatedAt: jtime(d.CreatedAt), DeliveredAt: jtimep(d.DeliveredAt)}
	if d.TaskID != "" {
		j.Task = &d.TaskID
	}
	if d.Attempt != 0 {
		j.Attempt = &d.Attempt
	}
	if d.Error != "" {
		j.Error = &d.Error
	}
	return json.Marshal(j)
}

// String names a delivery for messages: "on_failed of fix-tests@2 (delivery r-h3)".
func (d HookDelivery) String() string {
	what := "run " + d.RunID
	if d.TaskID != "" {
		what = d.TaskID
		if d.Attempt != 0 {
			what += "@" + strconv.Itoa(d.Attempt)
		}
	}
	return fmt.Sprintf("%s of %s (delivery %s)", d.Hook, what, d.DeliveryID)
}
