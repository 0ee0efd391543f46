package attempt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"syscall"
	"time"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// The operator's state changes (retry-task, prompt, stop, revert's audit): each is one write
// transaction that checks, inside it, that no live process runs the run or holds its worktree.

// Reasons and events of the operator's decisions.
const (
	ReasonOperatorStop   = "operator-stop"
	ReasonOperatorPrompt = "operator-prompt"
	ReasonRetryTask      = "retry-task"
	ReasonTimetravel     = "timetravel"

	// EventOperatorPrompt carries the text of `mulligan prompt` to the task's next attempt.
	EventOperatorPrompt = store.EventOperatorPrompt
	// EventTaskReset marks a retry-task reset of a task (retry budget back to zero).
	EventTaskReset = store.EventTaskReset
)

// ErrNotBlocked is returned by prompt and stop for a task that waits for no decision.
var ErrNotBlocked = errors.New("the task is not blocked")

// Who names the operator in audit events: user, host and pid.
func Who() *store.Operator {
	self := store.Self()
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	return &store.Operator{User: name, Host: self.Host, PID: self.PID}
}

// CheckIdle fails with ErrActive when run's owner process is alive (and is not this process) or
// a live, unfinished run holds the worktree of run. force skips the check.
func CheckIdle(tx *store.Tx, run *store.Run, force bool) error {
	if force {
		return nil
	}
	self := store.Self()
	if !store.RunFinished(run.State) && run.Owner != nil && *run.Owner != self && store.ProcessAlive(*run.Owner) {
		return fmt.Errorf("%w: run %s is running (pid %d on %s)", ErrActive, run.ID, run.Owner.PID, run.Owner.Host)
	}
	return CheckWorktreeIdle(tx, run.Worktree)
}

// CheckWorktreeIdle fails with ErrActive when a live, unfinished run of another process holds
// worktree: its working tree is that run's until it stops.
func CheckWorktreeIdle(tx *store.Tx, worktree string) error {
	lock, err := tx.WorktreeLock(worktree)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if lock.Owner == store.Self() {
		return nil
	}
	holder, err := tx.RunHeader(lock.RunID)
	if err != nil {
		return err
	}
	if !store.RunFinished(holder.State) && store.ProcessAlive(lock.Owner) {
		return fmt.Errorf("%w: run %s is running in %s (pid %d on %s)", ErrActive, lock.RunID, worktree, lock.Owner.PID, lock.Owner.Host)
	}
	return nil
}

// CheckIdleRun is CheckIdle in a read transaction of its own.
func CheckIdleRun(ctx context.Context, db *store.DB, runID string, force bool) error {
	return db.View(ctx, func(tx *store.Tx) error {
		run, err := tx.RunHeader(runID)
		if err != nil {
			return err
		}
		return CheckIdle(tx, run, force)
	})
}

// RecordEvent appends one run event (revert's audit record).
func RecordEvent(ctx context.Context, db *store.DB, runID, task string, n int, typ string, payload any) error {
	return db.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.AppendEvent(runID, task, n, typ, payload)
		return err
	})
}

// Dependents returns task and every task that needs it, transitively, by the needs edges of the
// run's task file, in the run's order. Tasks of the file the run does not hold are left out.
func Dependents(file *taskfile.File, run *store.Run, task string) []string {
	in := map[string]bool{task: true}
	for changed := true; changed; {
		changed = false
		for _, t := range file.Tasks {
			if in[t.ID] {
				continue
			}
			for _, n := range t.Needs {
				if in[n] {
					in[t.ID], changed = true, true
					break
				}
			}
		}
	}
	var out []string
	for _, t := range run.Tasks {
		if in[t.ID] {
			out = append(out, t.ID)
		}
	}
	return out
}

