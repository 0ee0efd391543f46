package attempt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

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
		return r.failBeforeAttempt(ctx, t, at.base, at.n, &agentcli.Failure{Class: taskfile.ClassBudgetExhausted, Code: agentcli.CodeDeadline,
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
		if r.lane == nil && resumeAt.Sub(now) <= shortQuotaWait(def) {
			return r.waitOutQuota(ctx, t, at.n-1, resumeAt)
		}
		return r.park(ctx, t, at.n-1, resumeAt)
	}
	// Every rung is disabled: the task fails with the class that disabled the last one.
	f := &agentcli.Failure{Class: taskfile.ClassAgentMissing, Code: "all_agents_disabled", Message: "every agent of the task is disabled for this run"}
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
	for k, v := range agentcli.PresetEnv(at.agent.Preset) {
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
		return r.event(tx, t.ID, n, store.EventEffectRecorded, store.EffectRecordedPayload{
			Effect: e.ID, Name: e.Name, Idempotent: false, Implicit: true, DeliveryID: e.DeliveryID})
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
