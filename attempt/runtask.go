package attempt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

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
			r.env.Progress.Event(ProgressEvent{Kind: KindTaskState, Task: t.ID, State: store.TaskFailed, Reason: res.decision.Reason})
			return nil, nil
		case ActBlock:
			r.env.Progress.Event(ProgressEvent{Kind: KindTaskState, Task: t.ID, State: store.TaskBlocked, Reason: res.decision.Reason})
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
	res, err := r.env.Repo.Restore(sctx, tree, snapshot.RestoreOptions{NoUndoRef: true, Kept: kept,
		UndoMessage: fmt.Sprintf("mulligan run %s: the working tree before a reset to %s\n\nIt held changes no attempt of the run recorded.\n", r.run.ID, tree)})
	r.noteSubmodules(res)
	r.noteReset(res)
	if res != nil && res.Undo != nil && res.Undo.Ref != "" {
		_ = r.update(ctx, func(tx *store.Tx) error {
			return r.event(tx, r.current, 0, "snapshot.taken", map[string]any{"ref": res.Undo.Ref, "tree": res.UndoTree.String(),
				"commit": res.Undo.Commit.String(), "reason": "unrecorded-edits"})
		})
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
	presetInfo    *Preset
	usage         attemptUsage
	failure       *Failure
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
	if at.pr.Cancelled {
		if s, ok := context.Cause(ctx).(signalCause); ok {
			r.mu.Lock()
			r.sigSeen = s.sig
			r.mu.Unlock()
		}
	}
	return &attemptResult{n: at.n, decision: at.decision}, nil
}

// prepareAttempt reads the task's counters, picks the agent (or ends the task when none is
// left, or parks it on a quota wall: then it returns the result), resets the tree to the
// task's base, writes the prompt and takes the pre snapshot.
func (r *runner) prepareAttempt(ctx context.Context, at *attemptRun) (*attemptResult, error) {
	def, t := at.def, at.t
	if err := r.loadAttemptState(ctx, at); err != nil {
		return nil, err
	}
	// Spend: once the task's (or the run's) reported cost has reached its limit, no attempt starts.
	if f := at.sp.exhausted(def, 0); f != nil {
		return r.failBeforeAttempt(ctx, t, at.base, at.n, f)
	}
	// Deadline: an attempt that would start after it is not started (a pause during a backoff,
	// or a crash, can bring the runner back past it). Parked time is already left out.
	if !at.deadlineAt.IsZero() && !r.env.Now().Before(at.deadlineAt) {
		return r.failBeforeAttempt(ctx, t, at.base, at.n, &Failure{Class: taskfile.ClassBudgetExhausted, Code: CodeDeadline,
			Message: fmt.Sprintf("the task's deadline (%s) passed at %s, before attempt %d could start", def.Deadline, at.deadlineAt.UTC().Format(time.RFC3339), at.n),
			Hint:    fmt.Sprintf("raise `deadline` in the task file, or give the task a fresh start: mulligan retry-task %s %s", r.run.ID, t.ID)})
	}
	if res, err := r.pickAttemptAgent(ctx, at); res != nil || err != nil {
		return res, err
	}

	// Attempt n starts from the task's base (never from a failed attempt's edits) unless carry_over.
	if !def.CarryOver {
		if err := r.resetTask(ctx, t.ID, def, at.base); err != nil {
			return r.blockOnRestore(ctx, t, at.n-1, fmt.Errorf("reset the tree before %s@%d: %w", t.ID, at.n, err))
		}
	}

	warning, err := r.effectsWarning(ctx, def, at.n)
	if err != nil {
		return nil, err
	}
	at.warm = warmSession(def, at.agent, at.prev)
	if at.prompt, err = r.composePrompt(def, at.prev, at.operator, warning, at.warm != ""); err != nil {
		return nil, withClass(taskfile.ClassAuthoring, "prompt_file", err)
	}
	if at.dir, err = store.Under(r.logDir, t.ID); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(at.dir, 0o700); err != nil {
		return nil, err
	}
	at.promptFile = filepath.Join(at.dir, strconv.Itoa(at.n)+".prompt") // n is a number: one component
	at.outputFile = filepath.Join(at.dir, strconv.Itoa(at.n)+".output")
	at.logPath = filepath.Join(at.dir, strconv.Itoa(at.n)+".log")
	if err := os.WriteFile(at.promptFile, []byte(at.prompt), 0o600); err != nil {
		return nil, err
	}
	os.Remove(at.outputFile)

	crashPoint("before-pre")
	at.preRef = snapshot.AttemptRef(r.run.ID, t.ID, at.n, snapshot.Pre)
	at.pre, err = r.snapshot(ctx, at.preRef, fmt.Sprintf("mulligan %s %s@%d: pre\n\nThe tree attempt %d of task %s started from (run %s).\n", r.run.ID, t.ID, at.n, at.n, t.ID, r.run.ID), plumbing.ZeroHash)
	if err != nil {
		return nil, fmt.Errorf("pre snapshot of %s@%d: %w", t.ID, at.n, err)
	}
	r.snapshotSubmodules(ctx, t.ID, at.n, at.preRef, "pre")
	if at.gitPre, err = r.readGitPre(); err != nil {
		return nil, fmt.Errorf("git state before %s@%d: %w", t.ID, at.n, err)
	}
	if at.argv, at.envv, err = r.agentCommand(at, at.prompt, at.promptFile); err != nil {
		return nil, err
	}
	if at.warm != "" {
		at.argv = resumeArgs(at.agent.Preset, at.argv, at.warm)
	}
	if at.log, err = os.OpenFile(at.logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600); err != nil {
		return nil, err
	}
	return nil, nil
}