// ResetOptions are the inputs of retry-task's reset.
type ResetOptions struct {
	RunID  string
	Task   string
	NoDeps bool // reset only the task, not its dependents
	Force  bool // even while the run's process is alive: it is fenced
	Load   func(run *store.Run) (*taskfile.File, error)
	// UndoRef is the undo point taken before the reset (recorded in the event).
	UndoRef string
	// Reload, when set, is the edited task file (`retry-task --reload`): it replaces the stored
	// definition in the reset's transaction (reload.go), before the reset.
	Reload *taskfile.File
	// Graft, with Reload, rewrites a started task's base tree to hold the reloaded task file
	// (nil: the file lies outside the worktree, or the caller keeps bases as they are).
	Graft func(tree string) (string, error)
	// KeepBase: Task keeps its recorded base (restarted now), for `retry-task --from-base` of a
	// task that runs in a worktree: its worktree is set to that base, the working tree is not
	// touched (isolate.go).
	KeepBase bool
}

// ResetTasks is retry-task's state change, in one transaction: the task and (unless NoDeps) its
// dependents become pending with a fresh retry budget (retries_used 0, consecutive failures 0:
// a breaker that stays tripped would end the fresh budget after one attempt) and a fresh task base (taken from the tree when each starts); the agents of the task
// disabled for the run are enabled again; the run becomes paused until Continue claims it.
// Earlier attempts are kept; new ones continue the numbering. It returns the tasks reset.
func ResetTasks(ctx context.Context, db *store.DB, opts ResetOptions) ([]string, error) {
	var reset []string
	err := db.Update(ctx, func(tx *store.Tx) error {
		reset = nil
		run, err := tx.GetRun(opts.RunID)
		if err != nil {
			return err
		}
		if err := CheckIdle(tx, run, opts.Force); err != nil {
			return err
		}
		file, err := opts.Load(run)
		if err != nil {
			return err
		}
		if opts.Reload != nil {
			if _, err := applyReload(tx, run.ID, file, opts.Reload, "retry-task --reload", opts.Graft); err != nil {
				return err
			}
			if run, err = tx.GetRun(run.ID); err != nil {
				return err
			}
			file = opts.Reload
		}
		if !slices.ContainsFunc(run.Tasks, func(t store.Task) bool { return t.ID == opts.Task }) {
			return unknownRunTask(run, opts.Task)
		}
		if opts.NoDeps {
			reset = []string{opts.Task}
		} else {
			reset = Dependents(file, run, opts.Task)
		}
		if opts.Force {
			if _, err := tx.FenceRun(run.ID); err != nil {
				return err
			}
		}
		for _, id := range reset {
			t, err := tx.GetTask(run.ID, id)
			if err != nil {
				return err
			}
			if _, err := tx.AppendEvent(run.ID, id, 0, EventTaskReset, store.TaskReset{
				From: store.TaskState(t.State), Reason: ReasonRetryTask, ConsecutiveFailures: t.ConsecutiveFailures,
			}); err != nil {
				return err
			}
			// A fresh budget and base: the breaker's count starts again with the budget.
			base := t.BaseTree
			t.RetriesUsed, t.ConsecutiveFailures, t.StartedAt, t.BaseTree = 0, 0, nil, ""
			if opts.KeepBase && id == opts.Task && base != "" {
				now := time.Now().UTC()
				t.StartedAt, t.BaseTree = &now, base
			}
			if _, err := tx.TransitionTask(run.ID, id, store.TaskTransition{To: store.TaskPending, Cause: ReasonRetryTask, Row: t}); err != nil {
				return err
			}
			if def := file.Task(id); def != nil {
				for _, a := range def.Agents {
					if err := tx.EnableAgent(run.ID, a); err != nil {
						return err
					}
				}
			}
		}
		return pauseRun(tx, run, ReasonRetryTask, store.RunStateChanged{
			ForTask: opts.Task, Reset: reset, UndoRef: store.OptString(opts.UndoRef), Who: Who(),
		})
	})
	return reset, err
}

