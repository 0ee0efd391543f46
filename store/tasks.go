package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

const taskCols = `run_id, id, ord, state, reason, needs_json, resume_at, consecutive_failures,
	retries_used, base_tree, started_at, finished_at, parked_ms, parked_at, silent_at`

func scanTask(sc scanner) (Task, error) {
	var (
		t                         Task
		needs                     string
		resume, started, finished sql.Null[int64]
		parkedAt, silentAt        sql.Null[int64]
	)
	err := sc.Scan(&t.RunID, &t.ID, &t.Ord, &t.State, &t.Reason, &needs, &resume,
		&t.ConsecutiveFailures, &t.RetriesUsed, &t.BaseTree, &started, &finished, &t.ParkedMS, &parkedAt, &silentAt)
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal([]byte(needs), &t.Needs); err != nil {
		return t, fmt.Errorf("task %s/%s: needs: %w", t.RunID, t.ID, err)
	}
	t.ResumeAt, t.StartedAt, t.FinishedAt = fromNullMS(resume), fromNullMS(started), fromNullMS(finished)
	t.ParkedAt, t.SilentAt = fromNullMS(parkedAt), fromNullMS(silentAt)
	return t, nil
}

func (tx *Tx) tasks(where string, args ...any) ([]Task, error) {
	rows, err := tx.query(`SELECT `+taskCols+` FROM tasks `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// InsertTask records a task of an existing run. State defaults to pending.
func (tx *Tx) InsertTask(t *Task) error {
	if !taskIDRe.MatchString(t.ID) {
		return fmt.Errorf("insert task %q: id is not [A-Za-z0-9._-]+", t.ID)
	}
	if t.State == "" {
		t.State = TaskPending
	}
	if err := checkState("task", t.State, taskStates); err != nil {
		return fmt.Errorf("insert task %s/%s: %w", t.RunID, t.ID, err)
	}
	needs, err := marshalNeeds(t.Needs)
	if err != nil {
		return fmt.Errorf("insert task %s/%s: %w", t.RunID, t.ID, err)
	}
	_, err = tx.exec(`INSERT INTO tasks (`+taskCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		t.RunID, t.ID, t.Ord, t.State, t.Reason, needs, msOrNil(t.ResumeAt), t.ConsecutiveFailures,
		t.RetriesUsed, t.BaseTree, msOrNil(t.StartedAt), msOrNil(t.FinishedAt), t.ParkedMS, msOrNil(t.ParkedAt), msOrNil(t.SilentAt))
	if err != nil {
		return fmt.Errorf("insert task %s/%s: %w", t.RunID, t.ID, err)
	}
	return nil
}

// DeleteTask removes a task that has no attempts from its run (resume --reload, when the edited
// task file no longer has it). A task with recorded attempts is never deleted: its history is
// the run's; deleting it is refused with ErrHasAttempts.
func (tx *Tx) DeleteTask(run, task string) error {
	var n int
	if err := tx.queryRow(`SELECT count(*) FROM attempts WHERE run_id = ? AND task_id = ?`, run, task).Scan(&n); err != nil {
		return fmt.Errorf("delete task %s/%s: %w", run, task, err)
	}
	if n > 0 {
		return fmt.Errorf("delete task %s/%s: %w", run, task, ErrHasAttempts)
	}
	res, err := tx.exec(`DELETE FROM tasks WHERE run_id = ? AND id = ?`, run, task)
	return checkOne(res, err, "delete task", "task "+run+"/"+task)
}

// UpdateTask writes every field of t (not its attempts) but its state, which must be the stored
// one: a state change goes through TransitionTask (its event, its hooks), and UpdateTask refuses
// one with ErrStateChange.
func (tx *Tx) UpdateTask(t *Task) error {
	var stored string
	if err := tx.queryRow(`SELECT state FROM tasks WHERE run_id = ? AND id = ?`, t.RunID, t.ID).Scan(&stored); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("update task %s/%s: %w", t.RunID, t.ID, ErrNotFound)
		}
		return fmt.Errorf("update task %s/%s: %w", t.RunID, t.ID, err)
	}
	if stored != t.State {
		return fmt.Errorf("update task %s/%s from %s to %s: %w", t.RunID, t.ID, stored, t.State, ErrStateChange)
	}
	return tx.writeTask(t)
}

