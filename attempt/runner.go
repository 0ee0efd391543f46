package attempt

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// runGCPercent is the collector's lowest target while a run executes (GOGC; Go's default is 100).
const runGCPercent = 10

// gcPercentFor is the collector's target for a run over a tree of files tracked files: the heap
// may grow past what the run holds by about a megabyte, whatever the tree's size (what it holds
// is mostly the tree's entries, ~110 bytes a file): 1,000,000 / files, at most Go's default of
// 100, down to runGCPercent from 100k. No tracked files (an unreadable or new index) says nothing
// of the tree's size: Go's default.
func gcPercentFor(files int) int {
	if files <= 0 {
		return 100
	}
	return min(100, max(runGCPercent, 1_000_000/files))
}

// TuneGC sets the collector's target for a run over repo's tree (gcPercentFor), unless the user
// set GOGC, and returns what puts the previous one back.
func TuneGC(repo *snapshot.Repo) (restore func()) { return tuneGC(repo.TrackedFiles()) }

func tuneGC(files int) (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(gcPercentFor(files))
	return func() { debug.SetGCPercent(prev) }
}

// Env is what a runner needs from the outside world. Every field but Repo and DB has a default.
type Env struct {
	Repo     *snapshot.Repo
	DB       *store.DB
	Progress Progress         // terminal output; nil: none
	Now      func() time.Time // clock
	Rand     func() float64   // jitter source in [0,1)
	// Sleep waits d or until ctx ends (backoff); tests make it instant.
	Sleep func(ctx context.Context, d time.Duration) error
	// Environ is the environment agents inherit, before the agent's and MULLIGAN_* variables.
	Environ []string
	// Grace is the time between SIGTERM and SIGKILL when an attempt is ended.
	Grace time.Duration
	// Presets returns the preset rules of an agent (the seam for agent-aware classification).
	Presets func(*taskfile.Agent) agentcli.PresetRules
	// HeartbeatEvery is how often the run's heartbeat is stamped.
	HeartbeatEvery time.Duration
	// ControlEvery is how often the runner looks for an operator's pause or cancel request.
	ControlEvery time.Duration
}

