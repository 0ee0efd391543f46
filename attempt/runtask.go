package attempt

import (
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/proc"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// runTask runs one task's attempts until the policy ends it. A non-nil Outcome means the run
// stops here (blocked, cancelled); nil means go on with the next task.
func (r *runner) runTask(ctx context.Context, t *store.Task) (*Outcome, error) {
	def := r.file.Task(t.ID)
	if def == nil {
		return nil, fmt.Errorf("task %s is not in the run's task file", t.ID)
	}
	// The task's base is the tree as it starts: what every attempt starts from. A task held while
	// independent tasks went on starts again from the tree they left (held.go).
	rebase := t.StartedAt == nil || t.BaseTree == "" || workLandedSince(r.run, t)
	isolated := r.isolated(def)
	if isolated && rebase {
		// The user may have edited since the run last looked: an isolated run never owns the tree.
		r.known = plumbing.ZeroHash
	}
	var tree plumbing.Hash
	if rebase {
		var err error
		if tree, err = r.currentTree(ctx); err != nil {
			return nil, fmt.Errorf("snapshot before task %s: %w", t.ID, err)
		}
	}
	if rebase || t.ParkedAt != nil {
		now := r.env.Now().UTC()
		if err := r.update(ctx, func(tx *store.Tx) error {
			cur, err := tx.GetTask(r.run.ID, t.ID)
			if err != nil {
				return err
			}
			if cur.StartedAt == nil {
				cur.StartedAt = &now
			}
			if rebase {
				cur.BaseTree = tree.String()
			}
			// Parked time (pause, quota, approval, a held decision) is not the task's: it moves
			// the deadline along.
			cur.Unpark(now)
			if err := tx.UpdateTask(cur); err != nil {
				return err
			}
			*t = *cur
			return nil
		}); err != nil {
			return nil, err
		}
	}
	base := plumbing.NewHash(t.BaseTree)
	if def.BestOf > 1 {
		return r.runRace(ctx, t, def, base)
	}
	if isolated {
		return r.runIsolated(ctx, t, def, base)
	}
	return r.runAttempts(ctx, t, def, base)
}

// runAttempts runs the task's attempts from base until the policy ends the task.
func (r *runner) runAttempts(ctx context.Context, t *store.Task, def *taskfile.Task, base plumbing.Hash) (*Outcome, error) {
	deadlineAt := deadlineOf(def, t)
	for {
		if err := ctx.Err(); err != nil {
			return r.cancelTask(ctx, t, nil)
		}
		// Between attempts the operator may have asked the run to pause or cancel.
		if out, err := r.checkpoint(ctx, t); out != nil || err != nil {
			return out, err
		}
		// A task in backoff (after a crash, too) waits out the rest of its delay.
		if t.State == store.TaskBackoff && t.ResumeAt != nil {
			crashPoint("in-backoff")
			if err := r.env.Sleep(ctx, time.Until(*t.ResumeAt)); err != nil {
				return r.cancelTask(ctx, t, nil)
			}
		}
		res, err := r.runAttempt(ctx, def, t, base, deadlineAt)
		if err != nil {
			return nil, err
		}
		switch res.decision.Action {
		case ActSucceed:
			if t.State == store.TaskWaitingApproval {
				r.env.Progress.Event(ProgressEvent{Kind: KindTaskState, Task: t.ID, State: store.TaskWaitingApproval, Reason: ReasonNeedsApproval})
				return nil, r.hold(ctx, t, base)
			}
			if !r.inWorktree { // an isolated task has succeeded once its change is applied (isolate.go)
				r.env.Progress.Event(ProgressEvent{Kind: KindTaskState, Task: t.ID, State: store.TaskSucceeded})
			}
			return nil, nil
		case ActRetry:
			r.env.Progress.Event(ProgressEvent{Kind: KindRetry, Task: t.ID, N: res.n + 1, Delay: res.decision.Delay})
			continue
		case ActFail:
			r.env.Progress.Event(ProgressEvent{Kind: KindTaskState, Task: t.ID, State: store.TaskFailed, Reason: res.decision.Reason,
				Message: WhyNotRetried(def, res.decision, r.run.ID)})
			return nil, nil
		case ActBlock:
			r.env.Progress.Event(ProgressEvent{Kind: KindTaskState, Task: t.ID, State: store.TaskBlocked, Reason: res.decision.Reason,
				Message: WhyNotRetried(def, res.decision, r.run.ID)})
			if res.decision.Reason == ReasonRestoreConflict {
				// The tree is not one mulligan knows: nothing else may run on it.
				return r.end(ctx, store.RunBlocked, res.decision.Reason)
			}
			return nil, r.hold(ctx, t, base)
		case ActQuota, ActFailover:
			// Not a retry: the next attempt picks a rung that is neither disabled nor quota-blocked
			// (or parks), at once and outside the retry budget.
			continue
		case ActPark:
			r.env.Progress.Event(ProgressEvent{Kind: KindTaskState, Task: t.ID, State: store.TaskWaitingQuota, Reason: res.decision.Reason})
			return nil, r.hold(ctx, t, base)
		default: // ActCancel
			return r.end(ctx, store.RunCancelled, "")
		}
	}
}

// cancelTask ends the task and the run cancelled (the tree stays as it is, for inspection).
func (r *runner) cancelTask(ctx context.Context, t *store.Task, _ error) (*Outcome, error) {
	if err := r.setTaskState(ctx, t, store.TaskCancelled, "", nil); err != nil {
		return nil, err
	}
	return r.end(ctx, store.RunCancelled, "")
}

// blockOnRestore holds the task when the tree could not be put back (a file changed under it):
// nothing more runs on a tree mulligan does not know. runTask then ends the run blocked.
func (r *runner) blockOnRestore(ctx context.Context, t *store.Task, n int, err error) (*attemptResult, error) {
	if r.lane != nil {
		// The lane's own worktree: the lane stops, held; the user's tree is not concerned.
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: fmt.Sprintf("lane %d could not reset its worktree: %s", r.lane.n, err)})
		return &attemptResult{n: n, decision: Decision{Action: ActBlock, Reason: ReasonRestoreConflict}}, nil
	}
	if uerr := r.update(ctx, func(tx *store.Tx) error {
		_, err := tx.TransitionTask(r.run.ID, t.ID, store.TaskTransition{To: store.TaskBlocked, Reason: ReasonRestoreConflict,
			Event: store.TaskStateChanged{Error: err.Error()}})
		return err
	}); uerr != nil {
		return nil, uerr
	}
	t.State, t.Reason = store.TaskBlocked, ReasonRestoreConflict
	r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: "could not reset the tree: " + err.Error()})
	return &attemptResult{n: n, decision: Decision{Action: ActBlock, Reason: ReasonRestoreConflict}}, nil
}

