package attempt

import (
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// TestSpendPicks: the chain skips quota-blocked and disabled rungs; with every enabled rung
// blocked it parks until the first wall lifts; budgets count the attempt just finished.
func TestSpendPicks(t *testing.T) {
	now := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	sp := spend{quotaUntil: map[string]time.Time{"a": now.Add(time.Hour), "b": now.Add(10 * time.Minute), "old": now.Add(-time.Minute)}}
	disabled := map[string]store.AgentHealth{"c": {Agent: "c", Class: "auth"}}
	if _, ok := sp.parkUntil([]string{"a", "old"}, disabled, now); ok {
		t.Error("an agent whose wall has lifted is free: no park")
	}
	at, ok := sp.parkUntil([]string{"a", "b", "c"}, disabled, now)
	if !ok || !at.Equal(now.Add(10*time.Minute)) {
		t.Errorf("park until %v %v, want the first reset", at, ok)
	}
	if _, ok := sp.parkUntil([]string{"c"}, disabled, now); ok {
		t.Error("all disabled is not a park")
	}

	def := &taskfile.Task{MaxCostUSD: 1}
	sp = spend{task: 0.6}
	if f := sp.exhausted(def, 0); f != nil {
		t.Errorf("0.6 of 1: %v", f)
	}
	if f := sp.exhausted(def, 0.4); f == nil || f.Class != taskfile.ClassBudgetExhausted || f.Code != agentcli.CodeMaxCost {
		t.Errorf("1.0 of 1: %v", f)
	}
	max := 0.5
	sp = spend{run: 0.5, runMax: &max}
	if f := sp.exhausted(&taskfile.Task{}, 0); f == nil || f.Code != agentcli.CodeRunMaxCost {
		t.Errorf("run budget: %v", f)
	}
}

func TestDecideQuota(t *testing.T) {
	def := &taskfile.Task{OnFailure: taskfile.OnFailureRetry, Retries: 0, MaxConsecutiveFailures: 1}
	d := Decide(def, &agentcli.Failure{Class: taskfile.ClassQuota}, Counters{RetriesUsed: 0, ConsecutiveFailures: 5}, time.Now(), time.Time{}, func() float64 { return 0 })
	if d.Action != ActQuota {
		t.Errorf("quota with no retries left and a tripped breaker: %v, want ActQuota (no budget spent)", d.Action)
	}
}

// The wall an attempt records lifts when the output said, whenever the attempt's end was recorded:
// the next pick adds retry_after_ms to finished_at.
func TestQuotaWallKeepsResetTime(t *testing.T) {
	read := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	reset := read.Add(90 * time.Second)
	for _, recorded := range []time.Duration{0, 1500 * time.Microsecond, 2 * time.Second, 3 * time.Minute} {
		finished := read.Add(recorded)
		a := &store.Attempt{FinishedAt: &finished}
		applyFailure(a, &agentcli.Failure{Class: taskfile.ClassQuota, ResetAt: reset, RetryAfter: reset.Sub(read)})
		if a.RetryAfterMS == nil {
			t.Fatalf("recorded %s after the read: no retry_after_ms", recorded)
		}
		until := finished.Add(time.Duration(*a.RetryAfterMS) * time.Millisecond)
		want := reset
		if finished.After(reset) {
			want = finished // already lifted when recorded
		}
		if until.Before(want) || until.Sub(want) >= time.Millisecond {
			t.Errorf("recorded %s after the read: the wall lifts at %s, want %s", recorded, until, want)
		}
	}
	// Not a wall: the wait as classified.
	a := &store.Attempt{}
	applyFailure(a, &agentcli.Failure{Class: taskfile.ClassTransport, RetryAfter: 1500 * time.Millisecond})
	if a.RetryAfterMS == nil || *a.RetryAfterMS != 1500 {
		t.Errorf("transport retry_after_ms = %v, want 1500", a.RetryAfterMS)
	}
}
