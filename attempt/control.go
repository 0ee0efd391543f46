package attempt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/reap"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// Operator control from another shell (SPEC §6 pause, cancel, kill).
//
// pause and cancel write a request into runs.control; the run's process polls it every
// Env.ControlEvery and acts:
//   - pause-drain: the attempt in flight finishes and is recorded as usual; at the next
//     checkpoint (before the next attempt) the run parks `paused` (reason operator-pause) and
//     the process exits 4 (parked); a task that was to be retried becomes `paused` (not
//     `backoff`: nothing waits out its delay), a pending one stays pending. A run waiting out a
//     backoff has no attempt in flight: it parks at once, its task `paused`. Either way resume
//     starts the next attempt without the rest of the wait.
//   - pause-cancel: the attempt in flight is ended now (SIGTERM to its group, grace, SIGKILL),
//     recorded `cancelled` with class cancellation, code paused, not counted; the task and the
//     run become `paused`; the process exits 4 (parked). `resume` continues with the next attempt.
//   - cancel: the attempt in flight is ended the same way, class cancellation; the task and the
//     run end `cancelled` (reason operator-cancel); the process exits 5.
//
// kill does not ask: it fences the run (bumps the owner epoch, so the old process can never
// commit again), SIGKILLs the runner and the agent's process group, and records the run
// cancelled itself, with the attempt in flight cancelled (code killed) and its post snapshot.

// Reasons and codes of operator control.
const (
	ReasonOperatorPause  = "operator-pause"
	ReasonOperatorCancel = "operator-cancel"
	ReasonOperatorKill   = "operator-kill"
	CodePaused           = "paused"
	CodeKilled           = "killed"
	// ReasonInterrupted, CodeInterrupted: a signal to mulligan (Ctrl-C) stopped the run; it is
	// paused, resumable, like after pause --mode cancel.
	ReasonInterrupted = "interrupted"
	CodeInterrupted   = "interrupted"
)

// controlCause is the cause of a run context ended by an operator's request.
type controlCause struct{ request string }

func (c controlCause) Error() string { return "operator request: " + c.request }

func (r *runner) readControl(ctx context.Context) (string, error) {
	var c string
	err := r.env.DB.View(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		var err error
		c, err = tx.Control(r.run.ID)
		return err
	})
	return c, err
}

// watchControl ends ctx (with a controlCause) when an operator asks for the attempt in flight to
// be ended: cancel, or pause --mode cancel. A drain needs nothing here: checkpoint sees it.
func (r *runner) watchControl(ctx context.Context, cancel context.CancelCauseFunc) {
	t := time.NewTicker(r.env.ControlEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c, err := r.readControl(ctx)
			if err == nil && (c == store.ControlCancel || c == store.ControlPauseCancel ||
				c == store.ControlPauseDrain && r.inBackoff(ctx)) {
				cancel(controlCause{request: c})
				return
			}
		}
	}
}

// inBackoff reports whether the task the runner works on waits out a backoff (no attempt in
// flight).
func (r *runner) inBackoff(ctx context.Context) bool {
	r.mu.Lock()
	task := r.current
	r.mu.Unlock()
	if task == "" {
		return false
	}
	var t *store.Task
	err := r.env.DB.View(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		var err error
		t, err = tx.GetTask(r.run.ID, task)
		return err
	})
	return err == nil && t.State == store.TaskBackoff
}

// checkpoint is where the runner, between attempts, obeys what an operator asked from another
// shell (pause, cancel). A non-nil Outcome stops the run there.
func (r *runner) checkpoint(ctx context.Context, t *store.Task) (*Outcome, error) {
	r.mu.Lock()
	r.current = t.ID
	r.mu.Unlock()
	c, err := r.readControl(ctx)
	if err != nil {
		return nil, err
	}
	switch c {
	case store.ControlPauseDrain, store.ControlPauseCancel:
		if t.State == store.TaskBackoff {
			// Nothing waits out the delay while the run is paused: the task says paused, as
			// when the pause comes during the wait (interruptedBy).
			if err := r.setTaskState(ctx, t, store.TaskPaused, ReasonOperatorPause, nil); err != nil {
				return nil, err
			}
		}
		return r.end(ctx, store.RunPaused, ReasonOperatorPause)
	case store.ControlCancel:
		if err := r.setTaskState(ctx, t, store.TaskCancelled, ReasonOperatorCancel, nil); err != nil {
			return nil, err
		}
		return r.end(ctx, store.RunCancelled, ReasonOperatorCancel)
	}
	return nil, nil
}