// writeTask writes every field of t (not its attempts); TransitionTask's, and UpdateTask's once
// it checked the state stays.
func (tx *Tx) writeTask(t *Task) error {
	if err := checkState("task", t.State, taskStates); err != nil {
		return fmt.Errorf("update task %s/%s: %w", t.RunID, t.ID, err)
	}
	needs, err := marshalNeeds(t.Needs)
	if err != nil {
		return fmt.Errorf("update task %s/%s: %w", t.RunID, t.ID, err)
	}
	res, err := tx.exec(`UPDATE tasks SET ord = ?, state = ?, reason = ?, needs_json = ?,
			resume_at = ?, consecutive_failures = ?, retries_used = ?, base_tree = ?,
			started_at = ?, finished_at = ?, parked_ms = ?, parked_at = ?, silent_at = ?
		WHERE run_id = ? AND id = ?`,
		t.Ord, t.State, t.Reason, needs, msOrNil(t.ResumeAt), t.ConsecutiveFailures, t.RetriesUsed,
		t.BaseTree, msOrNil(t.StartedAt), msOrNil(t.FinishedAt), t.ParkedMS, msOrNil(t.ParkedAt), msOrNil(t.SilentAt), t.RunID, t.ID)
	return checkOne(res, err, "update task", "task "+t.RunID+"/"+t.ID)
}

// GetTask returns one task with its attempts in number order.
func (tx *Tx) GetTask(run, task string) (*Task, error) {
	ts, err := tx.tasks(`WHERE run_id = ? AND id = ?`, run, task)
	if err != nil {
		return nil, fmt.Errorf("read task %s/%s: %w", run, task, err)
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("task %s/%s: %w", run, task, ErrNotFound)
	}
	t := ts[0]
	t.Attempts, err = tx.attempts(`WHERE run_id = ? AND task_id = ? ORDER BY n`, run, task)
	if err != nil {
		return nil, fmt.Errorf("read task %s/%s: %w", run, task, err)
	}
	if err := tx.fillGitChanges(run, t.Attempts); err != nil {
		return nil, err
	}
	return &t, nil
}

const attemptCols = `run_id, task_id, n, agent, state, class, code, message, hint,
	retry_after_ms, retry_eligible, counted, exit_code, started_at, finished_at, duration_ms,
	pre_ref, pre_tree, ref, tree, files_changed, schema_retries, tokens_in, tokens_out,
	cost_usd, prompt, log, fingerprint, agent_session, agent_resume, lane`

func scanAttempt(sc scanner) (Attempt, error) {
	var (
		a                                   Attempt
		retryAfter, duration, tokIn, tokOut sql.Null[int64]
		eligible                            sql.Null[bool]
		exit, files                         sql.Null[int]
		started                             int64
		finished                            sql.Null[int64]
		cost                                sql.Null[float64]
	)
	err := sc.Scan(&a.RunID, &a.TaskID, &a.N, &a.Agent, &a.State, &a.Class, &a.Code, &a.Message,
		&a.Hint, &retryAfter, &eligible, &a.Counted, &exit, &started, &finished, &duration,
		&a.PreRef, &a.PreTree, &a.Ref, &a.Tree, &files, &a.SchemaRetries, &tokIn, &tokOut,
		&cost, &a.Prompt, &a.Log, &a.Fingerprint, &a.AgentSession, &a.AgentResume, &a.Lane)
	if err != nil {
		return a, err
	}
	a.RetryAfterMS, a.RetryEligible, a.ExitCode = fromNull(retryAfter), fromNull(eligible), fromNull(exit)
	a.StartedAt, a.FinishedAt, a.DurationMS = fromMS(started), fromNullMS(finished), fromNull(duration)
	a.FilesChanged, a.TokensIn, a.TokensOut, a.CostUSD = fromNull(files), fromNull(tokIn), fromNull(tokOut), fromNull(cost)
	return a, nil
}