func (e *Env) defaults() {
	if e.Progress == nil {
		e.Progress = nopProgress{}
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Rand == nil {
		e.Rand = rand.Float64
	}
	if e.Sleep == nil {
		e.Sleep = sleepCtx
	}
	if e.Environ == nil {
		e.Environ = os.Environ()
	}
	if e.Grace <= 0 {
		e.Grace = 5 * time.Second
	}
	if e.HeartbeatEvery <= 0 {
		e.HeartbeatEvery = 2 * time.Second
	}
	if e.ControlEvery <= 0 {
		e.ControlEvery = time.Second
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// StartOptions are the inputs of a new run.
type StartOptions struct {
	File  *taskfile.File
	Tasks []string // the tasks asked for (with their dependencies); empty: all
	// ID is the new run's id; empty: a fresh one (`run --detach` picks it before starting).
	ID string
	// MaxCostUSD is `run --max-cost`: the run's spend limit (nil: none).
	MaxCostUSD *float64
	// Isolate is `run --isolate`: every task runs in a worktree of its own (isolate.go).
	Isolate bool
}

// Outcome is how a run (or the part of it this process ran) ended.
type Outcome struct {
	RunID  string
	State  string // a run state
	Reason string
	// Signal is set when a signal to mulligan cancelled the run (SIGINT → exit 130).
	Signal syscall.Signal
}

// runner owns one run while this process executes it: the run's writer (writer.go), the
// task file it runs, and what only an executing process has (the kill channel, the signal
// seen, the task at hand).
type runner struct {
	runWriter
	file *taskfile.File
	// logDir is <common>/mulligan/logs/<run>.
	logDir string

	// lastPost is the last attempt this process ran: what a reset names (resetnotes.go).
	lastPost postState

	killCh  chan struct{} // closed (under mu) when the run is fenced: ends the attempt in flight
	sigSeen syscall.Signal
	// current is the task the runner works on (set at each checkpoint), for pause --mode cancel.
	current string

	// heldHere are the tasks this process held (blocked, waiting_quota, waiting_approval) while
	// independent tasks went on; heldTree is the base of the last one, whose tree the working
	// tree still holds until another task runs (held.go).
	heldHere map[string]bool
	heldTree plumbing.Hash

	// lane is the lane of a race this runner runs (bestof.go); nil outside a race.
	lane *laneRun
	// slot is the worktree an isolated task's attempts run in (isolate.go); nil in place.
	slot *worktreeSlot

	// undoReset: the run resumes after an interruption (Ctrl-C), so the working tree holds the
	// interrupted attempt's half edit: the first reset keeps it under an undo ref, which
	// `mulligan undo` brings back.
	undoReset bool
	// noStopTree: the run stops because a signal cut a snapshot short; another one (the stop
	// tree's) could hang the same way, uncancellable now (interruptedBy).
	noStopTree bool
}

// ErrActive is returned when another live process runs in this worktree; it wraps the store's
// *LockedError, which names the run.
var ErrActive = errors.New("another run is active in this worktree")

// activeError marks a refused worktree lock as ErrActive (keeping the *LockedError, which names
// the run holding it), so every entry point that takes the lock reports it the same way.
func activeError(err error) error {
	var locked *store.LockedError
	if errors.As(err, &locked) {
		return fmt.Errorf("%w: %w", ErrActive, err)
	}
	return err
}

// StoredTaskFile is how a run records the path of its task file: relative to the run's worktree
// root when the file lies inside it, else absolute. path is absolute or relative to the current
// directory (`run -f FILE` from a subdirectory), so a later --reload, resume or supervise finds
// it from wherever it runs.
func StoredTaskFile(worktree, path string) string {
	if path == "" {
		return ""
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(worktree, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return rel
	}
	return abs
}

// Start records a new run and executes it in the foreground.
func Start(ctx context.Context, env Env, opts StartOptions) (*Outcome, error) {
	env.defaults()
	order, err := plan(opts.File, opts.Tasks)
	if err != nil {
		return nil, err
	}
	repo := env.Repo
	if err := checkWorktreesDir(repo, order, opts.Isolate); err != nil {
		return nil, err
	}
	runID := opts.ID
	if runID == "" {
		runID = snapshot.NewRunID()
	}
	owner := store.Self()
	run := &store.Run{
		ID:              runID,
		Worktree:        repo.Root(),
		GitDir:          repo.GitDir(),
		TaskFile:        StoredTaskFile(repo.Root(), opts.File.Path),
		TaskFileHash:    opts.File.Hash,
		TaskFileContent: opts.File.Content,
		State:           store.RunRunning,
		Owner:           &owner,
		MaxCostUSD:      opts.MaxCostUSD,
		Options:         runOptionsJSON(RunOptions{Isolate: opts.Isolate}),
	}
	if opts.File.Path == "" {
		// An ad-hoc run keeps its definition as the JSON of the file it was built from.
		run.TaskFileContent = opts.File.Content
	}
	for _, t := range order {
		run.Tasks = append(run.Tasks, store.Task{ID: t.ID, State: store.TaskPending, Needs: nonNil(t.Needs)})
	}
	err = env.DB.Update(ctx, func(tx *store.Tx) error {
		if err := tx.InsertRun(run); err != nil {
			return err
		}
		if err := tx.AcquireWorktreeLock(repo.Root(), runID, owner, store.ProcessAlive); err != nil {
			return err
		}
		if err := tx.InsertHooks(runID, hookDefs(opts.File, order)); err != nil {
			return err
		}
		tasks := make([]string, len(order))
		for i, t := range order {
			tasks[i] = t.ID
		}
		_, err := tx.AppendEvent(runID, "", 0, store.EventRunStarted, store.RunStarted{
			Worktree: repo.Root(), TaskFile: opts.File.Path, TaskFileHash: opts.File.Hash,
			Tasks: tasks, PID: owner.PID, Host: owner.Host,
		})
		return err
	})
	if err != nil {
		return nil, activeError(err)
	}
	r := newRunner(env, opts.File, run)
	return r.execute(ctx)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func newRunner(env Env, file *taskfile.File, run *store.Run) *runner {
	// A run id is mulligan's own ([0-9a-z]); one that is not a single name gets no log
	// directory, and writing there fails.
	logDir, _ := store.LogDir(env.Repo.CommonDir(), run.ID)
	r := &runner{
		runWriter: runWriter{env: env, run: run, epoch: run.Epoch},
		file:      file,
		logDir:    logDir,
		killCh:    make(chan struct{}),
		heldHere:  map[string]bool{},
	}
	r.bound = r.snapshotCtx
	return r
}

// plan orders the tasks to run: the ones asked for and their dependencies, in dependency order
// with file order breaking ties.
func plan(f *taskfile.File, want []string) ([]*taskfile.Task, error) {
	selected := map[string]bool{}
	var add func(id string) error
	add = func(id string) error {
		if selected[id] {
			return nil
		}
		t := f.Task(id)
		if t == nil {
			known := make([]string, len(f.Tasks))
			for i, t := range f.Tasks {
				known[i] = t.ID
			}
			return &UnknownTaskError{Task: id, Known: known}
		}
		selected[id] = true
		for _, n := range t.Needs {
			if err := add(n); err != nil {
				return err
			}
		}
		return nil
	}
	if len(want) == 0 {
		for _, t := range f.Tasks {
			selected[t.ID] = true
		}
	}
	for _, id := range want {
		if err := add(id); err != nil {
			return nil, err
		}
	}
	var order []*taskfile.Task
	done := map[string]bool{}
	for len(order) < len(selected) {
		progressed := false
		for _, t := range f.Tasks {
			if !selected[t.ID] || done[t.ID] {
				continue
			}
			ready := true
			for _, n := range t.Needs {
				if !done[n] {
					ready = false
					break
				}
			}
			if ready {
				order = append(order, t)
				done[t.ID] = true
				progressed = true
				break // restart from the top: file order breaks ties
			}
		}
		if !progressed {
			return nil, errors.New("the tasks' needs form a cycle") // the loader reports cycles first
		}
	}
	return order, nil
}

// UnknownTaskError names a task that `run TASK` asked for but the file lacks.
type UnknownTaskError struct {
	Task  string
	Known []string
}

func (e *UnknownTaskError) Error() string {
	return fmt.Sprintf("no task %q in the task file (tasks: %s)", e.Task, strings.Join(e.Known, ", "))
}

// update runs fn in a write transaction after checking that this process still owns the run.
// heartbeat stamps the run's heartbeat until ctx ends. When the run is fenced (killed, or claimed
// by another process), it ends the attempt in flight at once and makes the runner stop.
func (r *runner) heartbeat(ctx context.Context) {
	t := time.NewTicker(r.env.HeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			err := r.env.DB.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
				return tx.Heartbeat(r.run.ID, r.epoch)
			})
			if errors.Is(err, store.ErrFenced) {
				// (Another write may have met the fence first and set fenced: the attempt's
				// processes are still to be ended, whoever noticed.)
				r.mu.Lock()
				r.fenced = true
				select {
				case <-r.killCh: // closed already
				default:
					close(r.killCh)
				}
				r.mu.Unlock()
				return
			}
		}
	}
}

// execute runs the run's pending tasks in order until the run ends, blocks, parks or is cancelled.
func (r *runner) execute(ctx context.Context) (out *Outcome, err error) {
	// An operator's cancel or pause --mode cancel ends ctx with a controlCause (control.go).
	ctx, stopCtl := context.WithCancelCause(ctx)
	defer stopCtl(nil)
	go r.watchControl(ctx, stopCtl)
	hbCtx, stopHB := context.WithCancel(ctx)
	defer stopHB()
	go r.heartbeat(hbCtx)
	r.startHooks(ctx)
	defer func() {
		// Deliver the hooks the run's last changes fired before this process goes: the stop
		// of a run waits for them, bounded by the hook timeout.
		if r.hooks != nil {
			r.hooks.Close()
			r.hooks = nil
		}
	}()
	defer func() {
		if r.isFenced() {
			out, err = nil, fmt.Errorf("run %s was taken over by another process or killed: this process stopped writing: %w", r.run.ID, store.ErrFenced)
		}
	}()
	defer func() {
		// An error after the run was recorded ends it in a recorded state (abort.go); one that
		// a signal caused (Ctrl-C in a snapshot) leaves it resumable, like any interruption.
		if err != nil && out == nil {
			if o, ierr := r.interruptedBy(ctx, err); o != nil || ierr != nil {
				out, err = o, ierr
				return
			}
			err = r.abort(ctx, err)
		}
	}()

	// The run's heap is mostly one structure it holds from the base snapshot to the end (the
	// tree's entries, some 11 MB at 100k files); the default GOGC=100 lets garbage grow the
	// heap to twice that before collecting, 25 to a quarter of it more. A low target keeps the
	// peak near what the run holds, for some more collector time: it is lower the larger the
	// tree (gcPercentFor; see the README's architecture section for the figures). A GOGC the
	// user set wins. Restored last, after the tree's state is let go (below).
	defer TuneGC(r.env.Repo)()
	// While the run owns the working tree, its snapshots and resets cost what changed since the
	// last one: the tree is watched (where it cannot be, every snapshot walks it all).
	if err := r.env.Repo.Watch(); err == nil {
		defer func() {
			r.env.Repo.Unwatch()
			// The tree's entries, most of what the run held, are garbage from here: collected
			// now (a few ms: little else is live), what follows the run (its autopsy, the
			// output) reuses their memory instead of growing the heap beside them.
			runtime.GC()
		}()
	}
	if r.run.BaseTree == "" {
		if err := r.takeBase(ctx); err != nil {
			return nil, err
		}
		if err := r.keepIgnored(ctx); err != nil {
			return nil, err
		}
	}
	r.removeSettledWorktrees()
	for {
		run, err := r.reload(ctx)
		if err != nil {
			return nil, err
		}
		task, skip, held := nextTask(run, r.allowFail, r.heldHere, r.env.Now())
		if task == nil {
			if len(held) > 0 {
				// Nothing else can proceed: the run takes the held state.
				return r.endHeld(ctx, held)
			}
			return r.finish(ctx, run)
		}
		if skip {
			if err := r.setTaskState(ctx, task, store.TaskSkipped, ReasonDepsFailed, nil); err != nil {
				return nil, err
			}
			r.env.Progress.Event(ProgressEvent{Kind: KindTaskState, Task: task.ID, State: store.TaskSkipped, Reason: ReasonDepsFailed})
			continue
		}
		if out, err := r.resetHeldTree(ctx, task); out != nil || err != nil {
			return out, err
		}
		if batch := r.parallelBatch(run, task); len(batch) > 1 {
			if stop, err := r.runBatch(ctx, batch); stop != nil || err != nil {
				return stop, err
			}
			continue
		}
		stop, err := r.runTask(ctx, task)
		if err != nil {
			return nil, err
		}
		if stop != nil {
			return stop, nil
		}
	}
}

// takeBase snapshots the run's starting tree into refs/mulligan/runs/<run>/base.
func (r *runner) takeBase(ctx context.Context) error {
	ref := snapshot.BaseRef(r.run.ID)
	res, err := r.snapshot(ctx, ref, fmt.Sprintf("mulligan run %s: base\n\nThe working tree when the run started.\n", r.run.ID), plumbing.ZeroHash)
	if err != nil {
		return fmt.Errorf("base snapshot: %w", err)
	}
	return r.update(ctx, func(tx *store.Tx) error {
		run, err := tx.RunHeader(r.run.ID)
		if err != nil {
			return err
		}
		run.BaseRef, run.BaseTree = ref, res.Tree.String()
		if err := tx.UpdateRun(run); err != nil {
			return err
		}
		r.run.BaseRef, r.run.BaseTree = run.BaseRef, run.BaseTree
		return r.event(tx, "", 0, store.EventSnapshotTaken, store.SnapshotTaken{Ref: ref, Tree: res.Tree.String(), Commit: res.Commit.String()})
	})
}

// transitionTask moves t through the one door (store.TransitionTask) in tx and takes the row as
// written into t, keeping the attempts t holds.
func (r *runner) transitionTask(tx *store.Tx, t *store.Task, tr store.TaskTransition) error {
	row, err := tx.TransitionTask(r.run.ID, t.ID, tr)
	if err != nil {
		return err
	}
	row.Attempts = t.Attempts
	*t = *row
	return nil
}

func (r *runner) setTaskState(ctx context.Context, t *store.Task, state store.TaskState, reason string, resumeAt *time.Time) error {
	return r.update(ctx, func(tx *store.Tx) error {
		if _, err := tx.TransitionTask(r.run.ID, t.ID, store.TaskTransition{To: state, Reason: reason, ResumeAt: resumeAt}); err != nil {
			return err
		}
		t.State, t.Reason = string(state), reason
		return nil
	})
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// finish ends the run with the state its tasks imply and releases the worktree.
func (r *runner) finish(ctx context.Context, run *store.Run) (*Outcome, error) {
	state := store.RunSucceeded
	for _, t := range run.Tasks {
		if (t.State == store.TaskFailed || t.State == store.TaskSkipped) && !r.allowFail(t.ID) {
			state = store.RunFailed // a task with allow_fail may fail: the run can succeed
		}
	}
	return r.end(ctx, state, "")
}

// end records the run's state, releasing the worktree lock when the run no longer runs.
func (r *runner) end(ctx context.Context, state, reason string) (*Outcome, error) {
	if state == store.RunCancelled {
		switch c := context.Cause(ctx).(type) {
		case controlCause:
			if c.request == store.ControlPauseCancel || c.request == store.ControlPauseDrain {
				return r.pauseCancelled(ctx, ReasonOperatorPause, CodePaused,
					"the attempt was cancelled by `mulligan pause --mode cancel`; it does not count")
			}
			reason = ReasonOperatorCancel
		case signalCause:
			// Ctrl-C (or SIGTERM, SIGHUP) stops the run as a pause would: resumable, never an
			// end. `mulligan cancel` is the way to end a run for good.
			r.mu.Lock()
			r.sigSeen = c.sig
			r.mu.Unlock()
			return r.pauseCancelled(ctx, ReasonInterrupted, CodeInterrupted,
				fmt.Sprintf("the attempt was interrupted (%s to mulligan); it does not count: `mulligan resume %s` resets its edits and goes on", sigName(c.sig), r.run.ID))
		}
	}
	err := r.update(ctx, func(tx *store.Tx) error {
		if err := tx.SetControl(r.run.ID, store.ControlNone); err != nil {
			return err
		}
		if _, err := tx.TransitionRun(r.run.ID, store.RunTransition{To: store.RunState(state), Reason: reason}); err != nil {
			return err
		}
		if !store.RunFinished(state) {
			// stopped, not finished: the time until it runs again is not its tasks'
			if err := tx.ParkTasks(r.run.ID); err != nil {
				return err
			}
		}
		return tx.ReleaseWorktreeLock(r.run.Worktree, r.run.ID)
	})
	if err != nil {
		return nil, err
	}
	r.run.State = state
	if !store.RunFinished(state) {
		r.recordStopTree(ctx) // what a later resume compares the tree with (movedon.go)
	}
	r.env.Progress.Event(ProgressEvent{Kind: KindRunState, State: state, Reason: reason})
	return &Outcome{RunID: r.run.ID, State: state, Reason: reason, Signal: r.signal()}, nil
}

func (r *runner) signal() syscall.Signal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sigSeen
}

// pickAgent returns the task's agent for this rung, with those disabled for the run removed, keeping the
// rung positions: rung k of the chain is chain[min(k, len-1)] of the remaining agents.
func pickAgent(chain []string, counted int, disabled map[string]store.AgentHealth) (string, bool) {
	rung := min(counted, len(chain)-1)
	for i := rung; i < len(chain); i++ {
		if _, off := disabled[chain[i]]; !off {
			return chain[i], true
		}
	}
	for i := rung - 1; i >= 0; i-- {
		if _, off := disabled[chain[i]]; !off {
			return chain[i], true
		}
	}
	return "", false
}
