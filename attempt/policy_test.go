package attempt

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/taskfile"
)

func policyTask(onFailure string, retries, breaker int) *taskfile.Task {
	return &taskfile.Task{ID: "t", OnFailure: onFailure, Retries: retries, MaxConsecutiveFailures: breaker,
		Backoff: taskfile.Backoff{Kind: "fixed", Initial: time.Second, Max: time.Minute, Jitter: "none"}}
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fail := &agentcli.Failure{Class: taskfile.ClassAgentExit, Message: "exit 1", RetryEligible: true}
	notEligible := &agentcli.Failure{Class: taskfile.ClassAgentMissing, Message: "no such agent", RetryEligible: false}
	half := func() float64 { return 0.5 }
	cases := []struct {
		name     string
		task     *taskfile.Task
		failure  *agentcli.Failure
		c        Counters
		deadline time.Time
		action   Action
		reason   string
		class    taskfile.Class
	}{
		{"success", policyTask("retry", 2, 3), nil, Counters{}, time.Time{}, ActSucceed, "", ""},
		{"fail policy", policyTask("fail", 0, 3), fail, Counters{ConsecutiveFailures: 1}, time.Time{}, ActFail, "", taskfile.ClassAgentExit},
		{"ask policy", policyTask("ask", 0, 3), fail, Counters{ConsecutiveFailures: 1}, time.Time{}, ActBlock, ReasonAsk, taskfile.ClassAgentExit},
		{"ask holds even a not-eligible failure", policyTask("ask", 0, 3), notEligible, Counters{ConsecutiveFailures: 1}, time.Time{}, ActBlock, ReasonAsk, taskfile.ClassAgentMissing},
		{"retry", policyTask("retry", 2, 3), fail, Counters{ConsecutiveFailures: 1}, time.Time{}, ActRetry, "", taskfile.ClassAgentExit},
		{"retry not eligible", policyTask("retry", 2, 3), notEligible, Counters{ConsecutiveFailures: 1}, time.Time{}, ActFail, ReasonNotRetryable, taskfile.ClassAgentMissing},
		{"retries exhausted", policyTask("retry", 2, 10), fail, Counters{RetriesUsed: 2, ConsecutiveFailures: 3}, time.Time{}, ActBlock, ReasonRetriesExhausted, taskfile.ClassAgentExit},
		{"breaker", policyTask("retry", 5, 2), fail, Counters{RetriesUsed: 1, ConsecutiveFailures: 2}, time.Time{}, ActBlock, ReasonCircuitTripped, taskfile.ClassAgentExit},
		{"deadline", policyTask("retry", 5, 9), fail, Counters{ConsecutiveFailures: 1}, now.Add(500 * time.Millisecond), ActFail, "budget_exhausted", taskfile.ClassBudgetExhausted},
		{"deadline not yet", policyTask("retry", 5, 9), fail, Counters{ConsecutiveFailures: 1}, now.Add(time.Hour), ActRetry, "", taskfile.ClassAgentExit},
		{"cancel", policyTask("retry", 5, 9), &agentcli.Failure{Class: taskfile.ClassCancellation}, Counters{}, time.Time{}, ActCancel, "", taskfile.ClassCancellation},
		// no credit: held for a person under any policy, never parked on an invented reset
		{"billing", policyTask("retry", 5, 9), &agentcli.Failure{Class: taskfile.ClassQuota, Code: agentcli.CodeBilling}, Counters{}, time.Time{}, ActBlock, ReasonBilling, taskfile.ClassQuota},
		{"billing under fail", policyTask("fail", 0, 3), &agentcli.Failure{Class: taskfile.ClassQuota, Code: agentcli.CodeBilling}, Counters{}, time.Time{}, ActBlock, ReasonBilling, taskfile.ClassQuota},
		{"usage limit parks", policyTask("fail", 0, 3), &agentcli.Failure{Class: taskfile.ClassQuota, Code: "usage_limit"}, Counters{}, time.Time{}, ActQuota, ReasonQuota, taskfile.ClassQuota},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.task, tc.failure, tc.c, now, tc.deadline, half)
			if d.Action != tc.action || d.Reason != tc.reason {
				t.Fatalf("got action %d reason %q, want %d %q", d.Action, d.Reason, tc.action, tc.reason)
			}
			if tc.failure != nil && d.Failure.Class != tc.class {
				t.Fatalf("class %s, want %s", d.Failure.Class, tc.class)
			}
			if d.Action == ActRetry && d.Delay != time.Second {
				t.Fatalf("delay %v, want the fixed 1s", d.Delay)
			}
		})
	}
}