// loadAttemptState reads the attempt's number, the attempts that count, the previous failure,
// the disabled agents, the spend so far and the operator's text for this attempt.
func (r *runner) loadAttemptState(ctx context.Context, at *attemptRun) error {
	return r.env.DB.View(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		var err error
		if at.n, err = tx.NextAttemptNumber(r.run.ID, at.t.ID); err != nil {
			return err
		}
		cur, err := tx.GetTask(r.run.ID, at.t.ID)
		if err != nil {
			return err
		}
		if at.sp, err = r.loadSpend(tx, at.t.ID); err != nil {
			return err
		}
		at.history = cur.Attempts
		for i := range cur.Attempts {
			a := &cur.Attempts[i]
			if r.lane != nil && !r.lane.mine[a.N] {
				continue // a lane's counters and previous attempt are its own
			}
			if a.Counted && a.State != store.AttemptSuperseded { // timetravel took it back
				at.counted++
			}
			if a.State == store.AttemptFailed || a.State == store.AttemptCancelled {
				at.prev = a
			} else if a.State == store.AttemptSucceeded {
				at.prev = nil
			}
		}
		if at.disabled, err = tx.DisabledAgents(r.run.ID); err != nil {
			return err
		}
		if r.lane != nil {
			// The operator's text is for the race's attempts that start after it: each lane's first.
			if len(r.lane.mine) == 0 {
				at.operator = r.lane.race.operator
			}
			return nil
		}
		at.operator, err = operatorText(tx, r.run.ID, at.t.ID) // `mulligan prompt`'s text, for this attempt only
		return err
	})
}

// pickAttemptAgent picks the rung of the agent chain this attempt runs: neither disabled nor
// behind a quota wall. With none, the task parks until the earliest wall lifts, or fails.
func (r *runner) pickAttemptAgent(ctx context.Context, at *attemptRun) (*attemptResult, error) {
	def, t := at.def, at.t
	now := r.env.Now()
	blocked := map[string]store.AgentHealth{}
	for k, v := range at.disabled {
		blocked[k] = v
	}
	for name, until := range at.sp.quotaUntil {
		if until.After(now) {
			if _, off := blocked[name]; !off {
				blocked[name] = store.AgentHealth{Agent: name, Class: string(taskfile.ClassQuota)}
			}
		}
	}
	rung := at.counted
	if r.lane != nil {
		rung = laneRung(r.lane.n, at.counted, len(def.Agents))
	}
	name, ok := pickAgent(def.Agents, rung, blocked)
	if ok {
		at.agentName, at.agent = name, r.file.Agents[name]
		return nil, nil
	}
	if resumeAt, parked := at.sp.parkUntil(def.Agents, at.disabled, now); parked {
		return r.park(ctx, t, at.n-1, resumeAt)
	}
	// Every rung is disabled: the task fails with the class that disabled the last one.
	f := &Failure{Class: taskfile.ClassAgentMissing, Code: "all_agents_disabled", Message: "every agent of the task is disabled for this run"}
	for _, name := range def.Agents {
		if h, ok := at.disabled[name]; ok {
			f.Class = taskfile.Class(h.Class)
			f.Message = fmt.Sprintf("every agent of the task is disabled for this run (%s: %s)", name, h.Reason)
		}
	}
	d := Decision{Action: ActFail, Reason: string(f.Class), Failure: f}
	if r.lane != nil {
		return &attemptResult{n: at.n - 1, decision: d}, nil // the race decides for the task
	}
	if err := r.resetTask(ctx, t.ID, def, at.base); err != nil {
		return r.blockOnRestore(ctx, t, at.n-1, err)
	}
	if err := r.setTaskState(ctx, t, store.TaskFailed, d.Reason, nil); err != nil {
		return nil, err
	}
	return &attemptResult{n: at.n - 1, decision: d}, nil
}

