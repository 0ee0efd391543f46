package attempt

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// EventQuotaLifted is the event `resume --now` appends: quota walls hit before it no longer hold
// the run's agents back.
const EventQuotaLifted = store.EventQuotaLifted

// spend is what runAttempt knows of the run's history before an attempt: the reported cost so
// far and until when each agent is behind a quota wall.
type spend struct {
	task, run  float64
	runMax     *float64
	quotaUntil map[string]time.Time
}

func (r *runner) loadSpend(tx *store.Tx, task string) (spend, error) {
	sp := spend{quotaUntil: map[string]time.Time{}}
	run, err := tx.GetRun(r.run.ID)
	if err != nil {
		return sp, err
	}
	sp.runMax = run.MaxCostUSD
	if run.CostUSD != nil {
		sp.run = *run.CostUSD
	}
	lifted, err := quotaLiftedAt(tx, r.run.ID)
	if err != nil {
		return sp, err
	}
	for _, t := range run.Tasks {
		for _, a := range t.Attempts {
			if t.ID == task && a.CostUSD != nil {
				sp.task += *a.CostUSD
			}
			// A quota wall is the agent's, whichever task ran into it.
			if a.Class != string(taskfile.ClassQuota) || a.FinishedAt == nil || a.FinishedAt.Before(lifted) {
				continue
			}
			until := *a.FinishedAt
			if a.RetryAfterMS != nil {
				until = until.Add(time.Duration(*a.RetryAfterMS) * time.Millisecond)
			}
			if until.After(sp.quotaUntil[a.Agent]) {
				sp.quotaUntil[a.Agent] = until
			}
		}
	}
	return sp, nil
}

// quotaLiftedAt is the time of the newest operator lift of the run's quota walls (`resume --now`,
// `resume --mode immediate`); zero when there is none.
func quotaLiftedAt(tx *store.Tx, run string) (time.Time, error) {
	evs, err := tx.Events(run, 0, 0)
	if err != nil {
		return time.Time{}, err
	}
	var at time.Time
	for _, ev := range evs {
		lift := ev.Type == EventQuotaLifted
		if ev.Type == store.EventTaskStateChanged {
			var p store.TaskStateChanged
			if ev.Decode(&p) == nil && p.From == store.TaskWaitingQuota && p.Reason == "resume-"+ResumeImmediate {
				lift = true
			}
		}
		if lift && ev.Time.After(at) {
			at = ev.Time
		}
	}
	return at, nil
}

// exhausted returns the budget_exhausted failure when the task's or the run's reported spend,
// with extra (the attempt just finished) added, has reached its limit.
func (sp spend) exhausted(def *taskfile.Task, extra float64) *agentcli.Failure {
	if def.MaxCostUSD > 0 && sp.task+extra >= def.MaxCostUSD {
		return &agentcli.Failure{Class: taskfile.ClassBudgetExhausted, Code: agentcli.CodeMaxCost,
			Message: fmt.Sprintf("the task's reported spend $%.4f reached its max_cost_usd $%.2f", sp.task+extra, def.MaxCostUSD),
			Hint:    "raise max_cost_usd in the task file, then mulligan retry-task RUN TASK --reload (the run keeps the file it started with)"}
	}
	if sp.runMax != nil && *sp.runMax > 0 && sp.run+extra >= *sp.runMax {
		return &agentcli.Failure{Class: taskfile.ClassBudgetExhausted, Code: agentcli.CodeRunMaxCost,
			Message: fmt.Sprintf("the run's reported spend $%.4f reached --max-cost $%.2f", sp.run+extra, *sp.runMax)}
	}
	return nil
}

// parkUntil returns when the first of the chain's enabled agents comes out of its quota wall,
// and false when no enabled agent is quota-blocked (then the chain is simply all disabled).
func (sp spend) parkUntil(chain []string, disabled map[string]store.AgentHealth, now time.Time) (time.Time, bool) {
	var first time.Time
	for _, a := range chain {
		if _, off := disabled[a]; off {
			continue
		}
		until, ok := sp.quotaUntil[a]
		if !ok || !until.After(now) {
			return time.Time{}, false
		}
		if first.IsZero() || until.Before(first) {
			first = until
		}
	}
	return first, !first.IsZero()
}

// quotaReset fills in when a quota wall lifts: a classify rule's retry_after, else the time the
// banner names, else the default wait.
func (r *runner) quotaReset(f *agentcli.Failure, tail []byte, def *taskfile.Task) {
	now := r.env.Now()
	var until time.Time
	switch {
	case f.Code == agentcli.CodeUserRule && f.RetryAfter > 0:
		until = now.Add(f.RetryAfter)
	case !f.ResetAt.IsZero() && f.ResetAt.After(now) && f.ResetAt.Sub(now) <= agentcli.MaxQuotaWait:
		until = f.ResetAt // the preset read it from the CLI's JSON (resetsAt)
	default:
		text := tail
		if len(text) > 4<<10 {
			text = text[len(text)-4<<10:]
		}
		if t, ok := agentcli.ParseQuotaReset(string(text), now); ok {
			until = t
		} else {
			until = now.Add(agentcli.QuotaDefaultWait())
			f.Message += " (the output names no reset time: waiting " + agentcli.QuotaDefaultWait().String() + ")"
		}
	}
	f.ResetAt = until.UTC()
	if !strings.Contains(f.Message, "waiting ") {
		f.Message += " (resets " + f.ResetAt.Format(time.RFC3339) + ")"
	}
	f.RetryAfter = until.Sub(now).Round(time.Millisecond)
	if f.RetryAfter < time.Millisecond {
		f.RetryAfter = time.Millisecond
	}
	f.Hint = "mulligan parks the task until " + f.ResetAt.Format(time.RFC3339) + " when no other agent of its chain is free"
	if r.lane == nil && f.RetryAfter <= shortQuotaWait(def) {
		f.Hint = "mulligan waits until " + f.ResetAt.Format(time.RFC3339) + " (a short reset) when no other agent of its chain is free, then goes on"
	}
}