func TestDecideRetryAfterFloor(t *testing.T) {
	f := &agentcli.Failure{Class: taskfile.ClassTransport, RetryEligible: true, RetryAfter: time.Minute}
	d := Decide(policyTask("retry", 3, 3), f, Counters{ConsecutiveFailures: 1}, time.Now(), time.Time{}, func() float64 { return 0 })
	if d.Action != ActRetry || d.Delay != time.Minute {
		t.Fatalf("got %v %v, want a retry after the 1m floor", d.Action, d.Delay)
	}
}

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct{ files, want int }{
		{0, 100}, {1, 100}, {10_000, 100}, {20_000, 50}, {50_000, 20}, {100_000, 10}, {1_000_000, 10},
	} {
		if got := gcPercentFor(c.files); got != c.want {
			t.Errorf("gcPercentFor(%d) = %d, want %d", c.files, got, c.want)
		}
	}
}

// gcPercent reads the collector's target without changing it.
func gcPercent() int {
	pct := debug.SetGCPercent(100)
	debug.SetGCPercent(pct)
	return pct
}

func TestTuneGCAndBack(t *testing.T) {
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	pct0 := gcPercent()
	restore := tuneGC(100_000)
	if pct := gcPercent(); pct != runGCPercent {
		t.Fatalf("tuned for 100k files: GOGC %d, want %d", pct, runGCPercent)
	}
	restore()
	if pct := gcPercent(); pct != pct0 {
		t.Fatalf("after the restore: GOGC %d, want %d", pct, pct0)
	}
}

func TestTuneGCLeavesTheUsersSettings(t *testing.T) {
	pct0 := gcPercent()
	t.Setenv("GOGC", "50")
	restore := tuneGC(100_000)
	if pct := gcPercent(); pct != pct0 {
		t.Fatalf("with GOGC set: GOGC %d, want it untouched (%d)", pct, pct0)
	}
	restore()
}

// TestWhyNotRetried: every way a failure is not retried names the key (or command) that changes it.
func TestWhyNotRetried(t *testing.T) {
	qr := &agentcli.Failure{Class: taskfile.ClassQualityRejection}
	listed := policyTask("retry", 2, 3)
	listed.NonRetryable = []taskfile.Class{taskfile.ClassQualityRejection}
	deadline := policyTask("retry", 2, 3)
	deadline.Deadline = time.Hour
	for _, c := range []struct {
		name string
		task *taskfile.Task
		d    Decision
		want string
	}{
		{"on_failure fail", policyTask("fail", 0, 3), Decision{Action: ActFail, Failure: qr}, "set `on_failure: retry` and `retries: N`"},
		{"non_retryable", listed, Decision{Action: ActFail, Reason: ReasonNotRetryable, Failure: qr}, "`non_retryable` lists quality_rejection: take it out"},
		{"not by default", policyTask("retry", 2, 3), Decision{Action: ActFail, Reason: ReasonNotRetryable,
			Failure: &agentcli.Failure{Class: taskfile.ClassPayloadDeclared}}, "add it to `retry_on`"},
		{"same wall", policyTask("retry", 2, 3), Decision{Action: ActFail, Reason: ReasonNotRetryable,
			Failure: &agentcli.Failure{Class: taskfile.ClassAgentExit, NoRetry: true}}, "change what the hint names, then mulligan retry-task r1 t"},
		{"agent missing", policyTask("fail", 0, 3), Decision{Action: ActFail, Failure: &agentcli.Failure{Class: taskfile.ClassAgentMissing}},
			"agent_missing is never retried (the agent is disabled for the run)"},
		{"deadline", deadline, Decision{Action: ActFail, Failure: &agentcli.Failure{Class: taskfile.ClassBudgetExhausted, Code: agentcli.CodeDeadline}},
			"`deadline` (1h0m0s) would pass"},
		{"spend", policyTask("retry", 2, 3), Decision{Action: ActFail, Failure: &agentcli.Failure{Class: taskfile.ClassBudgetExhausted}}, "raise `max_cost_usd`"},
		{"ask", policyTask("ask", 0, 3), Decision{Action: ActBlock, Reason: ReasonAsk, Failure: qr}, "mulligan prompt r1/t TEXT, mulligan stop r1/t or mulligan retry-task r1 t"},
		{"retries", policyTask("retry", 2, 3), Decision{Action: ActBlock, Reason: ReasonRetriesExhausted, Failure: qr}, "all 2 retries are used: raise `retries`"},
		{"breaker", policyTask("retry", 5, 3), Decision{Action: ActBlock, Reason: ReasonCircuitTripped, Failure: qr}, "reached `max_consecutive_failures`"},
		{"no progress", policyTask("retry", 5, 3), Decision{Action: ActBlock, Reason: ReasonNoProgress, Failure: qr}, "`max_identical_failures`"},
		{"retried", policyTask("retry", 2, 3), Decision{Action: ActRetry, Failure: qr}, ""},
		{"success", policyTask("retry", 2, 3), Decision{Action: ActSucceed}, ""},
	} {
		got := WhyNotRetried(c.task, c.d, "r1")
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q; want %q in it", c.name, got, c.want)
		}
	}
}