// agentCommand expands the agent's command and environment for one call with this prompt (the
// attempt's own, or a schema correction's).
func (r *runner) agentCommand(at *attemptRun, prompt, promptFile string) ([]string, []string, error) {
	idemKey := IdempotencyKey(r.run.ID, at.t.ID)
	vars := taskfile.Vars{Prompt: prompt, PromptFile: promptFile, Run: r.run.ID, Task: at.t.ID, Attempt: at.n, IdempotencyKey: idemKey}
	argv, err := taskfile.Expand(at.agent.Command, vars)
	if err != nil {
		return nil, nil, err
	}
	envv := append([]string{}, r.env.Environ...)
	for k, v := range PresetEnv(at.agent.Preset) {
		envv = append(envv, k+"="+v)
	}
	for k, v := range at.agent.Env {
		ev, err := taskfile.ExpandString(v, vars)
		if err != nil {
			return nil, nil, err
		}
		envv = append(envv, k+"="+ev)
	}
	envv = append(envv,
		"MULLIGAN_RUN="+r.run.ID, "MULLIGAN_TASK="+at.t.ID, "MULLIGAN_ATTEMPT="+strconv.Itoa(at.n),
		"MULLIGAN_IDEMPOTENCY_KEY="+idemKey, "MULLIGAN_PROMPT_FILE="+promptFile, "MULLIGAN_OUTPUT_FILE="+at.outputFile,
	)
	return argv, append(envv, r.laneEnv()...), nil
}

// startAttempt records the attempt running (and the task with it), and, for a task with
// non-idempotent side effects, the implicit effect every started attempt may have had.
func (r *runner) startAttempt(ctx context.Context, at *attemptRun) error {
	def, t, n := at.def, at.t, at.n
	at.started = r.env.Now().UTC()
	at.row = &store.Attempt{
		RunID: r.run.ID, TaskID: t.ID, N: n, Agent: at.agentName, State: store.AttemptRunning,
		StartedAt: at.started, PreRef: at.preRef, PreTree: at.pre.Tree.String(), Prompt: at.prompt, Log: at.logPath,
		Counted: true,
	}
	if r.lane != nil {
		at.row.Lane = r.lane.n
		r.lane.mine[n] = true
	}
	if err := r.update(ctx, func(tx *store.Tx) error {
		if err := tx.InsertAttempt(at.row); err != nil {
			return err
		}
		if err := tx.RecordAttemptGit(r.run.ID, t.ID, n, at.gitPre); err != nil {
			return err
		}
		if t.State != store.TaskRunning {
			if _, err := tx.TransitionTask(r.run.ID, t.ID, store.TaskTransition{To: store.TaskRunning}); err != nil {
				return err
			}
		}
		t.State, t.Reason = store.TaskRunning, ""
		if err := r.event(tx, t.ID, n, store.EventAttemptStarted, store.AttemptStarted{
			Agent: at.agentName, PreRef: at.preRef, PreTree: at.row.PreTree, Argv0: at.argv[0], Lane: at.row.Lane}); err != nil {
			return err
		}
		if def.SideEffects != taskfile.SideEffectsNonIdempotent {
			return nil
		}
		// Every started attempt of such a task may have acted on the world: the ledger says so
		// from the moment it starts, so a crash mid-attempt cannot hide it.
		e := store.Effect{RunID: r.run.ID, TaskID: t.ID, Attempt: n, Implicit: true}
		if err := tx.RecordEffect(&e); err != nil {
			return err
		}
		return r.event(tx, t.ID, n, "effect.recorded", map[string]any{
			"effect": e.ID, "name": e.Name, "idempotent": false, "implicit": true, "delivery_id": e.DeliveryID})
	}); err != nil {
		return err
	}
	// The last attempt number the retry budget allows from here: attempts that did not count
	// (quota, failover, runner_died) and operator resets move it along with n.
	maxAttempts := n
	if def.OnFailure == taskfile.OnFailureRetry {
		used := t.RetriesUsed
		if r.lane != nil {
			used = r.lane.retriesUsed // a lane retries on its own budget
		}
		maxAttempts = n + max(0, def.Retries-used)
	}
	r.env.Progress.Event(ProgressEvent{Kind: KindAttemptStarted, Task: t.ID, N: n, Max: maxAttempts, Agent: at.agentName, Lane: at.row.Lane})
	return nil
}