func (tx *Tx) attempts(where string, args ...any) ([]Attempt, error) {
	rows, err := tx.query(`SELECT `+attemptCols+` FROM attempts `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Attempt
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// NextAttemptNumber is one more than the highest attempt number the task ever had, so
// numbers are never reused, not even after timetravel superseded the later attempts.
func (tx *Tx) NextAttemptNumber(run, task string) (int, error) {
	var n int
	err := tx.queryRow(`SELECT coalesce(max(n), 0) + 1 FROM attempts WHERE run_id = ? AND task_id = ?`,
		run, task).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("next attempt of %s/%s: %w", run, task, err)
	}
	return n, nil
}

// InsertAttempt records a new attempt. N 0 means the next number (a.N is set); State
// defaults to running and StartedAt to now.
func (tx *Tx) InsertAttempt(a *Attempt) error {
	if a.N == 0 {
		n, err := tx.NextAttemptNumber(a.RunID, a.TaskID)
		if err != nil {
			return err
		}
		a.N = n
	}
	if a.State == "" {
		a.State = AttemptRunning
	}
	if a.StartedAt.IsZero() {
		a.StartedAt = tx.now()
	}
	if err := checkAttempt(a); err != nil {
		return fmt.Errorf("insert attempt %s/%s@%d: %w", a.RunID, a.TaskID, a.N, err)
	}
	_, err := tx.exec(`INSERT INTO attempts (`+attemptCols+`) VALUES
		(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.RunID, a.TaskID, a.N, a.Agent, a.State, a.Class, a.Code, a.Message, a.Hint,
		orNil(a.RetryAfterMS), orNil(a.RetryEligible), a.Counted, orNil(a.ExitCode),
		ms(a.StartedAt), msOrNil(a.FinishedAt), orNil(a.DurationMS), a.PreRef, a.PreTree, a.Ref,
		a.Tree, orNil(a.FilesChanged), a.SchemaRetries, orNil(a.TokensIn), orNil(a.TokensOut),
		orNil(a.CostUSD), a.Prompt, a.Log, a.Fingerprint, a.AgentSession, a.AgentResume, a.Lane)
	if err != nil {
		return fmt.Errorf("insert attempt %s/%s@%d: %w", a.RunID, a.TaskID, a.N, err)
	}
	return nil
}

func checkAttempt(a *Attempt) error {
	if a.N < 1 {
		return errors.New("attempt numbers start at 1")
	}
	return checkState("attempt", a.State, attemptStates)
}

// UpdateAttempt writes every field of a, found by (RunID, TaskID, N). A nil DurationMS is
// computed from StartedAt and FinishedAt when the attempt has finished.
func (tx *Tx) UpdateAttempt(a *Attempt) error {
	if err := checkAttempt(a); err != nil {
		return fmt.Errorf("update attempt %s/%s@%d: %w", a.RunID, a.TaskID, a.N, err)
	}
	if a.DurationMS == nil && a.FinishedAt != nil && !a.StartedAt.IsZero() {
		d := a.FinishedAt.Sub(a.StartedAt).Milliseconds()
		a.DurationMS = &d
	}
	res, err := tx.exec(`UPDATE attempts SET agent = ?, state = ?, class = ?, code = ?,
			message = ?, hint = ?, retry_after_ms = ?, retry_eligible = ?, counted = ?,
			exit_code = ?, started_at = ?, finished_at = ?, duration_ms = ?, pre_ref = ?,
			pre_tree = ?, ref = ?, tree = ?, files_changed = ?, schema_retries = ?,
			tokens_in = ?, tokens_out = ?, cost_usd = ?, prompt = ?, log = ?, fingerprint = ?,
			agent_session = ?, agent_resume = ?, lane = ?
		WHERE run_id = ? AND task_id = ? AND n = ?`,
		a.Agent, a.State, a.Class, a.Code, a.Message, a.Hint, orNil(a.RetryAfterMS),
		orNil(a.RetryEligible), a.Counted, orNil(a.ExitCode), ms(a.StartedAt),
		msOrNil(a.FinishedAt), orNil(a.DurationMS), a.PreRef, a.PreTree, a.Ref, a.Tree,
		orNil(a.FilesChanged), a.SchemaRetries, orNil(a.TokensIn), orNil(a.TokensOut),
		orNil(a.CostUSD), a.Prompt, a.Log, a.Fingerprint, a.AgentSession, a.AgentResume, a.Lane, a.RunID, a.TaskID, a.N)
	return checkOne(res, err, "update attempt", fmt.Sprintf("attempt %s/%s@%d", a.RunID, a.TaskID, a.N))
}

// Attempt returns attempt n of the task.
func (tx *Tx) Attempt(run, task string, n int) (*Attempt, error) {
	as, err := tx.attempts(`WHERE run_id = ? AND task_id = ? AND n = ?`, run, task, n)
	if err != nil {
		return nil, fmt.Errorf("read attempt %s/%s@%d: %w", run, task, n, err)
	}
	if len(as) == 0 {
		return nil, fmt.Errorf("attempt %s/%s@%d: %w", run, task, n, ErrNotFound)
	}
	return &as[0], nil
}

// LatestAttempt returns the task's highest-numbered attempt, whatever its state.
func (tx *Tx) LatestAttempt(run, task string) (*Attempt, error) {
	as, err := tx.attempts(`WHERE run_id = ? AND task_id = ? ORDER BY n DESC LIMIT 1`, run, task)
	if err != nil {
		return nil, fmt.Errorf("read latest attempt of %s/%s: %w", run, task, err)
	}
	if len(as) == 0 {
		return nil, fmt.Errorf("task %s/%s has no attempts: %w", run, task, ErrNotFound)
	}
	return &as[0], nil
}

// TreeRecorded reports whether run recorded tree as its base, a task's base or an attempt's pre
// or post tree: a tree its refs keep.
func (tx *Tx) TreeRecorded(run, tree string) (bool, error) {
	var n int
	err := tx.queryRow(`SELECT EXISTS (SELECT 1 FROM runs WHERE id = ? AND base_tree = ?)
		OR EXISTS (SELECT 1 FROM tasks WHERE run_id = ? AND base_tree = ?)
		OR EXISTS (SELECT 1 FROM attempts WHERE run_id = ? AND (tree = ? OR pre_tree = ?))`,
		run, tree, run, tree, run, tree, tree).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("read trees of run %s: %w", run, err)
	}
	return n == 1, nil
}

const unfinishedTask = `state NOT IN ('succeeded', 'failed', 'skipped', 'cancelled')`

// ParkTasks marks the run's started, unfinished tasks parked from now, when the run stops without
// finishing (paused, held, parked): the time until they run again does not count against their
// deadline. A task already parked keeps the time its parking began.
func (tx *Tx) ParkTasks(run string) error {
	_, err := tx.exec(`UPDATE tasks SET parked_at = ? WHERE run_id = ? AND parked_at IS NULL
		AND started_at IS NOT NULL AND `+unfinishedTask, ms(tx.now()), run)
	if err != nil {
		return fmt.Errorf("park tasks of run %s: %w", run, err)
	}
	return nil
}

// ParkTask marks one task parked from now (held while the run goes on), unless it already is.
func (tx *Tx) ParkTask(run, task string) error {
	_, err := tx.exec(`UPDATE tasks SET parked_at = ? WHERE run_id = ? AND id = ? AND parked_at IS NULL`,
		ms(tx.now()), run, task)
	if err != nil {
		return fmt.Errorf("park task %s/%s: %w", run, task, err)
	}
	return nil
}

// Unpark ends t's parking (it runs again): the parked time is added to t.ParkedMS.
func (t *Task) Unpark(now time.Time) {
	if t.ParkedAt == nil {
		return
	}
	if d := now.Sub(*t.ParkedAt).Milliseconds(); d > 0 {
		t.ParkedMS += d
	}
	t.ParkedAt = nil
}