// restore puts the working tree back to tree (between attempts, after a failed task). The tree it
// replaces is already kept in the last attempt's ref, so no undo ref is written.
func (r *runner) restore(ctx context.Context, tree plumbing.Hash) error {
	if r.known == tree {
		r.putBackIgnored(ctx, tree) // the tree is as it was, but ignored files may not be
		return nil
	}
	known := r.known
	r.known = plumbing.ZeroHash
	// The tree being replaced is normally one the run keeps in a ref (the last attempt's post
	// tree); anything else was edited by hand while the run was stopped or in backoff, and is
	// kept under an undo ref rather than lost.
	kept := func(t plumbing.Hash) bool {
		if t == known || t == r.lastPost.tree {
			return true // (the last post tree may not be recorded yet: a failed task resets first)
		}
		var rec bool
		err := r.env.DB.View(context.WithoutCancel(ctx), func(tx *store.Tx) (err error) {
			rec, err = tx.TreeRecorded(r.run.ID, t.String())
			return err
		})
		return err == nil && rec
	}
	sctx, done := r.snapshotCtx(ctx)
	defer done()
	if r.undoReset && !r.inWorktree && r.lane == nil {
		r.undoReset = false
		return r.resetInterrupted(sctx, tree)
	}
	res, err := r.env.Repo.Restore(sctx, tree, snapshot.RestoreOptions{NoUndoRef: true, Kept: kept,
		UndoMessage: fmt.Sprintf("mulligan run %s: the working tree before a reset to %s\n\nIt held changes no attempt of the run recorded.\n", r.run.ID, tree)})
	r.noteSubmodules(res)
	r.noteReset(res)
	if res != nil && res.Undo != nil && res.Undo.Ref != "" {
		_ = r.update(ctx, func(tx *store.Tx) error {
			return r.event(tx, r.current, 0, store.EventSnapshotTaken, store.SnapshotTaken{Ref: res.Undo.Ref, Tree: res.UndoTree.String(),
				Commit: res.Undo.Commit.String(), Reason: "unrecorded-edits"})
		})
	}
	if err != nil {
		return err
	}
	r.known = tree
	r.putBackIgnored(ctx, tree)
	return nil
}

// resetInterrupted is the first reset after a run interrupted by Ctrl-C resumes: the working tree
// holds the interrupted attempt's half edit, which it keeps under an undo ref (`mulligan undo`
// brings it back) and names.
func (r *runner) resetInterrupted(ctx context.Context, tree plumbing.Hash) error {
	id := snapshot.NewID(r.env.Now())
	res, err := r.env.Repo.Restore(ctx, tree, snapshot.RestoreOptions{UndoRef: snapshot.UndoRef(id),
		UndoMessage: fmt.Sprintf("mulligan undo %s\n\nThe working tree an interrupted attempt of run %s left, before resume reset it.\n", id, r.run.ID)})
	r.noteSubmodules(res)
	if res != nil && res.Undo != nil && res.Undo.Ref != "" {
		_ = r.update(ctx, func(tx *store.Tx) error {
			return r.event(tx, r.current, 0, store.EventSnapshotTaken, store.SnapshotTaken{Ref: res.Undo.Ref, Tree: res.UndoTree.String(),
				Commit: res.Undo.Commit.String(), Reason: ReasonInterrupted})
		})
		if len(res.Changes) > 0 {
			paths := make([]string, len(res.Changes))
			for i, c := range res.Changes {
				paths[i] = c.Path
			}
			r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: r.current, Message: fmt.Sprintf(
				"the interrupted attempt's edits are reset: %s; kept in %s: `mulligan undo` brings them back", listPaths(paths), res.Undo.Ref)})
		}
	}
	if err != nil {
		return err
	}
	r.known = tree
	r.putBackIgnored(ctx, tree)
	return nil
}