// pauseRun sets the run paused (finished_at cleared) and records it, with the worktree lock of a
// fenced or dead owner released.
func pauseRun(tx *store.Tx, run *store.Run, reason string, ev store.RunStateChanged) error {
	hdr, err := tx.RunHeader(run.ID)
	if err != nil {
		return err
	}
	hdr.ResumesWithoutProgress = 0
	if _, err := tx.TransitionRun(run.ID, store.RunTransition{To: store.RunPaused, Reason: reason, Row: hdr, Event: ev}); err != nil {
		return err
	}
	if err := tx.ParkTasks(run.ID); err != nil {
		return err
	}
	return tx.ReleaseWorktreeLock(run.Worktree, run.ID)
}

func unknownRunTask(run *store.Run, task string) error {
	known := make([]string, len(run.Tasks))
	for i, t := range run.Tasks {
		known[i] = t.ID
	}
	return &UnknownTaskError{Task: task, Known: known}
}

// heldTask reads the run and its task and checks the task is held in state (blocked, or
// waiting_approval) so the operator's decision can be taken on it; notHeld is the error otherwise.
func heldTask(tx *store.Tx, runID, task, state string, notHeld error) (*store.Run, *store.Task, error) {
	run, err := tx.GetRun(runID)
	if err != nil {
		return nil, nil, err
	}
	if err := CheckIdle(tx, run, false); err != nil {
		return nil, nil, err
	}
	for i := range run.Tasks {
		if t := &run.Tasks[i]; t.ID == task {
			if t.State != state {
				return nil, nil, fmt.Errorf("task %s of run %s is %s: %w", task, run.ID, t.State, notHeld)
			}
			return run, t, nil
		}
	}
	return nil, nil, unknownRunTask(run, task)
}

// PromptTask is `mulligan prompt`'s decision: the blocked task becomes pending and its next
// attempt's prompt carries text. The attempt counts toward the circuit breaker like any other.
func PromptTask(ctx context.Context, db *store.DB, runID, task, text string) error {
	return db.Update(ctx, func(tx *store.Tx) error {
		run, t, err := heldTask(tx, runID, task, store.TaskBlocked, ErrNotBlocked)
		if err != nil {
			return err
		}
		if _, err := tx.AppendEvent(run.ID, t.ID, 0, store.EventOperatorPrompt, store.OperatorPrompt{Text: text, Who: Who()}); err != nil {
			return err
		}
		if _, err := tx.TransitionTask(run.ID, t.ID, store.TaskTransition{To: store.TaskPending, Cause: ReasonOperatorPrompt,
			Event: store.TaskStateChanged{BlockedReason: t.Reason}}); err != nil {
			return err
		}
		return pauseRun(tx, run, ReasonOperatorPrompt, store.RunStateChanged{ForTask: t.ID, Who: Who()})
	})
}

// StopTask is `mulligan stop`'s decision: the blocked task ends failed (reason operator-stop),
// so its dependents are skipped and the rest of the run can go on. It returns the task's base
// tree, where the caller puts the working tree back (a failed task leaves no edits behind).
func StopTask(ctx context.Context, db *store.DB, runID, task string) (base string, err error) {
	err = db.Update(ctx, func(tx *store.Tx) error {
		run, t, err := heldTask(tx, runID, task, store.TaskBlocked, ErrNotBlocked)
		if err != nil {
			return err
		}
		base = t.BaseTree
		if workLandedSince(run, t) {
			// Independent tasks went on from its base after it was held: the tree holds their
			// work and none of its edits, so there is nothing to put back.
			base = ""
		}
		if _, err := tx.TransitionTask(run.ID, t.ID, store.TaskTransition{To: store.TaskFailed, Reason: ReasonOperatorStop,
			Event: store.TaskStateChanged{Who: Who()}}); err != nil {
			return err
		}
		return pauseRun(tx, run, ReasonOperatorStop, store.RunStateChanged{ForTask: t.ID, Who: Who()})
	})
	return base, err
}