// executeAttempt runs the agent within the attempt's limits (its timeout, what remains of the
// task's deadline), classifies what it did, runs the output checks of an exit 0, takes the post
// tree and then runs verify.
func (r *runner) executeAttempt(ctx context.Context, at *attemptRun) error {
	def, t, n := at.def, at.t, at.n
	// The attempt's limits: its timeout (the preset's default when the task sets none), and what
	// remains of the task's deadline.
	timeout, heartbeat := AgentLimits(def)
	deadlineBound := false
	if !at.deadlineAt.IsZero() {
		left := at.deadlineAt.Sub(r.env.Now())
		if left <= 0 {
			left = time.Millisecond
		}
		if timeout == 0 || left < timeout {
			timeout, deadlineBound = left, true
		}
	}
	at.spec = proc.Spec{
		Argv: at.argv, Dir: r.env.Repo.Root(), Env: at.envv, Timeout: timeout, Heartbeat: heartbeat,
		Grace: r.env.Grace, Output: &progressWriter{w: at.log, p: r.env.Progress, task: t.ID, n: n},
		Kill:    r.killCh,
		OnStart: func(pgid int) { r.notePgid(ctx, t.ID, n, pgid) },
	}
	at.presetInfo = PresetFor(at.agent.Preset)
	var looped func() string
	at.spec.Watch, looped = at.presetInfo.LoopWatcher()
	if looped == nil {
		looped = func() string { return "" }
	}
	silence := r.watchSilence(ctx, def, t.ID, n)
	at.spec.OnOutput = silence.output
	r.known = plumbing.ZeroHash // the agent may change anything
	stopWarm := r.warmWhileAgentRuns(at.presetInfo)
	at.pr = proc.Run(ctx, at.spec)
	stopWarm()
	silence.stop()
	pr := &at.pr

	obs := Observation{
		Cancelled: pr.Cancelled || pr.Killed, TimedOut: pr.TimedOut && !deadlineBound,
		DeadlineExceeded: pr.TimedOut && deadlineBound, Silent: pr.Silent,
		StartErr: pr.StartErr, ExitCode: pr.ExitCode, Output: pr.Tail,
	}
	if pr.Watched {
		obs.Looped, obs.Loop = looped(), at.presetInfo
	}
	if pr.Signal != 0 && obs.ExitCode < 0 {
		obs.ExitCode = 128 + int(pr.Signal)
	}
	var preset PresetRules = at.presetInfo
	if r.env.Presets != nil {
		preset = r.env.Presets(at.agent)
	}
	failure := Classify(obs, def.Classify, preset)
	at.usage.add(at.presetInfo, pr.Stdout)
	chk := &outputCheck{r: r, ctx: ctx, def: def, t: t, n: n, preset: at.presetInfo, rules: preset,
		spec: at.spec, prepare: func(prompt, promptFile string) ([]string, []string, error) {
			return r.agentCommand(at, prompt, promptFile)
		},
		prompt: at.prompt, dir: at.dir, outputFile: at.outputFile, log: at.log, usage: &at.usage}
	if failure == nil {
		// Exit 0: the output checks (result contract, schema with its correction calls).
		failure = chk.run(pr.Stdout)
	}
	// The tree the attempt left is taken before verify runs (SPEC §4.3): what a test or build
	// command writes is not the agent's work and does not belong in the attempt's ref.
	var err error
	if at.postTree, err = r.currentTree(ctx); err != nil {
		return fmt.Errorf("post snapshot of %s@%d: %w", t.ID, n, err)
	}
	// The submodules' working trees as the agent left them, in their own repositories.
	r.snapshotSubmodules(ctx, t.ID, n, snapshot.AttemptRef(r.run.ID, t.ID, n, snapshot.Post), "post")
	// HEAD, refs, the stash and the index as the agent left them, before verify too.
	if err := r.recordGitPost(ctx, t.ID, n, at.gitPre); err != nil {
		return err
	}
	if failure == nil && def.Verify != nil {
		failure = chk.verify()
		r.known = plumbing.ZeroHash // verify may have written files
	}
	at.schemaRetries = chk.retries
	if r.lane != nil {
		// A lane whose attempt passed claims the win; one that passed too late, or was cancelled
		// because another won, is superseded. One that failed by itself stays failed.
		won := failure == nil && r.lane.race.claim(r.lane.n, n)
		if !won && (failure == nil || failure.Class == taskfile.ClassCancellation && r.lost(ctx)) {
			w, wn := r.lane.race.won()
			failure, at.superseded = supersededFailure(r.lane.n, w, wn, t.ID), true
		}
	}
	if failure != nil {
		switch failure.Class {
		case taskfile.ClassQuota:
			if failure.Code != CodeCredit { // money, not time: no reset to wait for
				r.quotaReset(failure, pr.Tail)
			}
		case taskfile.ClassAgentMissing:
			if at.presetInfo.Install != "" && at.agent.Preset != taskfile.PresetGeneric {
				failure.Hint = at.presetInfo.Install
			}
		}
		failure.RetryEligible = taskfile.Eligible(failure.Class, def.NonRetryable, def.RetryOn) && !failure.NoRetry
	}
	at.failure = failure
	return nil
}