// shortQuotaWait is the longest quota reset a run waits out in its own process instead of
// parking: the task's backoff `max` (5m by default), the longest it already waits between
// attempts. A per-minute rate limit ("retry in 2s", Retry-After: 20) lifts well within it; an
// hourly or daily wall does not and parks the run, for supervise to take up.
func shortQuotaWait(def *taskfile.Task) time.Duration {
	return def.Backoff.Max
}

// waitOutQuota waits out a short quota wall (shortQuotaWait) as a backoff: the task shows backoff
// (reason quota) until resumeAt, runAttempts waits there as for a retry's delay (Ctrl-C or a pause
// stops the wait and leaves the run resumable), and the next pick finds the rung free. Not an
// attempt, and no retry spent: the wall's attempt does not count.
func (r *runner) waitOutQuota(ctx context.Context, t *store.Task, n int, resumeAt time.Time) (*attemptResult, error) {
	resumeAt = resumeAt.UTC()
	if err := r.update(ctx, func(tx *store.Tx) error {
		_, err := tx.TransitionTask(r.run.ID, t.ID, store.TaskTransition{To: store.TaskBackoff, Reason: ReasonQuota, Attempt: n, ResumeAt: &resumeAt})
		return err
	}); err != nil {
		return nil, err
	}
	t.State, t.Reason, t.ResumeAt = store.TaskBackoff, ReasonQuota, &resumeAt
	wait := resumeAt.Sub(r.env.Now()).Round(100 * time.Millisecond)
	r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: fmt.Sprintf(
		"every agent of the chain is behind a quota wall that lifts in %s: waiting until %s (Ctrl-C pauses the run)", wait, resumeAt.Format(time.RFC3339))})
	return &attemptResult{n: n, decision: Decision{Action: ActQuota, Reason: ReasonQuota}}, nil
}

// park holds the task and (through runTask) the run in waiting_quota until resumeAt.
func (r *runner) park(ctx context.Context, t *store.Task, n int, resumeAt time.Time) (*attemptResult, error) {
	resumeAt = resumeAt.UTC()
	if r.lane != nil {
		// Only this lane waits: the others race on, and the race parks the task if none wins.
		if err := r.update(ctx, func(tx *store.Tx) error {
			return r.event(tx, t.ID, n, store.EventLaneParked, store.LaneParked{Lane: r.lane.n, ResumeAt: resumeAt})
		}); err != nil {
			return nil, err
		}
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: fmt.Sprintf(
			"lane %d: every agent it can run is behind a quota wall until %s: the lane stops, the others race on", r.lane.n, resumeAt.Format(time.RFC3339))})
		return &attemptResult{n: n, decision: Decision{Action: ActPark, Reason: ReasonQuota}, resumeAt: resumeAt}, nil
	}
	if err := r.update(ctx, func(tx *store.Tx) error {
		_, err := tx.TransitionTask(r.run.ID, t.ID, store.TaskTransition{To: store.TaskWaitingQuota, Reason: ReasonQuota, ResumeAt: &resumeAt})
		return err
	}); err != nil {
		return nil, err
	}
	t.State, t.Reason, t.ResumeAt = store.TaskWaitingQuota, ReasonQuota, &resumeAt
	r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID,
		Message: "every agent of the chain is behind a quota wall: parked until " + resumeAt.Format(time.RFC3339)})
	return &attemptResult{n: n, decision: Decision{Action: ActPark, Reason: ReasonQuota}}, nil
}

// failBeforeAttempt ends the task failed with f without starting attempt n (a spent budget).
func (r *runner) failBeforeAttempt(ctx context.Context, t *store.Task, base plumbing.Hash, n int, f *agentcli.Failure) (*attemptResult, error) {
	if r.lane != nil {
		// The lane ends; the race decides for the task once every lane has.
		return &attemptResult{n: n - 1, decision: Decision{Action: ActFail, Reason: string(f.Class), Failure: f}}, nil
	}
	if err := r.resetTask(ctx, t.ID, r.file.Task(t.ID), base); err != nil {
		return r.blockOnRestore(ctx, t, n-1, err)
	}
	if err := r.update(ctx, func(tx *store.Tx) error {
		return r.transitionTask(tx, t, store.TaskTransition{To: store.TaskFailed, Reason: string(f.Class),
			Event: store.TaskStateChanged{Class: string(f.Class), Code: f.Code, Message: f.Message}})
	}); err != nil {
		return nil, err
	}
	return &attemptResult{n: n - 1, decision: Decision{Action: ActFail, Reason: string(f.Class), Failure: f}}, nil
}