// operatorText returns the text of the newest `mulligan prompt` for task given after its latest
// attempt started: the operator's words go to the next attempt only.
func operatorText(tx *store.Tx, run, task string) (string, error) {
	evs, err := tx.Events(run, 0, 0)
	if err != nil {
		return "", err
	}
	text := ""
	for _, ev := range evs {
		if ev.Task != task {
			continue
		}
		switch ev.Type {
		case store.EventAttemptStarted:
			text = ""
		case store.EventOperatorPrompt:
			var p store.OperatorPrompt
			if ev.Decode(&p) == nil {
				text = p.Text
			}
		}
	}
	return text, nil
}

// WorkLeft reports whether continuing run would start an attempt: false when every unfinished
// task would only be skipped (a dependency failed) or is held (or waits for one that is), so the
// run would end at once. file (nil: none allows failure) says which tasks have allow_fail.
func WorkLeft(run *store.Run, file *taskfile.File) bool {
	sim := *run
	sim.Tasks = slices.Clone(run.Tasks)
	r := &runner{file: file}
	for {
		t, skip, _ := nextTask(&sim, r.allowFail, nil, time.Now())
		switch {
		case t == nil:
			return false
		case !skip:
			return true
		}
		t.State = store.TaskSkipped
	}
}

// ContinueOptions are the inputs of Continue.
type ContinueOptions struct {
	RunID string
	Load  func(run *store.Run) (*taskfile.File, error)
	// Force claims the run even when its owner process is alive (the owner is fenced).
	Force bool
}

// Continue runs the rest of a run in this process after an operator's decision (retry-task,
// prompt, stop, timetravel --resume): like Resume, it claims the run by compare-and-swap on the
// owner epoch and recovers interrupted attempts, but it also continues a run that had ended.
func Continue(ctx context.Context, env Env, opts ContinueOptions) (*Outcome, error) {
	env.defaults()
	var run *store.Run
	if err := env.DB.View(ctx, func(tx *store.Tx) error {
		var err error
		if run, err = tx.GetRun(opts.RunID); err != nil {
			return err
		}
		return CheckIdle(tx, run, opts.Force)
	}); err != nil {
		return nil, err
	}
	file, err := opts.Load(run)
	if err != nil {
		return nil, err
	}
	self := store.Self()
	if opts.Force && run.Owner != nil && *run.Owner != self && store.ProcessAlive(*run.Owner) {
		// Forced over a live owner: fence it (it stops at its next write or heartbeat, ending
		// its agent), and let it go before taking over the tree, so two processes never write
		// the same attempt's refs.
		if err := env.DB.Update(ctx, func(tx *store.Tx) error {
			_, err := tx.FenceRun(run.ID)
			return err
		}); err != nil {
			return nil, err
		}
		waitGone(ctx, env, *run.Owner)
		if err := env.DB.View(ctx, func(tx *store.Tx) error {
			var err error
			run, err = tx.GetRun(opts.RunID)
			return err
		}); err != nil {
			return nil, err
		}
	}
	alive := store.ProcessAlive
	if opts.Force {
		alive = func(store.Owner) bool { return false }
	}
	r, err := claimRun(ctx, env, run, file, claim{reason: "continued", alive: alive})
	if err != nil {
		return nil, err
	}
	return r.execute(ctx)
}

// waitGone waits for a fenced owner process to exit: its heartbeat notices the fence within
// HeartbeatEvery and it ends its agent within Grace. Past that it is killed (only a process
// of this host: another host's pid means nothing here).
func waitGone(ctx context.Context, env Env, o store.Owner) {
	if o.Host != store.Self().Host {
		return // another machine's process: the fence alone stops it
	}
	limit := env.Now().Add(env.HeartbeatEvery + env.Grace + 5*time.Second)
	for store.ProcessAlive(o) && env.Now().Before(limit) {
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return
		}
	}
	if store.ProcessAlive(o) {
		syscall.Kill(o.PID, syscall.SIGKILL)
		for i := 0; i < 100 && store.ProcessAlive(o); i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
}
