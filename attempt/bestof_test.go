package attempt

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// Lane L starts on rung L-1 of the chain, wrapping around it, and climbs from there as its own
// attempts count, staying on the last rung (SPEC §4.1: "on the chain's rungs in order, wrapping").
func TestLaneRung(t *testing.T) {
	for _, tc := range []struct {
		lane, counted, chain, want int
	}{
		{1, 0, 1, 0}, {2, 0, 1, 0}, {3, 5, 1, 0}, // one agent: every lane runs it
		{1, 0, 2, 0}, {2, 0, 2, 1}, {3, 0, 2, 0}, {4, 0, 2, 1}, // two: 1 and 3 on the first, 2 and 4 on the second
		{1, 1, 2, 1}, {3, 1, 2, 1}, {2, 1, 2, 1}, {1, 7, 2, 1}, // a retry climbs, and stays on the last rung
		{1, 0, 3, 0}, {2, 0, 3, 1}, {3, 0, 3, 2}, {4, 0, 3, 0}, {5, 0, 3, 1}, {5, 1, 3, 2},
		{1, 0, 0, 0}, // no chain (not reached: the loader requires an agent)
	} {
		if got := laneRung(tc.lane, tc.counted, tc.chain); got != tc.want {
			t.Errorf("laneRung(lane %d, counted %d, chain %d) = %d, want %d", tc.lane, tc.counted, tc.chain, got, tc.want)
		}
	}
}

// A race runs every lane; after a quota wall parked the task, only the lanes whose last attempt
// hit it (the others had ended for good); with none such, every lane again.
func TestLanesToRace(t *testing.T) {
	def := &taskfile.Task{BestOf: 3}
	quota, exit := string(taskfile.ClassQuota), string(taskfile.ClassAgentExit)
	task := func(state string, as ...store.Attempt) *store.Task {
		for i := range as {
			as[i].N = i + 1
		}
		return &store.Task{State: state, Attempts: as}
	}
	for _, tc := range []struct {
		name string
		t    *store.Task
		want []int
	}{
		{"fresh", task(store.TaskPending), []int{1, 2, 3}},
		{"parked", task(store.TaskWaitingQuota,
			store.Attempt{Lane: 1, State: store.AttemptFailed, Class: quota},
			store.Attempt{Lane: 3, State: store.AttemptFailed, Class: exit},
			store.Attempt{Lane: 2, State: store.AttemptFailed, Class: exit},
			store.Attempt{Lane: 2, State: store.AttemptFailed, Class: quota}), []int{1, 2}},
		{"parked after a failure in the same lane", task(store.TaskWaitingQuota,
			store.Attempt{Lane: 1, State: store.AttemptFailed, Class: quota},
			store.Attempt{Lane: 1, State: store.AttemptFailed, Class: exit},
			store.Attempt{Lane: 2, State: store.AttemptFailed, Class: quota}), []int{2}},
		{"a superseded attempt is not the lane's last", task(store.TaskWaitingQuota,
			store.Attempt{Lane: 3, State: store.AttemptFailed, Class: quota},
			store.Attempt{Lane: 3, State: store.AttemptSuperseded, Class: string(taskfile.ClassCancellation)}), []int{3}},
		{"held otherwise: every lane", task(store.TaskBlocked,
			store.Attempt{Lane: 1, State: store.AttemptFailed, Class: quota}), []int{1, 2, 3}},
		{"parked, but no lane's last attempt hit a wall", task(store.TaskWaitingQuota,
			store.Attempt{Lane: 1, State: store.AttemptFailed, Class: exit}), []int{1, 2, 3}},
	} {
		if got := lanesToRace(def, tc.t); !slices.Equal(got, tc.want) {
			t.Errorf("%s: lanes %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The first lane to claim wins, once; the others' contexts are cancelled with errLostRace.
func TestRaceClaim(t *testing.T) {
	rc := &race{width: 3, cancels: map[int]context.CancelCauseFunc{}}
	ctxs := map[int]context.Context{}
	for l := 1; l <= 3; l++ {
		ctx, cancel := context.WithCancelCause(context.Background())
		ctxs[l], rc.cancels[l] = ctx, cancel
	}
	if w, _ := rc.won(); w != 0 {
		t.Fatalf("a winner before any claim: lane %d", w)
	}
	if !rc.claim(2, 7) {
		t.Fatal("lane 2's claim refused")
	}
	if rc.claim(3, 8) || !rc.claim(2, 7) {
		t.Error("a second claim changed the winner")
	}
	if w, n := rc.won(); w != 2 || n != 7 {
		t.Errorf("winner lane %d attempt %d, want lane 2 attempt 7", w, n)
	}
	for l, ctx := range ctxs {
		lost := errors.Is(context.Cause(ctx), errLostRace)
		if lost != (l != 2) {
			t.Errorf("lane %d: lost %v", l, lost)
		}
	}
}

// A lane that succeeded without changing a file waits while another lane still works: it is
// superseded when that lane wins, and wins once every other lane has ended without a winner.
func TestRaceClaimIdle(t *testing.T) {
	newRace := func() (*race, map[int]context.Context) {
		rc := &race{width: 3, cancels: map[int]context.CancelCauseFunc{}}
		ctxs := map[int]context.Context{}
		for l := 1; l <= 3; l++ {
			ctx, cancel := context.WithCancelCause(context.Background())
			ctxs[l], rc.cancels[l] = ctx, cancel
		}
		return rc, ctxs
	}

	// Lane 1 changed nothing; lane 2 then wins with a change: lane 1 does not win.
	rc, ctxs := newRace()
	got := make(chan bool)
	go func() { got <- rc.claimIdle(ctxs[1], 1, 1) }()
	if !rc.claim(2, 2) {
		t.Fatal("lane 2's claim refused while lane 1 waits")
	}
	if <-got {
		t.Error("the lane that changed nothing won although another lane was working")
	}

	// Lane 1 changed nothing; lanes 2 and 3 end without a win: lane 1 wins then, not before.
	rc, ctxs = newRace()
	go func() { got <- rc.claimIdle(ctxs[1], 1, 4) }()
	rc.end(2)
	select {
	case <-got:
		t.Fatal("the lane that changed nothing won while lane 3 was working")
	default:
	}
	rc.end(3)
	if !<-got {
		t.Error("the lane that changed nothing did not win once the others had ended")
	}
	if w, n := rc.won(); w != 1 || n != 4 {
		t.Errorf("winner lane %d attempt %d, want lane 1 attempt 4", w, n)
	}
}
