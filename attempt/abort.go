package attempt

import (
	"context"
	"errors"
	"fmt"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// A run never ends `running` (SPEC §2.1): an error that stops the runner after the run was
// recorded — a snapshot that cannot read a file, a full disk, a missing prompt_file, a ref git
// refuses — ends the attempt in flight, its task and the run `failed`, with the message, and
// releases the worktree. Only a runner that lost the run (fenced) or could not write to the
// history at all leaves it as it is: then `resume`/`supervise` find it.

// classedError carries the failure class an error that stops a run is recorded with (internal
// when an error carries none).
type classedError struct {
	class taskfile.Class
	code  string
	err   error
}

func (e *classedError) Error() string { return e.err.Error() }
func (e *classedError) Unwrap() error { return e.err }

// withClass marks err to be recorded with class and code if it stops the run.
func withClass(class taskfile.Class, code string, err error) error {
	return &classedError{class: class, code: code, err: err}
}

// RecordedError is the error that stopped a run after the run recorded it: the attempt in
// flight (if any), its task and the run are recorded `failed` with its message.
type RecordedError struct {
	Run   string
	Task  string // "" when no task had started
	N     int    // 0 when no attempt was in flight
	Class taskfile.Class
	Err   error
}

func (e *RecordedError) Error() string {
	return e.Err.Error()
}

func (e *RecordedError) Unwrap() error { return e.Err }

// Hint says what was recorded and how to go on once the cause is fixed.
func (e *RecordedError) Hint() string {
	where := "run " + e.Run
	if e.N > 0 {
		where = fmt.Sprintf("%s/%s@%d", e.Run, e.Task, e.N)
	} else if e.Task != "" {
		where = e.Run + "/" + e.Task
	}
	h := fmt.Sprintf("recorded %s failed (%s); the working tree is as the error left it", where, e.Class)
	if e.Task != "" {
		h += fmt.Sprintf("; once fixed: mulligan retry-task %s %s", e.Run, e.Task)
	}
	return h
}

// abort records the run failed after cause stopped the runner. It returns the error to report:
// a *RecordedError, or cause itself when nothing could be recorded.
func (r *runner) abort(ctx context.Context, cause error) error {
	if cause == nil || r.isFenced() || errors.Is(cause, store.ErrFenced) {
		return cause
	}
	class, code := taskfile.ClassInternal, agentcli.CodeInternal
	var ce *classedError
	if errors.As(cause, &ce) {
		class, code = ce.class, ce.code
	}
	msg := cause.Error()
	now := r.env.Now().UTC()
	rec := &RecordedError{Run: r.run.ID, Class: class, Err: cause}
	var ended bool
	err := r.update(ctx, func(tx *store.Tx) error {
		run, err := tx.GetRun(r.run.ID)
		if err != nil {
			return err
		}
		if store.RunFinished(run.State) {
			ended = true
			return nil
		}
		for ti := range run.Tasks {
			t := &run.Tasks[ti]
			for ai := range t.Attempts {
				a := &t.Attempts[ai]
				if a.State != store.AttemptRunning {
					continue
				}
				a.State, a.FinishedAt = store.AttemptFailed, &now
				applyFailure(a, &agentcli.Failure{Class: class, Code: code, Message: msg})
				if err := tx.UpdateAttempt(a); err != nil {
					return err
				}
				if err := r.event(tx, t.ID, a.N, store.EventAttemptFailed, store.AttemptFailedPayload{
					Class: string(class), Code: code, Message: msg, ConsecutiveFailures: t.ConsecutiveFailures,
					Counted: a.Counted, ExitCode: a.ExitCode, Ref: store.OptString(a.Ref),
				}); err != nil {
					return err
				}
				rec.Task, rec.N = t.ID, a.N
			}
			if t.ID != r.current && t.State != store.TaskRunning && t.State != store.TaskBackoff {
				continue
			}
			if store.TaskFinished(t.State) {
				continue
			}
			row, err := tx.TransitionTask(run.ID, t.ID, store.TaskTransition{To: store.TaskFailed, Reason: string(class), At: now,
				Row: t, Event: store.TaskStateChanged{Class: string(class), Code: code, Message: msg}})
			if err != nil {
				return err
			}
			row.Attempts = t.Attempts
			*t = *row
			if rec.Task == "" {
				rec.Task = t.ID
			}
		}
		if err := tx.SetControl(r.run.ID, store.ControlNone); err != nil {
			return err
		}
		if _, err := tx.TransitionRun(r.run.ID, store.RunTransition{To: store.RunFailed, Reason: string(class),
			Event: store.RunStateChanged{Message: msg}}); err != nil {
			return err
		}
		return tx.ReleaseWorktreeLock(r.run.Worktree, r.run.ID)
	})
	if err != nil || ended {
		return cause
	}
	r.run.State = store.RunFailed
	r.env.Progress.Event(ProgressEvent{Kind: KindRunState, State: store.RunFailed, Reason: string(class)})
	return rec
}
