package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/store/storetest"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func openDB(t testing.TB) (*store.DB, *storetest.Clock) {
	t.Helper()
	clock := storetest.NewClock(t0)
	return storetest.OpenTemp(t, store.WithClock(clock.Now)), clock
}

func update(t testing.TB, db *store.DB, fn func(tx *store.Tx) error) {
	t.Helper()
	if err := db.Update(context.Background(), fn); err != nil {
		t.Fatalf("update: %v", err)
	}
}

func view(t *testing.T, db *store.DB, fn func(tx *store.Tx) error) {
	t.Helper()
	if err := db.View(context.Background(), fn); err != nil {
		t.Fatalf("view: %v", err)
	}
}

// newRun is a run of two tasks, b needing a.
func newRun(id string) *store.Run {
	return &store.Run{
		ID: id, Worktree: "/w", GitDir: "/w/.git", TaskFile: "mulligan.yaml",
		TaskFileHash: "sha256:00", TaskFileContent: []byte("version: 1\n"),
		BaseRef: "refs/mulligan/runs/" + id + "/base", BaseTree: "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
		Tasks: []store.Task{{ID: "a"}, {ID: "b", Needs: []string{"a"}}},
	}
}

func insertRun(t *testing.T, db *store.DB, r *store.Run) {
	t.Helper()
	update(t, db, func(tx *store.Tx) error { return tx.InsertRun(r) })
}

func getRun(t *testing.T, db *store.DB, id string) *store.Run {
	t.Helper()
	var r *store.Run
	view(t, db, func(tx *store.Tx) (err error) {
		r, err = tx.GetRun(id)
		return err
	})
	return r
}

var ctx = context.Background()

// setState puts a task in state without a transition (no event, no hook): the state a test
// starts a transition from.
func setState(t testing.TB, tx *store.Tx, run, task, state string) {
	t.Helper()
	if err := tx.SetTaskStateForTest(run, task, state); err != nil {
		t.Fatal(err)
	}
}

func runTo(tx *store.Tx, run, state, reason string) error {
	_, err := tx.TransitionRun(run, store.RunTransition{To: store.RunState(state), Reason: reason})
	return err
}

func taskTo(tx *store.Tx, run, task, state, reason string, resumeAt *time.Time) error {
	_, err := tx.TransitionTask(run, task, store.TaskTransition{To: store.TaskState(state), Reason: reason, ResumeAt: resumeAt})
	return err
}