type attemptResult struct {
	n        int
	decision Decision
	resumeAt time.Time // a lane that parks (ActPark): when its earliest quota wall lifts
}

// attemptRun is one attempt of a task as it goes through runAttempt's steps; each step fills in
// what the next ones read.
type attemptRun struct {
	def        *taskfile.Task
	t          *store.Task
	base       plumbing.Hash
	deadlineAt time.Time

	// prepare
	n, counted int
	prev       *store.Attempt
	history    []store.Attempt // the task's attempts so far
	warm       string          // the session this attempt continues (retry_mode: resume), "" cold
	operator   string
	disabled   map[string]store.AgentHealth
	sp         spend
	agentName  string
	agent      *taskfile.Agent
	prompt     string
	dir        string // the task's log directory
	promptFile string
	outputFile string
	logPath    string
	log        *os.File
	preRef     string
	pre        *snapshot.Result
	gitPre     []byte // HEAD, refs, the stash and the index before the agent (gitguard.go)
	argv, envv []string

	// start
	row     *store.Attempt
	started time.Time

	// superseded: this lane's attempt lost the race (bestof.go)
	superseded bool

	// execute
	spec          proc.Spec
	pr            proc.Result
	presetInfo    *agentcli.Preset
	usage         attemptUsage
	failure       *agentcli.Failure
	schemaRetries int
	postTree      plumbing.Hash
	fingerprint   string // of a failure that has one (fingerprint.go)

	// conclude
	state    string
	postRef  string
	post     *snapshot.Result
	changed  []snapshot.Change
	cur      *store.Task
	decision Decision
	finished time.Time
}

// runAttempt runs one attempt of def, in five steps: prepare (counters, the agent, the tree
// reset, the prompt, the pre snapshot, the command), start (the attempt recorded running),
// execute (the agent, classification, output checks, verify), conclude (the post snapshot, the
// policy's decision, the tree reset of a failed task) and record (one transaction).
func (r *runner) runAttempt(ctx context.Context, def *taskfile.Task, t *store.Task, base plumbing.Hash, deadlineAt time.Time) (*attemptResult, error) {
	at := &attemptRun{def: def, t: t, base: base, deadlineAt: deadlineAt}
	numbered := func() {}
	if r.lane != nil {
		// Lanes starting at once take numbers one after the other: a lane holds the numbers
		// from reading its number until its attempt is recorded.
		r.lane.race.numbers.Lock()
		numbered = sync.OnceFunc(r.lane.race.numbers.Unlock)
		defer numbered()
		if w, _ := r.lane.race.won(); w != 0 && w != r.lane.n {
			// Another lane won while this one waited its turn: no attempt to start.
			return &attemptResult{decision: Decision{Action: ActCancel, Reason: ReasonSuperseded}}, nil
		}
	}
	if res, err := r.prepareAttempt(ctx, at); res != nil || err != nil {
		return res, err
	}
	defer at.log.Close()
	if err := r.startAttempt(ctx, at); err != nil {
		return nil, err
	}
	numbered()
	if err := r.executeAttempt(ctx, at); err != nil {
		return nil, err
	}
	if err := r.concludeAttempt(ctx, at); err != nil {
		return nil, err
	}
	if err := r.recordAttempt(ctx, at); err != nil {
		return nil, err
	}
	r.env.Progress.Event(ProgressEvent{Kind: KindAttemptFinished, Task: t.ID, N: at.n, Agent: at.agentName, Failure: at.decision.Failure,
		Duration: at.finished.Sub(at.started), Files: len(at.changed), State: at.state, Lane: at.row.Lane})
	if at.state == store.AttemptSucceeded && nothingChanged(at) {
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: fmt.Sprintf(
			"%s@%d succeeded without changing a file, and no verify says nothing was to change: check what the agent did (mulligan logs %s/%s@%d)",
			t.ID, at.n, r.run.ID, t.ID, at.n)})
	}
	if at.pr.Cancelled {
		if s, ok := context.Cause(ctx).(signalCause); ok {
			r.mu.Lock()
			r.sigSeen = s.sig
			r.mu.Unlock()
		}
	}
	return &attemptResult{n: at.n, decision: at.decision}, nil
}

// crashPoint kills this process with SIGKILL when MULLIGAN_TEST_CRASH_AT names the point: the
// seam the crash tests use to die at an exact step of an attempt's life. With
// MULLIGAN_TEST_CRASH_WAIT=PATH it first waits (up to a minute) for PATH to exist, so a test can
// let the agent get somewhere before the runner dies.
func crashPoint(name string) {
	if os.Getenv("MULLIGAN_TEST_CRASH_AT") == name {
		if path := os.Getenv("MULLIGAN_TEST_CRASH_WAIT"); path != "" {
			for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(path); err == nil {
					break
				}
			}
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
	}
}