// warmed: the patterns are the process's, compiled once whichever runner gets there first;
// idled: the same for Env.Idle's work.
var warmed, idled atomic.Bool

// warmIdle starts Env.Idle's work (the autopsy's patterns) once the run's base is taken: from
// there to the agent's end the run is one goroutine recording and preparing, and the walk's
// second core sits idle (a one-attempt run at 10k files: 2.4 ms sooner to its end, 50
// interleaved runs; the autopsy compiled them after the agent before). Not on one core, where
// it would only come between the run and its agent.
func (r *runner) warmIdle() {
	if r.env.Idle == nil || runtime.NumCPU() < 2 || idled.Swap(true) {
		return
	}
	go r.env.Idle()
}

// warmAfter is how long an agent runs before the patterns are compiled beside it.
const warmAfter = 50 * time.Millisecond

// warmWhileAgentRuns compiles, while the agent runs, the patterns that read its output when it
// fails (~1 ms at the first failure otherwise, and the autopsy's as much again): regular
// expressions are compiled on first use (lazyre), and the first use would come right after the
// agent, on the way to the next attempt. Only once the agent has run warmAfter, when the process
// is surely idle: an agent that ends sooner (a script, a CLI that fails at once) would have the
// compilation compete with its own start for the cores, to no gain (measured: +1.3 ms a
// one-attempt run with an instant agent). The returned stop is called when the agent ends.
func (r *runner) warmWhileAgentRuns(p *Preset) (stop func()) {
	if warmed.Load() {
		return func() {}
	}
	idle := r.env.Idle
	t := time.AfterFunc(warmAfter, func() {
		if warmed.Swap(true) {
			return
		}
		p.warm()
		if idle != nil && !idled.Swap(true) {
			idle()
		}
	})
	return func() { t.Stop() }
}

