package attempt

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

func superviseDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "mulligan.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// addRun records a run owned by pid, in state, with one task; edit changes it before it is
// written.
func addRun(t *testing.T, db *store.DB, id, state string, pid int, edit func(*store.Run)) {
	t.Helper()
	run := &store.Run{ID: id, Worktree: "/wt/" + id, State: state, Owner: &store.Owner{PID: pid, Host: store.Self().Host},
		Tasks: []store.Task{{ID: "main", State: store.TaskRunning, Needs: []string{}}}}
	if edit != nil {
		edit(run)
	}
	err := db.Update(context.Background(), func(tx *store.Tx) error { return tx.InsertRun(run) })
	if err != nil {
		t.Fatal(err)
	}
}

func getRun(t *testing.T, db *store.DB, id string) *store.Run {
	t.Helper()
	var run *store.Run
	if err := db.View(context.Background(), func(tx *store.Tx) error {
		var err error
		run, err = tx.GetRun(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return run
}

const alivePID, deadPID = 1001, 1002

func fakeAlive(o store.Owner) bool { return o.PID == alivePID }

// TestSuperviseClaimRace runs two supervisors over the same dead runs, both reading the
// worklist before either claims: every run is resumed exactly once, the other supervisor is
// told it lost the claim.
func TestSuperviseClaimRace(t *testing.T) {
	db := superviseDB(t)
	ids := []string{"r1", "r2", "r3"}
	for _, id := range ids {
		addRun(t, db, id, store.RunRunning, deadPID, nil)
	}
	var mu sync.Mutex
	spawned := map[string]int{}
	barriers := map[string]*sync.WaitGroup{}
	for _, id := range ids {
		barriers[id] = &sync.WaitGroup{}
		barriers[id].Add(2)
	}
	opts := SuperviseOptions{
		Alive: fakeAlive, Slots: 10, MaxResumes: 3,
		Spawn: func(run *store.Run, epoch int64) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			spawned[run.ID]++
			return 4242, nil
		},
		// both supervisors hold here until the other has read the run too
		beforeClaim: func(run string) { barriers[run].Done(); barriers[run].Wait() },
	}
	var wg sync.WaitGroup
	results := make([][]SuperviseDecision, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ds, err := Supervise(context.Background(), db, opts)
			if err != nil {
				t.Error(err)
			}
			results[i] = ds
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if spawned[id] != 1 {
			t.Errorf("run %s resumed %d times, want once", id, spawned[id])
		}
		actions := map[string]int{}
		for _, ds := range results {
			for _, d := range ds {
				if d.Run == id {
					actions[d.Action]++
				}
			}
		}
		if actions["resume"] != 1 || actions["skip"] != 1 {
			t.Errorf("run %s: decisions %v, want one resume and one skip", id, actions)
		}
		if run := getRun(t, db, id); run.Epoch != 2 || run.Owner.PID != store.Self().PID {
			t.Errorf("run %s: epoch %d owner %d after the race, want epoch 2 owned by the winner", id, run.Epoch, run.Owner.PID)
		}
	}
}

func TestSuperviseDecisions(t *testing.T) {
	db := superviseDB(t)
	// an hour after the runs' heartbeats: every heartbeat is stale
	now := time.Now().UTC().Add(time.Hour)
	reset := now.Add(time.Hour)
	// a live owner whose heartbeat is stale is never resumed
	addRun(t, db, "stale", store.RunRunning, alivePID, nil)
	addRun(t, db, "dead", store.RunRunning, deadPID, func(r *store.Run) { r.ResumesWithoutProgress = 2 })
	addRun(t, db, "streak", store.RunRunning, deadPID, func(r *store.Run) { r.ResumesWithoutProgress = 3 })
	addRun(t, db, "quota", store.RunWaitingQuota, deadPID, func(r *store.Run) {
		r.Tasks[0].State, r.Tasks[0].ResumeAt = store.TaskWaitingQuota, &reset
	})
	addRun(t, db, "paused", store.RunPaused, deadPID, nil)

	var spawned []string
	opts := SuperviseOptions{
		Alive: fakeAlive, Slots: 10, MaxResumes: 3, StaleThreshold: 30 * time.Second,
		Now:   func() time.Time { return now },
		Spawn: func(run *store.Run, epoch int64) (int, error) { spawned = append(spawned, run.ID); return 7, nil },
	}
	sweep := func() map[string]SuperviseDecision {
		t.Helper()
		ds, err := Supervise(context.Background(), db, opts)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]SuperviseDecision{}
		for _, d := range ds {
			m[d.Run] = d
		}
		return m
	}

	// dry run: decisions, no writes, nothing started
	opts.DryRun = true
	ds := sweep()
	opts.DryRun = false
	if len(spawned) != 0 || getRun(t, db, "streak").State != store.RunRunning {
		t.Fatalf("dry run changed something: spawned %v", spawned)
	}
	if ds["dead"].Action != "resume" || !ds["dead"].DryRun || ds["streak"].Action != "block" {
		t.Errorf("dry run decisions: %+v", ds)
	}

	ds = sweep()
	if !strings.Contains(ds["stale"].Reason, "heartbeat stale but its process") {
		t.Errorf("stale: %q", ds["stale"].Reason)
	}
	want := map[string]string{"stale": "skip", "dead": "resume", "streak": "block", "quota": "skip"}
	for id, a := range want {
		if ds[id].Action != a {
			t.Errorf("%s: %s (%s), want %s", id, ds[id].Action, ds[id].Reason, a)
		}
	}
	if _, ok := ds["paused"]; ok {
		t.Errorf("a paused run was looked at: %+v", ds["paused"])
	}
	if run := getRun(t, db, "streak"); run.State != store.RunBlocked || run.Reason != ReasonResumeExhausted {
		t.Errorf("death streak: run %s (%s), want blocked (resume-exhausted)", run.State, run.Reason)
	}
	if len(spawned) != 1 || spawned[0] != "dead" {
		t.Errorf("spawned %v, want [dead]", spawned)
	}

	// A resume that never took the run over from this supervisor is started again.
	spawned = nil
	ds = sweep()
	if ds["dead"].Action != "resume" || !strings.Contains(ds["dead"].Reason, "did not take it over") {
		t.Errorf("dead, not taken over: %+v", ds["dead"])
	}
	// This time the resume takes it over (a live process claims it).
	if err := db.Update(context.Background(), func(tx *store.Tx) error {
		run, err := tx.RunHeader("dead")
		if err != nil {
			return err
		}
		_, err = tx.ClaimRun("dead", run.Epoch, store.Owner{PID: alivePID})
		return err
	}); err != nil {
		t.Fatal(err)
	}

	// The quota reset passes.
	now = reset.Add(time.Second)
	spawned = nil
	ds = sweep()
	if ds["quota"].Action != "resume" || ds["dead"].Action != "skip" || ds["streak"].Action != "" {
		t.Errorf("after the reset: %+v", ds)
	}
	if len(spawned) != 1 || spawned[0] != "quota" {
		t.Errorf("spawned %v, want [quota]", spawned)
	}
}

// TestSuperviseSlots: no more resumes start in a sweep than there are slots.
func TestSuperviseSlots(t *testing.T) {
	db := superviseDB(t)
	for _, id := range []string{"a1", "a2", "a3"} {
		addRun(t, db, id, store.RunRunning, deadPID, nil)
	}
	n := 0
	ds, err := Supervise(context.Background(), db, SuperviseOptions{Alive: fakeAlive, Slots: 2,
		Spawn: func(*store.Run, int64) (int, error) { n++; return 1, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 || len(ds) != 3 || ds[2].Action != "wait" {
		t.Errorf("started %d, decisions %+v; want 2 resumes and a wait", n, ds)
	}
}
