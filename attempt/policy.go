package attempt

import (
	"fmt"
	"slices"
	"time"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// Action is what the policy decides after an attempt.
type Action int

const (
	ActSucceed Action = iota // the task succeeded
	ActRetry                 // another attempt after Delay
	ActFail                  // the task ends failed
	ActBlock                 // the task is held blocked for a decision (Reason says why)
	ActCancel                // the task ends cancelled
	// ActQuota: a quota wall. Not an attempt: the chain moves to a rung that is not quota-blocked,
	// or the task parks in waiting_quota until the reset.
	ActQuota
	// ActFailover: the agent is disabled (auth, agent_missing), or met a wall a retry would meet
	// again (Failure.NoRetry) and the next rung is another agent: the next attempt runs there at
	// once, outside the retry budget.
	ActFailover
	// ActPark: every enabled rung is quota-blocked; the task and run wait for the reset.
	ActPark
)

// Block reasons (task.state_changed's reason).
const (
	ReasonAsk              = "ask"
	ReasonRetriesExhausted = "retries-exhausted"
	ReasonCircuitTripped   = "circuit-tripped"
	ReasonDepsFailed       = "deps-failed"
	ReasonNotRetryable     = "not-retryable"
	ReasonRestoreConflict  = "restore-conflict"
	ReasonResumeExhausted  = "resume-exhausted"
	ReasonQuota            = "quota"
	ReasonFailover         = "failover"
	// ReasonBilling: the agent has no credit left and no other rung can run (SPEC §4 Failure
	// classes: quota, code billing): no reset lifts it, a person does.
	ReasonBilling = agentcli.CodeBilling
)

// Counters are a task's running tallies the policy reads.
type Counters struct {
	RetriesUsed         int // automatic retries already scheduled
	ConsecutiveFailures int // counted failures in a row, this one included
}

// Decision is the policy's verdict on one finished attempt.
type Decision struct {
	Action  Action
	Reason  string
	Delay   time.Duration
	Failure *agentcli.Failure // the failure as finally recorded (a retry past the deadline becomes budget_exhausted)
}

// Decide applies SPEC §4's policy to a finished attempt. failure is nil for a success. now and
// deadlineAt (zero: no deadline) bound the next retry; rnd is the jitter source.
func Decide(t *taskfile.Task, failure *agentcli.Failure, c Counters, now, deadlineAt time.Time, rnd func() float64) Decision {
	if failure == nil {
		return Decision{Action: ActSucceed}
	}
	if failure.Class == taskfile.ClassCancellation {
		return Decision{Action: ActCancel, Failure: failure}
	}
	if failure.Class == taskfile.ClassQuota && failure.Code == agentcli.CodeBilling {
		// No clock lifts it: the agent is disabled for the run (the chain moves on, or the
		// task is held for a person to add credit); nothing is parked to resume on an invented
		// reset time.
		return Decision{Action: ActBlock, Reason: ReasonBilling, Failure: failure}
	}
	if failure.Class == taskfile.ClassQuota {
		// No retry budget is spent against a quota wall, whatever on_failure says.
		return Decision{Action: ActQuota, Reason: ReasonQuota, Failure: failure}
	}
	eligible := failure.RetryEligible
	switch t.OnFailure {
	case taskfile.OnFailureAsk:
		// Operator prompts count toward the breaker like automatic retries do.
		if c.ConsecutiveFailures >= t.MaxConsecutiveFailures {
			return Decision{Action: ActBlock, Reason: ReasonCircuitTripped, Failure: failure}
		}
		return Decision{Action: ActBlock, Reason: ReasonAsk, Failure: failure}
	case taskfile.OnFailureRetry:
		if !eligible {
			return Decision{Action: ActFail, Reason: ReasonNotRetryable, Failure: failure}
		}
		if c.RetriesUsed >= t.Retries {
			return Decision{Action: ActBlock, Reason: ReasonRetriesExhausted, Failure: failure}
		}
		if c.ConsecutiveFailures >= t.MaxConsecutiveFailures {
			return Decision{Action: ActBlock, Reason: ReasonCircuitTripped, Failure: failure}
		}
		delay := t.Backoff.Delay(c.RetriesUsed+1, failure.RetryAfter, rnd)
		if !deadlineAt.IsZero() && now.Add(delay).After(deadlineAt) {
			exhausted := *failure
			exhausted.Class = taskfile.ClassBudgetExhausted
			exhausted.Code = agentcli.CodeDeadline
			exhausted.Message = fmt.Sprintf("the deadline passes before retry %d could start (after %s: %s)",
				c.RetriesUsed+1, failure.Class, failure.Message)
			exhausted.RetryEligible = false
			return Decision{Action: ActFail, Reason: string(taskfile.ClassBudgetExhausted), Failure: &exhausted}
		}
		return Decision{Action: ActRetry, Delay: delay, Failure: failure}
	default:
		return Decision{Action: ActFail, Failure: failure}
	}
}

// disablesAgent: the failure says this agent cannot work for the rest of the run (auth, a missing
// command, no credit left): it is disabled and the chain moves on.
func disablesAgent(f *agentcli.Failure) bool {
	return f.Class == taskfile.ClassAuth || f.Class == taskfile.ClassAgentMissing || (f.Class == taskfile.ClassQuota && f.Code == agentcli.CodeBilling)
}

// WhyNotRetried says, for a decision that ends or holds a task after a failure, why no automatic
// retry follows and which task-file key (or command) changes that; "" for a decision that
// retries, succeeds or is not about a failure. run and task name the address in commands.
func WhyNotRetried(t *taskfile.Task, d Decision, run string) string {
	f := d.Failure
	if f == nil {
		return ""
	}
	retryTask := fmt.Sprintf("mulligan retry-task %s %s", run, t.ID)
	// (A run keeps the task file it started with: an edit of it counts with --reload.)
	reload := retryTask + " --reload"
	switch d.Action {
	case ActFail:
		switch {
		case f.Class == taskfile.ClassBudgetExhausted && f.Code == agentcli.CodeDeadline:
			return fmt.Sprintf("the task's `deadline` (%s) would pass before the next attempt: raise it, then %s", t.Deadline, reload)
		case f.Class == taskfile.ClassBudgetExhausted && f.Code == agentcli.CodeRunMaxCost:
			return "the run's `--max-cost` is spent: a run keeps the limit it started with, so start the task again in a new run with a higher one (mulligan run --max-cost USD)"
		case f.Class == taskfile.ClassBudgetExhausted:
			return "the spend limit is reached: raise `max_cost_usd`, then " + reload
		case disablesAgent(f):
			return fmt.Sprintf("%s is never retried (the agent is disabled for the run): fix it, then %s", f.Class, retryTask)
		case t.OnFailure != taskfile.OnFailureRetry:
			return fmt.Sprintf("`on_failure` is %s: set `on_failure: retry` and `retries: N` to retry it", t.OnFailure)
		case slices.Contains(t.NonRetryable, f.Class):
			return fmt.Sprintf("`non_retryable` lists %s: take it out to retry it", f.Class)
		case f.NoRetry:
			return "a retry would meet the same wall: change what the hint names, then " + retryTask
		case f.Class == taskfile.ClassPayloadDeclared || f.Class == taskfile.ClassSchemaInvalid:
			return fmt.Sprintf("%s is not retried by default: add it to `retry_on` to retry it", f.Class)
		}
		return fmt.Sprintf("%s is never retried", f.Class)
	case ActBlock:
		switch d.Reason {
		case ReasonAsk:
			return fmt.Sprintf("`on_failure` is ask: decide with mulligan prompt %s/%s TEXT, mulligan stop %s/%s or %s", run, t.ID, run, t.ID, retryTask)
		case ReasonRetriesExhausted:
			return fmt.Sprintf("all %d retries are used: raise `retries` (then %s), or %s for a fresh budget", t.Retries, reload, retryTask)
		case ReasonCircuitTripped:
			return fmt.Sprintf("%d failures in a row reached `max_consecutive_failures`: raise it (then %s), or %s for a fresh budget", t.MaxConsecutiveFailures, reload, retryTask)
		case ReasonBilling:
			return fmt.Sprintf("the agent has no credit left, which no retry or reset lifts: add credit to its account (or another agent to the chain, `agent: [...]`), then %s", retryTask)
		case ReasonNoProgress:
			return fmt.Sprintf("the same failure repeated `max_identical_failures` (%d) times: change the prompt (mulligan prompt %s/%s TEXT) or %s", t.MaxIdenticalFailures, run, t.ID, retryTask)
		}
	}
	return ""
}