// concludeAttempt takes the post snapshot (the tree the attempt left, whatever its outcome),
// decides on the counters as recorded, and acts on the tree before recording: a crash between
// the two leaves the attempt `running`, which resume turns into runner_died and redoes.
func (r *runner) concludeAttempt(ctx context.Context, at *attemptRun) error {
	def, t, n, failure := at.def, at.t, at.n, at.failure
	at.state = store.AttemptSucceeded
	if failure != nil {
		at.state = store.AttemptFailed
		if failure.Class == taskfile.ClassCancellation {
			at.state = store.AttemptCancelled
		}
	}
	if at.superseded {
		at.state = store.AttemptSuperseded
	}
	at.postRef = snapshot.AttemptRef(r.run.ID, t.ID, n, snapshot.Post)
	var err error
	at.post, err = r.commitSnapshot(at.postRef, at.postTree, attemptMessage(r.run.ID, t.ID, n, at.state, failure), at.pre.Commit)
	if err != nil {
		return fmt.Errorf("post snapshot of %s@%d: %w", t.ID, n, err)
	}
	r.lastPost = postState{task: t.ID, n: n, ref: at.postRef, pre: at.pre.Tree, tree: at.post.Tree}
	crashPoint("after-post")
	if at.changed, err = r.env.Repo.DiffTrees(at.pre.Tree, at.post.Tree); err != nil {
		return err
	}

	if err := r.env.DB.View(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		var err error
		at.cur, err = tx.GetTask(r.run.ID, t.ID)
		return err
	}); err != nil {
		return err
	}
	cur := at.cur
	if at.superseded {
		// Lost the race: its tree is kept in its post ref, and nothing is decided on it.
		at.decision = Decision{Action: ActCancel, Reason: ReasonSuperseded, Failure: failure}
		return nil
	}
	counters := Counters{RetriesUsed: cur.RetriesUsed, ConsecutiveFailures: cur.ConsecutiveFailures}
	if r.lane != nil {
		counters = Counters{RetriesUsed: r.lane.retriesUsed, ConsecutiveFailures: r.lane.consecutive}
	}
	switch {
	case failure == nil:
		counters.ConsecutiveFailures = 0
	case failure.Class == taskfile.ClassQuota: // a quota wall is not an attempt
	case disablesAgent(failure):
		// The agent is disabled and the chain moves on: its instant failure says nothing of the
		// task and must not trip the breaker for the rungs that still run.
	default:
		counters.ConsecutiveFailures++
	}
	if r.lane != nil {
		r.lane.consecutive = counters.ConsecutiveFailures
	} else {
		cur.ConsecutiveFailures = counters.ConsecutiveFailures
	}
	if failure != nil && Fingerprinted(failure.Class) {
		out := at.pr.Tail
		if failure.Class == taskfile.ClassQualityRejection {
			out = readTail(VerifyLogPath(at.logPath), 64<<10)
		}
		at.fingerprint = Fingerprint(failure, out, at.postTree.String())
	}
	decision := Decide(def, failure, counters, r.env.Now(), at.deadlineAt, r.env.Rand)
	if failure != nil && disablesAgent(failure) && decision.Action != ActCancel {
		// This agent is disabled for the run; while another rung is enabled the chain moves on.
		off := map[string]store.AgentHealth{at.agentName: {Agent: at.agentName}}
		for k, v := range at.disabled {
			off[k] = v
		}
		if _, ok := pickAgent(def.Agents, at.counted+1, off); ok {
			decision = Decision{Action: ActFailover, Reason: ReasonFailover, Failure: failure}
		}
	}
	switch decision.Action {
	case ActRetry, ActQuota, ActFailover:
		// Spend is checked before the next attempt: this one's reported cost included.
		if f := at.sp.exhausted(def, at.usage.cost()); f != nil {
			g := *f
			g.Message += fmt.Sprintf(" (after %s: %s)", decision.Failure.Class, decision.Failure.Message)
			decision = Decision{Action: ActFail, Reason: string(taskfile.ClassBudgetExhausted), Failure: &g}
		}
	}
	if same := identicalInARow(r.laneView(cur), at.fingerprint); at.fingerprint != "" && same >= def.MaxIdenticalFailures &&
		(decision.Action == ActRetry || decision.Action == ActBlock && decision.Reason == ReasonAsk) {
		// (A spent budget or a tripped breaker keeps its own reason: it already stops the task.)
		// The same failure again: another attempt would pay for it once more.
		decision = Decision{Action: ActBlock, Reason: ReasonNoProgress, Failure: failure}
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID,
			Message: fmt.Sprintf("the same failure %d times in a row (fingerprint %s): held for a decision", same, at.fingerprint)})
	}

	if decision.Action == ActSucceed {
		if err := r.settleGitOnSuccess(ctx, t.ID, def); err != nil {
			return err
		}
	}
	if decision.Action == ActFail && r.lane == nil {
		// (A lane's worktree is set to the task's base when a race starts: nothing to undo.)
		// A failed task leaves no edits behind: back to where it started. If the tree cannot be
		// put back, the task is held instead, with the tree as it is.
		if err := r.resetTask(ctx, t.ID, def, at.base); err != nil {
			r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: "could not reset the tree: " + err.Error()})
			decision.Action, decision.Reason = ActBlock, ReasonRestoreConflict
		}
	}
	at.decision = decision
	return nil
}

// recordAttempt records, in one transaction, the attempt's outcome, its events, the agent it
// disabled and the task's new state.
func (r *runner) recordAttempt(ctx context.Context, at *attemptRun) error {
	at.finished = r.env.Now().UTC()
	return r.update(ctx, func(tx *store.Tx) error {
		if err := r.recordOutcome(tx, at); err != nil {
			return err
		}
		if err := r.recordTaskState(tx, at); err != nil {
			return err
		}
		run, err := tx.RunHeader(r.run.ID)
		if err != nil {
			return err
		}
		run.ResumesWithoutProgress = 0
		return tx.UpdateRun(run)
	})
}

