package attempt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/attempt/store"
	"github.com/mulligan-dev/mulligan/snapshot"
)

// runTask runs one task's attempts until the policy ends it. A non-nil Outcome means the run
// stops here (blocked, cancelled); nil means go on with the next task.
func (r *runner) runTask(ctx context.Context, t *store.Task) (*Outcome, error) {
	def := r.file.Task(t.ID)
	if def == nil {
		return nil, fmt.Errorf("task %s is not in the run's task file", t.ID)
	}
	if t.StartedAt == nil || t.BaseTree == "" {
		// The task's base is the tree as it starts: what every attempt starts from.
		tree, err := r.currentTree(ctx)
		if err != nil {
			return nil, fmt.Errorf("snapshot before task %s: %w", t.ID, err)
		}
		now := r.env.Now().UTC()
		if err := r.update(ctx, func(tx *store.Tx) error {
			cur, err := tx.GetTask(r.run.ID, t.ID)
			if err != nil {
				return err
			}
			if cur.StartedAt == nil {
				cur.StartedAt = &now
			}
			cur.BaseTree = tree.String()
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
	var deadlineAt time.Time
	if def.Deadline > 0 {
		deadlineAt = t.StartedAt.Add(def.Deadline)
	}

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
			r.env.Progress.Event(ProgressEvent{Kind: KindTaskState, Task: t.ID, State: store.TaskSucceeded})
			return nil, nil
		case ActRetry:
			r.env.Progress.Event(ProgressEvent{Kind: KindRetry, Task: t.ID, N: res.n + 1, Delay: res.decision.Delay})
			continue
		case ActFail:
			r.env.Progress.Event(ProgressEvent{Kind: KindTaskState, Task: t.ID, State: store.TaskFailed, Reason: res.decision.Reason})
			return nil, nil
		case ActBlock:
			r.env.Progress.Event(ProgressEvent{Kind: KindTaskState, Task: t.ID, State: store.TaskBlocked, Reason: res.decision.Reason})
			return r.end(ctx, store.RunBlocked, res.decision.Reason)
		case ActQuota, ActFailover:
			// Not a retry: the next attempt picks a rung that is neither disabled nor quota-blocked
			// (or parks), at once and outside the retry budget.
			continue
		case ActPark:
			r.env.Progress.Event(ProgressEvent{Kind: KindTaskState, Task: t.ID, State: store.TaskWaitingQuota, Reason: res.decision.Reason})
			return r.end(ctx, store.RunWaitingQuota, ReasonQuota)
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
	from := t.State
	if uerr := r.update(ctx, func(tx *store.Tx) error {
		if err := tx.SetTaskState(r.run.ID, t.ID, store.TaskBlocked, ReasonRestoreConflict, nil); err != nil {
			return err
		}
		return r.event(tx, t.ID, 0, "task.state_changed", map[string]any{"from": from, "to": store.TaskBlocked, "reason": ReasonRestoreConflict, "error": err.Error()})
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
		return nil
	}
	known := r.known
	r.known = plumbing.ZeroHash
	// The tree being replaced is normally one the run keeps in a ref (the last attempt's post
	// tree); anything else was edited by hand while the run was stopped or in backoff, and is
	// kept under an undo ref rather than lost.
	kept := func(t plumbing.Hash) bool {
		if t == known {
			return true
		}
		var rec bool
		err := r.env.DB.View(context.WithoutCancel(ctx), func(tx *store.Tx) (err error) {
			rec, err = tx.TreeRecorded(r.run.ID, t.String())
			return err
		})
		return err == nil && rec
	}
	res, err := r.env.Repo.Restore(context.WithoutCancel(ctx), tree, snapshot.RestoreOptions{NoUndoRef: true, Kept: kept,
		UndoMessage: fmt.Sprintf("mulligan run %s: the working tree before a reset to %s\n\nIt held changes no attempt of the run recorded.\n", r.run.ID, tree)})
	if res != nil && res.Undo != nil && res.Undo.Ref != "" {
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: r.current,
			Message: "the working tree held changes no attempt recorded (edited while the run was stopped?): kept in " + res.Undo.Ref + "; `mulligan undo` puts them back"})
		_ = r.update(ctx, func(tx *store.Tx) error {
			return r.event(tx, r.current, 0, "snapshot.taken", map[string]any{"ref": res.Undo.Ref, "tree": res.UndoTree.String(),
				"commit": res.Undo.Commit.String(), "reason": "unrecorded-edits"})
		})
	}
	if err != nil {
		return err
	}
	r.known = tree
	return nil
}

type attemptResult struct {
	n        int
	decision Decision
}

// runAttempt runs one attempt of def: reset the tree, pre snapshot, agent, post snapshot, classify,
// record, decide.
func (r *runner) runAttempt(ctx context.Context, def *Task, t *store.Task, base plumbing.Hash, deadlineAt time.Time) (*attemptResult, error) {
	var n, counted int
	var prev *store.Attempt
	var history []store.Attempt
	var operator string
	var disabled map[string]store.AgentHealth
	var sp spend
	if err := r.env.DB.View(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		var err error
		if n, err = tx.NextAttemptNumber(r.run.ID, t.ID); err != nil {
			return err
		}
		cur, err := tx.GetTask(r.run.ID, t.ID)
		if err != nil {
			return err
		}
		if sp, err = r.loadSpend(tx, t.ID); err != nil {
			return err
		}
		history = cur.Attempts
		for i := range cur.Attempts {
			a := &cur.Attempts[i]
			if a.Counted && a.State != store.AttemptSuperseded { // timetravel took it back
				counted++
			}
			if a.State == store.AttemptFailed || a.State == store.AttemptCancelled {
				prev = a
			} else if a.State == store.AttemptSucceeded {
				prev = nil
			}
		}
		if disabled, err = tx.DisabledAgents(r.run.ID); err != nil {
			return err
		}
		operator, err = operatorText(tx, r.run.ID, t.ID) // `mulligan prompt`'s text, for this attempt only
		return err
	}); err != nil {
		return nil, err
	}

	// Spend: once the task's (or the run's) reported cost has reached its limit, no attempt starts.
	if f := sp.exhausted(def, 0); f != nil {
		return r.failBeforeAttempt(ctx, t, base, n, f)
	}
	now := r.env.Now()
	blocked := map[string]store.AgentHealth{}
	for k, v := range disabled {
		blocked[k] = v
	}
	for name, until := range sp.quotaUntil {
		if until.After(now) {
			if _, off := blocked[name]; !off {
				blocked[name] = store.AgentHealth{Agent: name, Class: string(ClassQuota)}
			}
		}
	}
	agentName, ok := pickAgent(def.Agents, counted, blocked)
	if !ok {
		if resumeAt, parked := sp.parkUntil(def.Agents, disabled, now); parked {
			return r.park(ctx, t, n-1, resumeAt)
		}
	}
	if !ok {
		// Every rung is disabled: the task fails with the class that disabled the last one.
		f := &Failure{Class: ClassAgentMissing, Code: "all_agents_disabled", Message: "every agent of the task is disabled for this run"}
		for _, name := range def.Agents {
			if h, ok := disabled[name]; ok {
				f.Class = Class(h.Class)
				f.Message = fmt.Sprintf("every agent of the task is disabled for this run (%s: %s)", name, h.Reason)
			}
		}
		d := Decision{Action: ActFail, Reason: string(f.Class), Failure: f}
		if err := r.resetTask(ctx, t.ID, def, base); err != nil {
			return r.blockOnRestore(ctx, t, n-1, err)
		}
		if err := r.setTaskState(ctx, t, store.TaskFailed, d.Reason, nil); err != nil {
			return nil, err
		}
		return &attemptResult{n: n - 1, decision: d}, nil
	}
	agent := r.file.Agents[agentName]

	// Attempt n starts from the task's base (never from a failed attempt's edits) unless carry_over.
	if !def.CarryOver {
		if err := r.resetTask(ctx, t.ID, def, base); err != nil {
			return r.blockOnRestore(ctx, t, n-1, fmt.Errorf("reset the tree before %s@%d: %w", t.ID, n, err))
		}
	}

	warning, err := r.effectsWarning(ctx, def, n)
	if err != nil {
		return nil, err
	}
	warm := warmSession(def, agent, prev)
	prompt, err := r.composePrompt(def, prev, operator, warning, warm != "")
	if err != nil {
		return nil, withClass(ClassAuthoring, "prompt_file", err)
	}
	dir := filepath.Join(r.logDir, t.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	promptFile := filepath.Join(dir, strconv.Itoa(n)+".prompt")
	outputFile := filepath.Join(dir, strconv.Itoa(n)+".output")
	logPath := filepath.Join(dir, strconv.Itoa(n)+".log")
	if err := os.WriteFile(promptFile, []byte(prompt), 0o600); err != nil {
		return nil, err
	}
	os.Remove(outputFile)

	crashPoint("before-pre")
	preRef := runRef(r.run.ID, t.ID, strconv.Itoa(n), "pre")
	pre, err := r.snapshot(ctx, preRef, fmt.Sprintf("mulligan %s %s@%d: pre\n\nThe tree attempt %d of task %s started from (run %s).\n", r.run.ID, t.ID, n, n, t.ID, r.run.ID), plumbing.ZeroHash)
	if err != nil {
		return nil, fmt.Errorf("pre snapshot of %s@%d: %w", t.ID, n, err)
	}
	gitPre, err := r.readGitPre()
	if err != nil {
		return nil, fmt.Errorf("git state before %s@%d: %w", t.ID, n, err)
	}

	idemKey := IdempotencyKey(r.run.ID, t.ID)
	// prepare expands the agent's command and environment for one call with this prompt (the
	// attempt's own, or a schema correction's).
	prepare := func(prompt, promptFile string) ([]string, []string, error) {
		vars := Vars{Prompt: prompt, PromptFile: promptFile, Run: r.run.ID, Task: t.ID, Attempt: n, IdempotencyKey: idemKey}
		argv, err := Expand(agent.Command, vars)
		if err != nil {
			return nil, nil, err
		}
		envv := append([]string{}, r.env.Environ...)
		for k, v := range PresetEnv(agent.Preset) {
			envv = append(envv, k+"="+v)
		}
		for k, v := range agent.Env {
			ev, err := ExpandString(v, vars)
			if err != nil {
				return nil, nil, err
			}
			envv = append(envv, k+"="+ev)
		}
		envv = append(envv,
			"MULLIGAN_RUN="+r.run.ID, "MULLIGAN_TASK="+t.ID, "MULLIGAN_ATTEMPT="+strconv.Itoa(n),
			"MULLIGAN_IDEMPOTENCY_KEY="+idemKey, "MULLIGAN_PROMPT_FILE="+promptFile, "MULLIGAN_OUTPUT_FILE="+outputFile,
		)
		return argv, envv, nil
	}
	argv, envv, err := prepare(prompt, promptFile)
	if err != nil {
		return nil, err
	}
	if warm != "" {
		argv = resumeArgs(agent.Preset, argv, warm)
	}

	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()

	started := r.env.Now().UTC()
	a := &store.Attempt{
		RunID: r.run.ID, TaskID: t.ID, N: n, Agent: agentName, State: store.AttemptRunning,
		StartedAt: started, PreRef: preRef, PreTree: pre.Tree.String(), Prompt: prompt, Log: logPath,
		Counted: true,
	}
	if err := r.update(ctx, func(tx *store.Tx) error {
		if err := tx.InsertAttempt(a); err != nil {
			return err
		}
		if err := tx.RecordAttemptGit(r.run.ID, t.ID, n, gitPre); err != nil {
			return err
		}
		from := t.State
		if err := tx.SetTaskState(r.run.ID, t.ID, store.TaskRunning, "", nil); err != nil {
			return err
		}
		t.State = store.TaskRunning
		if from != store.TaskRunning {
			if err := r.event(tx, t.ID, 0, "task.state_changed", map[string]any{"from": from, "to": store.TaskRunning}); err != nil {
				return err
			}
		}
		if err := r.event(tx, t.ID, n, "attempt.started", map[string]any{"agent": agentName, "pre_ref": preRef, "pre_tree": a.PreTree, "argv0": argv[0]}); err != nil {
			return err
		}
		if def.SideEffects != SideEffectsNonIdempotent {
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
		return nil, err
	}
	// The last attempt number the retry budget allows from here: attempts that did not count
	// (quota, failover, runner_died) and operator resets move it along with n.
	maxAttempts := n
	if def.OnFailure == OnFailureRetry {
		maxAttempts = n + max(0, def.Retries-t.RetriesUsed)
	}
	r.env.Progress.Event(ProgressEvent{Kind: KindAttemptStarted, Task: t.ID, N: n, Max: maxAttempts, Agent: agentName})

	// The attempt's limits: its timeout, and what remains of the task's deadline.
	timeout := def.Timeout
	deadlineBound := false
	if !deadlineAt.IsZero() {
		left := deadlineAt.Sub(r.env.Now())
		if left <= 0 {
			left = time.Millisecond
		}
		if timeout == 0 || left < timeout {
			timeout, deadlineBound = left, true
		}
	}
	spec := ProcSpec{
		Argv: argv, Dir: r.env.Repo.Root(), Env: envv, Timeout: timeout, Heartbeat: def.Heartbeat,
		Grace: r.env.Grace, Output: &progressWriter{w: logf, p: r.env.Progress, task: t.ID, n: n},
		Kill:    r.killCh,
		OnStart: func(pgid int) { r.notePgid(ctx, t.ID, n, pgid) },
	}
	r.known = plumbing.ZeroHash // the agent may change anything
	proc := RunProcess(ctx, spec)

	obs := Observation{
		Cancelled: proc.Cancelled || proc.Killed, TimedOut: proc.TimedOut && !deadlineBound,
		DeadlineExceeded: proc.TimedOut && deadlineBound, Silent: proc.Silent,
		StartErr: proc.StartErr, ExitCode: proc.ExitCode, Output: proc.Tail,
	}
	if proc.Signal != 0 && obs.ExitCode < 0 {
		obs.ExitCode = 128 + int(proc.Signal)
	}
	presetInfo := PresetFor(agent.Preset)
	var preset PresetRules = presetInfo
	if r.env.Presets != nil {
		preset = r.env.Presets(agent)
	}
	failure := Classify(obs, def.Classify, preset)
	var usage attemptUsage
	usage.add(presetInfo, proc.Stdout)
	chk := &outputCheck{r: r, ctx: ctx, def: def, t: t, n: n, preset: presetInfo, rules: preset,
		spec: spec, prepare: prepare, prompt: prompt, dir: dir, outputFile: outputFile, log: logf, usage: &usage}
	if failure == nil {
		// Exit 0: the output checks (result contract, schema with its correction calls).
		failure = chk.run(proc.Stdout)
	}
	// The tree the attempt left is taken before verify runs (SPEC §4.3): what a test or build
	// command writes is not the agent's work and does not belong in the attempt's ref.
	postTree, err := r.currentTree(ctx)
	if err != nil {
		return nil, fmt.Errorf("post snapshot of %s@%d: %w", t.ID, n, err)
	}
	// HEAD, refs, the stash and the index as the agent left them, before verify too.
	if err := r.recordGitPost(ctx, t.ID, n, gitPre); err != nil {
		return nil, err
	}
	if failure == nil && def.Verify != nil {
		failure = chk.verify()
		r.known = plumbing.ZeroHash // verify may have written files
	}
	schemaRetries := chk.retries
	if failure != nil {
		switch failure.Class {
		case ClassQuota:
			r.quotaReset(failure, proc.Tail)
		case ClassAgentMissing:
			if presetInfo.Install != "" && agent.Preset != PresetGeneric {
				failure.Hint = presetInfo.Install
			}
		}
		failure.RetryEligible = Eligible(failure.Class, def.NonRetryable, def.RetryOn)
	}

	// The post snapshot: the tree the attempt left, whatever its outcome.
	state := store.AttemptSucceeded
	if failure != nil {
		state = store.AttemptFailed
		if failure.Class == ClassCancellation {
			state = store.AttemptCancelled
		}
	}
	postRef := runRef(r.run.ID, t.ID, strconv.Itoa(n), "post")
	post, err := r.commitSnapshot(postRef, postTree, attemptMessage(r.run.ID, t.ID, n, state, failure), pre.Commit)
	if err != nil {
		return nil, fmt.Errorf("post snapshot of %s@%d: %w", t.ID, n, err)
	}
	crashPoint("after-post")
	changed, err := r.env.Repo.DiffTrees(pre.Tree, post.Tree)
	if err != nil {
		return nil, err
	}

	// Decide on the counters as recorded, then act on the tree before recording: a crash between
	// the two leaves the attempt `running`, which resume turns into runner_died and redoes.
	var cur *store.Task
	if err := r.env.DB.View(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		var err error
		cur, err = tx.GetTask(r.run.ID, t.ID)
		return err
	}); err != nil {
		return nil, err
	}
	switch {
	case failure == nil:
		cur.ConsecutiveFailures = 0
	case failure.Class != ClassQuota: // a quota wall is not an attempt
		cur.ConsecutiveFailures++
	}
	decision := Decide(def, failure, Counters{RetriesUsed: cur.RetriesUsed, ConsecutiveFailures: cur.ConsecutiveFailures}, r.env.Now(), deadlineAt, r.env.Rand)
	if failure != nil && (failure.Class == ClassAuth || failure.Class == ClassAgentMissing) && decision.Action != ActCancel {
		// This agent is disabled for the run; while another rung is enabled the chain moves on.
		off := map[string]store.AgentHealth{agentName: {Agent: agentName}}
		for k, v := range disabled {
			off[k] = v
		}
		if _, ok := pickAgent(def.Agents, counted+1, off); ok {
			decision = Decision{Action: ActFailover, Reason: ReasonFailover, Failure: failure}
		}
	}
	switch decision.Action {
	case ActRetry, ActQuota, ActFailover:
		// Spend is checked before the next attempt: this one's reported cost included.
		if f := sp.exhausted(def, usage.cost()); f != nil {
			g := *f
			g.Message += fmt.Sprintf(" (after %s: %s)", decision.Failure.Class, decision.Failure.Message)
			decision = Decision{Action: ActFail, Reason: string(ClassBudgetExhausted), Failure: &g}
		}
	}
	if decision.Action == ActSucceed {
		if err := r.settleGitOnSuccess(ctx, t.ID, def); err != nil {
			return nil, err
		}
	}
	if decision.Action == ActFail {
		// A failed task leaves no edits behind: back to where it started. If the tree cannot be
		// put back, the task is held instead, with the tree as it is.
		if err := r.resetTask(ctx, t.ID, def, base); err != nil {
			r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: "could not reset the tree: " + err.Error()})
			decision.Action, decision.Reason = ActBlock, ReasonRestoreConflict
		}
	}

	finished := r.env.Now().UTC()
	err = r.update(ctx, func(tx *store.Tx) error {
		a.State = state
		a.FinishedAt = &finished
		a.Ref, a.Tree = postRef, post.Tree.String()
		a.FilesChanged = store.Ptr(len(changed))
		a.SchemaRetries = schemaRetries
		a.TokensIn, a.TokensOut, a.CostUSD = usage.in, usage.out, warmCost(usage.usd, warm, history)
		a.AgentSession, a.AgentResume = usage.session, ResumeCommand(agent.Preset, usage.session)
		if proc.StartErr == nil && proc.ExitCode >= 0 {
			a.ExitCode = store.Ptr(proc.ExitCode)
		} else if proc.Signal != 0 {
			a.ExitCode = store.Ptr(128 + int(proc.Signal))
		}
		if failure != nil {
			applyFailure(a, failure)
			if err := tx.UpdateAttempt(a); err != nil {
				return err
			}
			// attempt.failed carries the class as classified, before the policy's decision.
			if err := r.event(tx, t.ID, n, "attempt.failed", map[string]any{
				"class": string(failure.Class), "code": failure.Code, "message": failure.Message,
				"retry_eligible": failure.RetryEligible, "consecutive_failures": cur.ConsecutiveFailures,
				"exit_code": a.ExitCode, "ref": postRef,
			}); err != nil {
				return err
			}
			if proc.StartErr != nil {
				// The agent never ran: it cannot have acted on the world.
				if err := tx.DropImplicitEffect(r.run.ID, t.ID, n); err != nil {
					return err
				}
			}
			if failure.Class == ClassAgentMissing || failure.Class == ClassAuth {
				if err := tx.DisableAgent(r.run.ID, agentName, string(failure.Class), failure.Message); err != nil {
					return err
				}
				if err := r.event(tx, t.ID, n, "agent.disabled", map[string]any{"agent": agentName, "class": string(failure.Class), "reason": failure.Message}); err != nil {
					return err
				}
			}
			if decision.Failure != failure {
				applyFailure(a, decision.Failure)
				if err := tx.UpdateAttempt(a); err != nil {
					return err
				}
			}
		} else {
			if err := tx.UpdateAttempt(a); err != nil {
				return err
			}
			if err := r.event(tx, t.ID, n, "attempt.succeeded", map[string]any{"ref": postRef, "files_changed": len(changed)}); err != nil {
				return err
			}
		}
		from := cur.State
		payload := map[string]any{"from": from}
		switch decision.Action {
		case ActSucceed:
			cur.State, cur.Reason = store.TaskSucceeded, ""
			now := finished
			cur.FinishedAt = &now
		case ActRetry:
			resumeAt := finished.Add(decision.Delay)
			cur.State, cur.Reason, cur.ResumeAt = store.TaskBackoff, "", &resumeAt
			cur.RetriesUsed++
			payload["delay_ms"] = decision.Delay.Milliseconds()
			payload["resume_at"] = resumeAt.Format(time.RFC3339Nano)
			payload["reason"] = "retry"
		case ActFail:
			cur.State, cur.Reason = store.TaskFailed, decision.Reason
			now := finished
			cur.FinishedAt = &now
		case ActBlock:
			cur.State, cur.Reason = store.TaskBlocked, decision.Reason
		case ActCancel:
			cur.State, cur.Reason = store.TaskCancelled, ""
			now := finished
			cur.FinishedAt = &now
		case ActQuota, ActFailover:
			// The task goes on at once on another rung (or parks when the next pick finds none).
			payload["reason"] = decision.Reason
		}
		payload["to"] = cur.State
		if cur.Reason != "" {
			payload["reason"] = cur.Reason
		}
		if err := tx.UpdateTask(cur); err != nil {
			return err
		}
		if from != cur.State || (decision.Action != ActQuota && decision.Action != ActFailover) {
			if err := r.event(tx, t.ID, n, "task.state_changed", payload); err != nil {
				return err
			}
		}
		*t = *cur
		run, err := tx.RunHeader(r.run.ID)
		if err != nil {
			return err
		}
		run.ResumesWithoutProgress = 0
		return tx.UpdateRun(run)
	})
	if err != nil {
		return nil, err
	}
	r.env.Progress.Event(ProgressEvent{Kind: KindAttemptFinished, Task: t.ID, N: n, Agent: agentName, Failure: decision.Failure, Duration: finished.Sub(started), Files: len(changed)})
	if proc.Cancelled {
		if s, ok := context.Cause(ctx).(signalCause); ok {
			r.mu.Lock()
			r.sigSeen = s.sig
			r.mu.Unlock()
		}
	}
	return &attemptResult{n: n, decision: decision}, nil
}

func applyFailure(a *store.Attempt, f *Failure) {
	a.Class, a.Code, a.Message, a.Hint = string(f.Class), f.Code, f.Message, f.Hint
	a.RetryEligible = store.Ptr(f.RetryEligible)
	if f.RetryAfter > 0 {
		a.RetryAfterMS = store.Ptr(f.RetryAfter.Milliseconds())
	} else {
		a.RetryAfterMS = nil
	}
	switch f.Class {
	case ClassQuota, ClassRunnerDied:
		a.Counted = false
	}
}

// notePgid records the agent's process group, so that resume can end what a dead run left behind.
// A crash before it commits leaves the group to be found through /proc (agentGroups).
func (r *runner) notePgid(ctx context.Context, task string, n, pgid int) {
	crashPoint("before-pgid")
	_ = r.update(ctx, func(tx *store.Tx) error {
		return r.event(tx, task, n, "attempt.process", map[string]any{"pgid": pgid})
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
func (r *runner) composePrompt(def *Task, prev *store.Attempt, operator, effectsWarning string, resumed bool) (string, error) {
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
		text = string(data)
	}
	parts := PromptParts{Task: text, Operator: operator, EffectsWarning: effectsWarning}
	if prev != nil {
		var out []byte
		if prev.Log != "" {
			out = readTail(prev.Log, 64<<10)
		}
		parts.Prev = &PrevAttempt{N: prev.N, Class: prev.Class, Message: prev.Message, Output: out,
			Resumed: resumed, CarryOver: def.CarryOver}
		if prev.Class == string(ClassQualityRejection) && prev.Log != "" {
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
