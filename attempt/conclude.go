package attempt

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

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
	r.lastPost.changed = at.changed

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
	if failure != nil && agentcli.Fingerprinted(failure.Class) {
		out := at.pr.Tail
		if failure.Class == taskfile.ClassQualityRejection {
			out = readTail(VerifyLogPath(at.logPath), 64<<10)
		}
		at.fingerprint = agentcli.Fingerprint(failure, out, at.postTree.String())
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
	if failure != nil && failure.NoRetry && !disablesAgent(failure) && decision.Action == ActFail &&
		!slices.Contains(def.NonRetryable, failure.Class) && r.anotherRungNext(at) {
		// A wall a retry would meet again (the model's context window, the CLI's turn limit, a
		// flag it refuses) is this agent's: the next rung is another agent, which may not meet
		// it, so the chain moves on to it, outside the retry budget, as it does past a disabled
		// agent. The agent stays enabled: another task may fit it. (A class the task lists as
		// non_retryable is not tried again on any rung.)
		decision = Decision{Action: ActFailover, Reason: ReasonFailover, Failure: failure}
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
	a.AgentSession = at.usage.session
	if !failedBeforeWork(at) {
		a.AgentResume = agentcli.ResumeCommand(at.agent.Preset, at.usage.session)
	}
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
		if nothingChanged(at) {
			tr.Reason = ReasonNothingChanged
		}
		if r.inWorktree {
			// An isolated task succeeds once its change is in the working tree (applyIsolated).
			tr.To, tr.Reason = store.TaskRunning, ReasonApplying
		}
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

func applyFailure(a *store.Attempt, f *agentcli.Failure) {
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

func attemptMessage(run, task string, n int, state string, f *agentcli.Failure) string {
	subject := fmt.Sprintf("mulligan %s %s@%d %s", run, task, n, state)
	body := fmt.Sprintf("Run %s, task %s, attempt %d: %s.", run, task, n, state)
	if f != nil {
		subject += " (" + string(f.Class) + ")"
		body += fmt.Sprintf("\nclass: %s\ncode: %s\nmessage: %s", f.Class, f.Code, oneLine(f.Message))
	}
	return subject + "\n\n" + body + "\n"
}

// ReasonNothingChanged marks a task that succeeded without changing a file, with no verify to
// say it had nothing to change: an agent whose edits went nowhere (refused without a word, or
// written outside the tree) looks like this. It stays succeeded, with an attention mark on the
// terminal, in show and in `tasks --state attention`.
const ReasonNothingChanged = store.ReasonNothingChanged

// nothingChanged: a prompt task's attempt succeeded with no file changed and no verify.
func nothingChanged(at *attemptRun) bool {
	return len(at.changed) == 0 && at.def.Verify == nil && (at.def.Prompt != "" || at.def.PromptFile != "")
}

// failedBeforeWork: the agent stopped before it did anything — not logged in, not installed, out
// of quota or credit, or its provider overloaded or erring, with no file changed and no word
// written — so its session holds nothing to continue and `show` offers no command that resumes
// it. (A quota or a 529 hit halfway through the work leaves a session worth resuming.)
func failedBeforeWork(at *attemptRun) bool {
	if at.failure == nil {
		return false
	}
	switch at.failure.Class {
	case taskfile.ClassAuth, taskfile.ClassAgentMissing:
		return true
	case taskfile.ClassQuota, taskfile.ClassTransport:
		return len(at.changed) == 0 && (at.usage.out == nil || *at.usage.out == 0)
	}
	return false
}

// anotherRungNext: the rung the next attempt of at's task would run on (this attempt counted)
// is an agent other than at's.
func (r *runner) anotherRungNext(at *attemptRun) bool {
	rung := at.counted + 1
	if r.lane != nil {
		rung = laneRung(r.lane.n, at.counted+1, len(at.def.Agents))
	}
	name, ok := pickAgent(at.def.Agents, rung, at.disabled)
	return ok && name != at.agentName
}