// recordOutcome writes the attempt's row and its attempt.failed/succeeded event; a failure that
// disables its agent disables it for the run.
func (r *runner) recordOutcome(tx *store.Tx, at *attemptRun) error {
	a, t, n, failure, pr := at.row, at.t, at.n, at.failure, &at.pr
	a.State = at.state
	a.FinishedAt = &at.finished
	a.Ref, a.Tree = at.postRef, at.post.Tree.String()
	a.FilesChanged = store.Ptr(len(at.changed))
	a.SchemaRetries = at.schemaRetries
	a.TokensIn, a.TokensOut, a.CostUSD = at.usage.in, at.usage.out, warmCost(at.usage.usd, at.agent.Preset, at.warm, at.history)
	a.AgentSession, a.AgentResume = at.usage.session, ResumeCommand(at.agent.Preset, at.usage.session)
	a.Fingerprint = at.fingerprint
	if pr.StartErr == nil && pr.ExitCode >= 0 {
		a.ExitCode = store.Ptr(pr.ExitCode)
	} else if pr.Signal != 0 {
		a.ExitCode = store.Ptr(128 + int(pr.Signal))
	}
	if failure == nil {
		if err := tx.UpdateAttempt(a); err != nil {
			return err
		}
		return r.event(tx, t.ID, n, store.EventAttemptSucceeded, store.AttemptSucceededPayload{Ref: at.postRef, FilesChanged: len(at.changed)})
	}
	applyFailure(a, failure)
	if at.superseded {
		a.Counted = false
		if err := tx.UpdateAttempt(a); err != nil {
			return err
		}
		w, wn := r.lane.race.won()
		return r.event(tx, t.ID, n, store.EventAttemptSuperseded, store.AttemptSupersededPayload{
			Lane: r.lane.n, WinnerLane: w, Winner: wn, Ref: at.postRef, FilesChanged: len(at.changed)})
	}
	if err := tx.UpdateAttempt(a); err != nil {
		return err
	}
	// attempt.failed carries the class as classified, before the policy's decision.
	consecutive := at.cur.ConsecutiveFailures
	if r.lane != nil {
		consecutive = r.lane.consecutive // the lane's own count, which its breaker reads
	}
	if err := r.event(tx, t.ID, n, store.EventAttemptFailed, store.AttemptFailedPayload{
		Class: string(failure.Class), Code: failure.Code, Message: failure.Message,
		RetryEligible: failure.RetryEligible, ConsecutiveFailures: consecutive, Counted: a.Counted,
		ExitCode: a.ExitCode, Ref: store.OptString(at.postRef), Fingerprint: store.OptString(at.fingerprint),
	}); err != nil {
		return err
	}
	if pr.StartErr != nil {
		// The agent never ran: it cannot have acted on the world.
		if err := tx.DropImplicitEffect(r.run.ID, t.ID, n); err != nil {
			return err
		}
	}
	if disablesAgent(failure) {
		if err := tx.DisableAgent(r.run.ID, at.agentName, string(failure.Class), failure.Message); err != nil {
			return err
		}
		if err := r.event(tx, t.ID, n, store.EventAgentDisabled, store.AgentDisabled{Agent: at.agentName, Class: string(failure.Class), Reason: failure.Message}); err != nil {
			return err
		}
	}
	if at.decision.Failure != failure {
		applyFailure(a, at.decision.Failure)
		return tx.UpdateAttempt(a)
	}
	return nil
}

// recordTaskState moves the task to the state the decision gives it, with the counters the
// conclusion changed (consecutive failures) and the retry it uses.
func (r *runner) recordTaskState(tx *store.Tx, at *attemptRun) error {
	cur, decision, finished := at.cur, at.decision, at.finished
	if r.lane != nil && decision.Action != ActSucceed {
		// A lane's end is not the task's: the race decides once every lane has ended.
		return nil
	}
	cur.SilentAt = nil // the attempt is over
	tr := store.TaskTransition{To: store.TaskState(cur.State), Reason: cur.Reason, Attempt: at.n, At: finished, Row: cur}
	switch decision.Action {
	case ActSucceed:
		tr.To, tr.Reason = store.TaskSucceeded, ""
		if at.def.NeedsApproval {
			// The attempt succeeded; the task waits for an operator's approve or reject.
			tr.To, tr.Reason = store.TaskWaitingApproval, ReasonNeedsApproval
		}
	case ActRetry:
		resumeAt := finished.Add(decision.Delay)
		tr.To, tr.Reason, tr.Cause, tr.ResumeAt = store.TaskBackoff, "", "retry", &resumeAt
		tr.Event.DelayMS = store.Ptr(decision.Delay.Milliseconds())
		cur.RetriesUsed++
	case ActFail:
		tr.To, tr.Reason = store.TaskFailed, decision.Reason
	case ActBlock:
		tr.To, tr.Reason = store.TaskBlocked, decision.Reason
	case ActCancel:
		tr.To, tr.Reason = store.TaskCancelled, ""
	case ActQuota, ActFailover:
		// The task goes on at once on another rung (or parks when the next pick finds none): no
		// change of state.
		if err := tx.UpdateTask(cur); err != nil {
			return err
		}
		*at.t = *cur
		return nil
	}
	row, err := tx.TransitionTask(r.run.ID, at.t.ID, tr)
	if err != nil {
		return err
	}
	row.Attempts = cur.Attempts
	*cur, *at.t = *row, *row
	return nil
}

