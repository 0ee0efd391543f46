package attempt

import (
	"context"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/proc"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// executeAttempt runs the agent within the attempt's limits (its timeout, what remains of the
// task's deadline), classifies what it did, runs the output checks of an exit 0, takes the post
// tree and then runs verify.
func (r *runner) executeAttempt(ctx context.Context, at *attemptRun) error {
	def, t, n := at.def, at.t, at.n
	// The attempt's limits: its timeout (the preset's default when the task sets none), and what
	// remains of the task's deadline.
	timeout, heartbeat := agentcli.AgentLimits(def)
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
	at.presetInfo = agentcli.PresetFor(at.agent.Preset)
	shown := &progressWriter{w: at.log, p: r.env.Progress, task: t.ID, n: n, render: at.presetInfo.NewRenderer()}
	at.spec = proc.Spec{
		Argv: at.argv, Dir: r.env.Repo.Root(), Env: at.envv, Timeout: timeout, Heartbeat: heartbeat,
		Grace: r.env.Grace, Output: shown,
		Kill:     r.killCh,
		OnStart:  func(pgid int) { r.notePgid(ctx, t.ID, n, pgid) },
		Activity: treeWrites(r.env.Repo),
	}
	var looped func() string
	at.spec.Watch, looped = at.presetInfo.LoopWatcher()
	if looped == nil {
		looped = func() string { return "" }
	}
	silence := r.watchSilence(ctx, def, t.ID, n)
	at.spec.OnOutput = silence.output
	r.known = plumbing.ZeroHash // the agent may change anything
	at.pr = proc.Run(ctx, at.spec)
	shown.flush()
	silence.stop()
	pr := &at.pr

	obs := agentcli.Observation{
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
	var preset agentcli.PresetRules = at.presetInfo
	if r.env.Presets != nil {
		preset = r.env.Presets(at.agent)
	}
	failure := agentcli.Classify(obs, def.Classify, preset)
	at.usage.add(at.presetInfo, pr.Stdout)
	chk := &outputCheck{r: r, ctx: ctx, def: def, t: t, n: n, preset: at.presetInfo, rules: preset,
		spec: at.spec, prepare: func(prompt, promptFile string) ([]string, []string, error) {
			return r.agentCommand(at, prompt, promptFile)
		},
		prompt: at.prompt, dir: at.dir, outputFile: at.outputFile, log: at.log, usage: &at.usage, deadlineAt: at.deadlineAt}
	if failure == nil {
		// Exit 0: the output checks (result contract, schema with its correction calls).
		failure = chk.run(pr.Stdout)
	}
	// The tree the attempt left is taken before verify runs (SPEC §4.3): what a test or build
	// command writes is not the agent's work and does not belong in the attempt's ref.
	// An isolated attempt whose worktree vanished left nothing: its post is its pre, and it fails.
	var err error
	gone := r.worktreeGone(t.ID)
	if gone == nil {
		at.postTree, err = r.currentTree(ctx)
		gone = r.worktreeGone(t.ID) // removed while it was read
	}
	if gone != nil {
		at.postTree, at.failure, at.schemaRetries = at.pre.Tree, gone, chk.retries
		return nil
	}
	if err != nil {
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
		var won bool
		switch {
		case failure == nil && at.pre != nil && at.postTree == at.pre.Tree:
			// It changed nothing: it wins only if no other lane, still working, does the task.
			won = r.lane.race.claimIdle(ctx, r.lane.n, n)
		case failure == nil:
			won = r.lane.race.claim(r.lane.n, n)
		}
		if !won && (failure == nil || failure.Class == taskfile.ClassCancellation && r.lost(ctx)) {
			w, wn := r.lane.race.won()
			failure, at.superseded = supersededFailure(r.lane.n, w, wn, t.ID), true
		}
	}
	if failure != nil {
		switch failure.Class {
		case taskfile.ClassQuota:
			if failure.Code != agentcli.CodeBilling { // money, not time: no reset to wait for
				r.quotaReset(failure, pr.Tail, def)
			}
		case taskfile.ClassAgentMissing:
			if at.presetInfo.Install != "" && at.agent.Preset != taskfile.PresetGeneric {
				// In the message too: it is what the terminal and the autopsy's timeline show.
				failure.Hint = at.presetInfo.Install
				failure.Message += "; " + at.presetInfo.Install
			}
		}
		failure.RetryEligible = taskfile.Eligible(failure.Class, def.NonRetryable, def.RetryOn) && !failure.NoRetry
	}
	at.failure = failure
	return nil
}

// treeWrites is a heartbeat's sign of work (proc.Spec.Activity): the agent wrote in the tree
// since the last look, as the snapshot's watch of the tree counts it. nil where the tree is not
// watched: output and CPU time are then the only signs.
func treeWrites(repo *snapshot.Repo) func() bool {
	last, ok := repo.TreeEvents()
	if !ok {
		return nil
	}
	return func() bool {
		n, _ := repo.TreeEvents()
		changed := n != last
		last = n
		return changed
	}
}