// pauseCancelled parks the run paused after pause --mode cancel or a signal to mulligan ended
// the attempts in flight (or a backoff wait): each such attempt (recorded cancelled by
// runAttempt) does not count and gets code and message, and its task becomes paused with
// reason. Every task cancelled in the run is one of these: a cancel ends a run for good.
func (r *runner) pauseCancelled(ctx context.Context, reason, code, message string) (*Outcome, error) {
	if err := r.update(ctx, func(tx *store.Tx) error {
		run, err := tx.GetRun(r.run.ID)
		if err != nil {
			return err
		}
		for i := range run.Tasks {
			t := &run.Tasks[i]
			if t.State != store.TaskCancelled {
				continue
			}
			for j := range t.Attempts {
				// The attempts this stop cancelled: one per racing lane. (An attempt stopped
				// before has its code already; a cancel or kill ends a run for good.)
				a := &t.Attempts[j]
				if a.State == store.AttemptCancelled && a.Class == string(taskfile.ClassCancellation) && a.Code == agentcli.CodeCancelled {
					a.Counted, a.Code, a.Message = false, code, message
					if err := tx.UpdateAttempt(a); err != nil {
						return err
					}
				}
			}
			if _, err := tx.TransitionTask(r.run.ID, t.ID, store.TaskTransition{To: store.TaskPaused, Reason: reason, Row: t}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return r.end(context.WithoutCancel(ctx), store.RunPaused, reason)
}

// interruptedBy ends the run paused (reason interrupted) when err stopped the runner because a
// signal to mulligan cancelled ctx outside an agent's run (a snapshot, a reset, a verify's start):
// the attempt it left running is cancelled and not counted, its task paused. (nil, nil): err is
// not a signal's doing.
func (r *runner) interruptedBy(ctx context.Context, err error) (*Outcome, error) {
	sc, ok := context.Cause(ctx).(signalCause)
	if !ok || ctx.Err() == nil || r.isFenced() || errors.Is(err, store.ErrFenced) {
		return nil, nil
	}
	r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: r.current, Message: "stopped: " + err.Error()})
	now := r.env.Now().UTC()
	msg := fmt.Sprintf("the attempt was interrupted (%s to mulligan); it does not count: `mulligan resume %s` resets its edits and goes on", sigName(sc.sig), r.run.ID)
	if uerr := r.update(ctx, func(tx *store.Tx) error {
		run, err := tx.GetRun(r.run.ID)
		if err != nil {
			return err
		}
		for i := range run.Tasks {
			t := &run.Tasks[i]
			for j := range t.Attempts {
				if a := &t.Attempts[j]; a.State == store.AttemptRunning {
					a.State, a.FinishedAt = store.AttemptCancelled, &now
					applyFailure(a, &agentcli.Failure{Class: taskfile.ClassCancellation, Code: CodeInterrupted, Message: msg})
					a.Counted = false
					if err := tx.UpdateAttempt(a); err != nil {
						return err
					}
				}
			}
			if t.State == store.TaskRunning || t.State == store.TaskBackoff {
				if _, err := tx.TransitionTask(run.ID, t.ID, store.TaskTransition{To: store.TaskPaused, Reason: ReasonInterrupted, Row: t}); err != nil {
					return err
				}
			}
		}
		return nil
	}); uerr != nil {
		return nil, uerr
	}
	r.mu.Lock()
	r.sigSeen = sc.sig
	r.mu.Unlock()
	r.noStopTree = true
	return r.end(context.WithoutCancel(ctx), store.RunPaused, ReasonInterrupted)
}

// sigName is a signal as a user knows it: SIGINT is Ctrl-C.
func sigName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "Ctrl-C, SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return sig.String()
}

// ControlResult says what a pause or cancel request did.
type ControlResult struct {
	RunID string `json:"run"`
	// Action: "requested" (the run's process will act), "paused" or "cancelled" (nobody ran
	// it: done here), "none" (already paused).
	Action  string `json:"action"`
	Request string `json:"request"`
	PID     int    `json:"pid,omitempty"` // the process asked to act
	Host    string `json:"host,omitempty"`
}

// PauseMode turns pause's --mode into the control request.
func PauseMode(mode string) (string, error) {
	switch mode {
	case "", "drain":
		return store.ControlPauseDrain, nil
	case "cancel":
		return store.ControlPauseCancel, nil
	}
	return "", fmt.Errorf("unknown pause mode %q (drain or cancel)", mode)
}

// live reports whether the run has a process acting on it now.
func live(run *store.Run) bool {
	return run.State == store.RunRunning && run.Owner != nil && store.ProcessAlive(*run.Owner)
}

// RequestPause asks the run's process to pause (request: store.ControlPauseDrain or
// ControlPauseCancel). A run no process runs (dead, blocked, parked) is paused at once.
func RequestPause(ctx context.Context, db *store.DB, runID, request string) (*ControlResult, error) {
	res := &ControlResult{RunID: runID, Request: request}
	err := db.Update(ctx, func(tx *store.Tx) error {
		*res = ControlResult{RunID: runID, Request: request}
		run, err := tx.RunHeader(runID)
		if err != nil {
			return err
		}
		switch {
		case store.RunFinished(run.State):
			return fmt.Errorf("run %s %s: %w", run.ID, run.State, ErrRunFinished)
		case run.State == store.RunPaused:
			res.Action = "none"
			return nil
		case live(run):
			res.Action, res.PID, res.Host = "requested", run.Owner.PID, run.Owner.Host
			if err := tx.SetControl(runID, request); err != nil {
				return err
			}
			_, err := tx.AppendEvent(runID, "", 0, store.EventControlRequested, store.ControlRequested{Request: request, PID: run.Owner.PID})
			return err
		}
		res.Action = "paused"
		if err := tx.SetControl(runID, store.ControlNone); err != nil {
			return err
		}
		if _, err := tx.TransitionRun(runID, store.RunTransition{To: store.RunPaused, Reason: ReasonOperatorPause}); err != nil {
			return err
		}
		if err := pauseTasks(tx, runID); err != nil {
			return err
		}
		if err := tx.ParkTasks(runID); err != nil {
			return err
		}
		return tx.ReleaseWorktreeLock(run.Worktree, runID)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// pauseTasks marks paused the tasks of a run paused with no process running it that still say
// running or backoff: nothing runs them or waits out their delay now. (An attempt a dead process
// left running is recorded by the resume that takes the run up, whatever its task's state.)
func pauseTasks(tx *store.Tx, runID string) error {
	run, err := tx.GetRun(runID)
	if err != nil {
		return err
	}
	for i := range run.Tasks {
		t := &run.Tasks[i]
		if t.State != store.TaskRunning && t.State != store.TaskBackoff {
			continue
		}
		if _, err := tx.TransitionTask(runID, t.ID, store.TaskTransition{To: store.TaskPaused, Reason: ReasonOperatorPause, Row: t}); err != nil {
			return err
		}
	}
	return nil
}

// RequestCancel asks the run's process to cancel the run. A run no process runs is cancelled
// at once, as kill would (without signals: there is no process to signal).
func RequestCancel(ctx context.Context, env Env, runID string) (*ControlResult, error) {
	res := &ControlResult{RunID: runID, Request: store.ControlCancel}
	requested := false
	err := env.DB.Update(ctx, func(tx *store.Tx) error {
		requested = false
		run, err := tx.RunHeader(runID)
		if err != nil {
			return err
		}
		if store.RunFinished(run.State) {
			return fmt.Errorf("run %s %s: %w", run.ID, run.State, ErrRunFinished)
		}
		if !live(run) {
			return nil
		}
		requested = true
		res.Action, res.PID, res.Host = "requested", run.Owner.PID, run.Owner.Host
		if err := tx.SetControl(runID, store.ControlCancel); err != nil {
			return err
		}
		_, err = tx.AppendEvent(runID, "", 0, store.EventControlRequested, store.ControlRequested{Request: store.ControlCancel, PID: run.Owner.PID})
		return err
	})
	if err != nil {
		return nil, err
	}
	if requested {
		return res, nil
	}
	// Nobody runs it: record it cancelled as kill would (ending what a dead process's agent
	// left in its group, too).
	if _, err := Kill(ctx, env, KillOptions{RunID: runID, Code: agentcli.CodeCancelled, Reason: ReasonOperatorCancel,
		Message: "the run was cancelled by `mulligan cancel` after its process had died"}); err != nil {
		return nil, err
	}
	res.Action = "cancelled"
	return res, nil
}

// KillOptions are the inputs of Kill.
type KillOptions struct {
	RunID string
	// Code is the code of the attempt in flight (default killed); Reason the run's (default
	// operator-kill).
	Code, Reason string
	// Message is the message of the attempt in flight.
	Message string
	// Signal sends sig to pid (negative: a process group); nil: syscall.Kill. Tests replace it.
	Signal func(pid int, sig syscall.Signal) error
	// Wait bounds how long Kill waits for the killed processes to be gone (default 5s).
	Wait time.Duration
}

// KillResult says what Kill did.
type KillResult struct {
	RunID    string   `json:"run"`
	Epoch    int64    `json:"epoch"`
	PID      int      `json:"pid,omitempty"`  // the runner signalled (0: none was alive here)
	Groups   []int    `json:"pgids"`          // agent process groups signalled
	Attempts []string `json:"attempts"`       // TASK@N recorded cancelled
	Posts    []string `json:"-"`              // each cancelled attempt's post ref, as Attempts
	Note     string   `json:"note,omitempty"` // e.g. the owner is on another host
}

// Kill stops a run at once: it fences the run (the old owner's transactions fail with
// store.ErrFenced from then on), SIGKILLs the runner and the agent process groups it recorded,
// and records the run cancelled, with every attempt in flight cancelled (class cancellation,
// code killed) and its post snapshot of the tree as the killed agent left it. env.Repo must be
// the run's worktree.
func Kill(ctx context.Context, env Env, opts KillOptions) (*KillResult, error) {
	env.defaults()
	if opts.Code == "" {
		opts.Code = CodeKilled
	}
	if opts.Reason == "" {
		opts.Reason = ReasonOperatorKill
	}
	if opts.Signal == nil {
		opts.Signal = func(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
	}
	if opts.Message == "" {
		opts.Message = "the attempt was ended by `mulligan kill`"
	}
	if opts.Wait <= 0 {
		opts.Wait = 5 * time.Second
	}
	res := &KillResult{RunID: opts.RunID, Groups: []int{}, Attempts: []string{}}
	var run *store.Run
	var groups map[string][]int
	err := env.DB.Update(ctx, func(tx *store.Tx) error {
		var err error
		if run, err = tx.GetRun(opts.RunID); err != nil {
			return err
		}
		if store.RunFinished(run.State) {
			return fmt.Errorf("run %s %s: %w", run.ID, run.State, ErrRunFinished)
		}
		if res.Epoch, err = tx.FenceRun(run.ID); err != nil {
			return err
		}
		groups, err = attemptGroups(tx, run)
		return err
	})
	if err != nil {
		return nil, err
	}
	run.Epoch = res.Epoch

	killProcesses(run, groups, opts, res)

	w := &runWriter{env: env, run: run, epoch: run.Epoch} // the fenced epoch is Kill's now
	for i := range run.Tasks {
		t := &run.Tasks[i]
		for j := range t.Attempts {
			a := &t.Attempts[j]
			if a.State != store.AttemptRunning {
				continue
			}
			f := &agentcli.Failure{Class: taskfile.ClassCancellation, Code: opts.Code, Message: opts.Message}
			if err := w.recordInterrupted(ctx, t, a, store.AttemptCancelled, f); err != nil {
				return nil, err
			}
			res.Attempts = append(res.Attempts, fmt.Sprintf("%s@%d", t.ID, a.N))
			res.Posts = append(res.Posts, snapshot.AttemptRef(opts.RunID, t.ID, a.N, snapshot.Post))
		}
	}
	err = w.update(ctx, func(tx *store.Tx) error {
		for i := range run.Tasks {
			t := &run.Tasks[i]
			if store.TaskFinished(t.State) || t.State == store.TaskPending {
				continue
			}
			if _, err := tx.TransitionTask(run.ID, t.ID, store.TaskTransition{To: store.TaskCancelled, Reason: opts.Reason}); err != nil {
				return err
			}
		}
		if err := tx.SetControl(run.ID, store.ControlNone); err != nil {
			return err
		}
		if _, err := tx.TransitionRun(run.ID, store.RunTransition{To: store.RunCancelled, Reason: opts.Reason,
			Event: store.RunStateChanged{PID: res.PID, PGIDs: res.Groups}}); err != nil {
			return err
		}
		return tx.ReleaseWorktreeLock(run.Worktree, run.ID)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// killProcesses SIGKILLs the run's process (on this host) and the process groups of its
// attempts in flight, and waits (at most opts.Wait) for them to be gone: the post snapshot must
// see the tree the killed processes left, not one they still edit.
func killProcesses(run *store.Run, groups map[string][]int, opts KillOptions, res *KillResult) {
	self := store.Self()
	var waitPID int
	remote := false
	if o := run.Owner; o != nil && o.PID != self.PID && store.ProcessAlive(*o) {
		if o.Host != "" && self.Host != "" && o.Host != self.Host {
			remote = true
			res.Note = fmt.Sprintf("the run's process (pid %d) is on host %s: not signalled; it is fenced and can no longer write", o.PID, o.Host)
		} else if err := opts.Signal(o.PID, syscall.SIGKILL); err == nil {
			res.PID, waitPID = o.PID, o.PID
		}
	}
	for _, t := range run.Tasks {
		if remote {
			break // its agents' process groups are on that host too
		}
		for _, a := range t.Attempts {
			if a.State != store.AttemptRunning {
				continue
			}
			for _, pg := range groups[fmt.Sprintf("%s@%d", t.ID, a.N)] {
				if err := opts.Signal(-pg, syscall.SIGKILL); err == nil {
					res.Groups = append(res.Groups, pg)
				}
			}
		}
	}
	// What the run's processes setsid'd or double-forked out of their groups carries the
	// run in its environment (SPEC §7.2): it goes too.
	var strays []int
	if !remote {
		for _, pid := range reap.WithEnv("MULLIGAN_RUN=" + run.ID) {
			if pg, err := syscall.Getpgid(pid); pid == waitPID || err != nil || slices.Contains(res.Groups, pg) {
				continue // gone, or its group was signalled above
			}
			if opts.Signal(pid, syscall.SIGKILL) == nil {
				strays = append(strays, pid)
			}
		}
	}
	// The post snapshot must see the tree the killed processes left, not one they still edit.
	deadline := time.Now().Add(opts.Wait)
	for time.Now().Before(deadline) {
		gone := waitPID == 0 || !store.ProcessAlive(*run.Owner)
		for _, pg := range res.Groups {
			if err := syscall.Kill(-pg, 0); !errors.Is(err, syscall.ESRCH) {
				gone = false
			}
		}
		for _, pid := range strays {
			if reap.Alive(pid) {
				gone = false
			}
		}
		if gone {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// signalCause is the cause of a context cancelled by a signal to mulligan.
type signalCause struct{ sig syscall.Signal }

func (s signalCause) Error() string { return "received " + s.sig.String() }

// CancelCause is the cause to cancel a run's context with when mulligan receives sig, so the
// outcome can tell SIGINT (exit 130) from SIGTERM (exit 5).
func CancelCause(sig syscall.Signal) error { return signalCause{sig: sig} }