func applyFailure(a *store.Attempt, f *Failure) {
	a.Class, a.Code, a.Message, a.Hint = string(f.Class), f.Code, f.Message, f.Hint
	a.RetryEligible = store.Ptr(f.RetryEligible)
	switch {
	case !f.ResetAt.IsZero() && a.FinishedAt != nil:
		// A quota wall lifts at a point in time. It is kept as the wait from the attempt's end,
		// which is what the next pick adds it to (loadSpend): measured from when the wall was
		// read instead, the wall would move later by the time the post snapshot took, and a
		// wall that had already lifted would hold the agent back once more.
		wait := max(f.ResetAt.Sub(*a.FinishedAt), 0)
		a.RetryAfterMS = store.Ptr((wait + time.Millisecond - 1).Milliseconds())
	case f.RetryAfter > 0:
		a.RetryAfterMS = store.Ptr(f.RetryAfter.Milliseconds())
	default:
		a.RetryAfterMS = nil
	}
	switch f.Class {
	case taskfile.ClassQuota, taskfile.ClassRunnerDied:
		a.Counted = false
	}
}

// notePgid records the agent's process group, so that resume can end what a dead run left behind.
// A crash before it commits leaves the group to be found through /proc (agentGroups).
func (r *runner) notePgid(ctx context.Context, task string, n, pgid int) {
	crashPoint("before-pgid")
	_ = r.update(ctx, func(tx *store.Tx) error {
		return r.event(tx, task, n, store.EventAttemptProcess, store.AttemptProcess{Pgid: pgid})
	})
}

func attemptMessage(run, task string, n int, state string, f *Failure) string {
	subject := fmt.Sprintf("mulligan %s %s@%d %s", run, task, n, state)
	body := fmt.Sprintf("Run %s, task %s, attempt %d: %s.", run, task, n, state)
	if f != nil {
		subject += " (" + string(f.Class) + ")"
		body += fmt.Sprintf("\nclass: %s\ncode: %s\nmessage: %s", f.Class, f.Code, oneLine(f.Message))
	}
	return subject + "\n\n" + body + "\n"
}

// composePrompt builds attempt n's prompt from the task's and the previous failed attempt.
func (r *runner) composePrompt(def *taskfile.Task, prev *store.Attempt, operator, effectsWarning string, resumed bool) (string, error) {
	text := def.Prompt
	if def.PromptFile != "" {
		p := def.PromptFile
		if !filepath.IsAbs(p) {
			p = filepath.Join(r.env.Repo.Root(), p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("task %s: prompt_file: %w", def.ID, err)
		}
		if strings.TrimSpace(string(data)) == "" {
			// run refuses it before anything runs (CheckFiles); emptied since, sent as it is, the
			// agent would get no instructions and "succeed" with nothing done.
			return "", fmt.Errorf("task %s: prompt_file %s is empty: the agent would get no instructions", def.ID, def.PromptFile)
		}
		text = string(data)
	}
	parts := PromptParts{Task: text, Operator: operator, EffectsWarning: effectsWarning}
	if r.lane != nil {
		parts.Lane, parts.Lanes = r.lane.n, r.lane.race.width
	}
	if prev != nil {
		var out []byte
		if prev.Log != "" {
			out = readTail(prev.Log, 64<<10)
		}
		parts.Prev = &PrevAttempt{N: prev.N, Class: prev.Class, Message: prev.Message, Output: out, Resumed: resumed, CarryOver: def.CarryOver}
		if prev.Class == string(taskfile.ClassQualityRejection) && prev.Log != "" {
			parts.Prev.VerifyTail = readTail(VerifyLogPath(prev.Log), 64<<10)
		}
	}
	return ComposePrompt(parts), nil
}

// readTail returns up to max bytes from the end of the file at path.
func readTail(path string, limit int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	off := max(0, st.Size()-limit)
	buf := make([]byte, st.Size()-off)
	n, _ := f.ReadAt(buf, off)
	return buf[:n]
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

// signalCause is the cause of a context cancelled by a signal to mulligan.
type signalCause struct{ sig syscall.Signal }

func (s signalCause) Error() string { return "received " + s.sig.String() }

// CancelCause is the cause to cancel a run's context with when mulligan receives sig, so the
// outcome can tell SIGINT (exit 130) from SIGTERM (exit 5).
func CancelCause(sig syscall.Signal) error { return signalCause{sig: sig} }
