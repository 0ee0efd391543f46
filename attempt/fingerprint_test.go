package attempt

import (
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

func TestIdenticalInARow(t *testing.T) {
	started := time.Unix(100, 0)
	at := func(n int, state, fp string) store.Attempt {
		return store.Attempt{N: n, State: state, Fingerprint: fp, StartedAt: started.Add(time.Duration(n) * time.Second)}
	}
	for _, tc := range []struct {
		name string
		prev []store.Attempt
		want int
	}{
		{"first failure", nil, 1},
		{"once before", []store.Attempt{at(1, store.AttemptFailed, "x")}, 2},
		{"a transient failure between", []store.Attempt{at(1, store.AttemptFailed, "x"), at(2, store.AttemptFailed, "")}, 2},
		{"another failure between", []store.Attempt{at(1, store.AttemptFailed, "x"), at(2, store.AttemptFailed, "y")}, 1},
		{"a success between", []store.Attempt{at(1, store.AttemptFailed, "x"), at(2, store.AttemptSucceeded, "")}, 1},
		{"superseded", []store.Attempt{at(1, store.AttemptFailed, "x"), at(2, store.AttemptSuperseded, "y")}, 2},
		{"before a retry-task", []store.Attempt{{N: 1, State: store.AttemptFailed, Fingerprint: "x", StartedAt: started.Add(-time.Second)}}, 1},
	} {
		task := &store.Task{StartedAt: &started, Attempts: tc.prev}
		if got := identicalInARow(task, "x"); got != tc.want {
			t.Errorf("%s: %d in a row, want %d", tc.name, got, tc.want)
		}
	}
}
