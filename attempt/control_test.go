package attempt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"

	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// testEnv is a fresh repository (made with go-git: no git binary, no user configuration) and
// its database, with the runner's polling made fast.
func testEnv(t *testing.T) Env {
	t.Helper()
	dir := t.TempDir()
	if _, err := git.PlainInit(dir, false); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	repo, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { repo.Close() })
	db, err := store.Open(store.DefaultPath(repo.CommonDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return Env{Repo: repo, DB: db, HeartbeatEvery: 20 * time.Millisecond, ControlEvery: 20 * time.Millisecond,
		Grace: 200 * time.Millisecond, Environ: os.Environ()}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func countEvents(t *testing.T, db *store.DB, run string) int {
	t.Helper()
	var n int
	if err := db.View(context.Background(), func(tx *store.Tx) error {
		evs, err := tx.Events(run, 0, 0)
		n = len(evs)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestKillFencesRunner kills a run whose process cannot be signalled (here: it is this test's
// own process, as a runner on another host would be): the fence alone must stop it. The
// runner notices at its next heartbeat, ends its agent and stops with ErrFenced, and nothing it
// tries afterwards lands: not its attempt record, not an event, not its post snapshot ref.
func TestKillFencesRunner(t *testing.T) {
	env := testEnv(t)
	started := filepath.Join(t.TempDir(), "started")
	f, err := taskfile.Parse("kill.yaml", []byte(`version: 1
agents:
  sh: {command: [sh, -c, "echo half > half.txt; echo > `+started+`; exec sleep 30"]}
tasks:
  - {id: main, prompt: p, agent: sh}
`))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		out *Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := Start(context.Background(), env, StartOptions{File: f, ID: "k1ll"})
		done <- result{out, err}
	}()
	waitFor(t, "the agent to start", func() bool { _, err := os.Stat(started); return err == nil })
	waitFor(t, "the attempt's process group to be recorded", func() bool {
		var pg map[string][]int
		env.DB.View(context.Background(), func(tx *store.Tx) error {
			run, err := tx.GetRun("k1ll")
			if err != nil {
				return err
			}
			pg, err = attemptGroups(tx, run)
			return err
		})
		return len(pg["main@1"]) == 1 && pg["main@1"][0] > 1
	})

	var signalled []int
	res, err := Kill(context.Background(), env, KillOptions{RunID: "k1ll", Wait: time.Second,
		Signal: func(pid int, sig syscall.Signal) error { signalled = append(signalled, pid); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if res.PID != 0 || len(signalled) != 1 || signalled[0] >= 0 {
		t.Fatalf("kill signalled %v (runner pid %d); want only the agent's group (this process is the runner)", signalled, res.PID)
	}
	after := countEvents(t, env.DB, "k1ll")
	var killed *store.Run
	env.DB.View(context.Background(), func(tx *store.Tx) error { killed, err = tx.GetRun("k1ll"); return err })
	postRef := killed.Tasks[0].Attempts[0].Ref
	postCommit, err := env.Repo.Ref(postRef)
	if err != nil {
		t.Fatal(err)
	}

	var r result
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the fenced runner did not stop")
	}
	if !errors.Is(r.err, store.ErrFenced) || r.out != nil {
		t.Fatalf("fenced runner returned %v, %v; want ErrFenced", r.out, r.err)
	}
	if n := countEvents(t, env.DB, "k1ll"); n != after {
		t.Errorf("the fenced runner appended %d events after kill", n-after)
	}
	var run *store.Run
	env.DB.View(context.Background(), func(tx *store.Tx) error { run, err = tx.GetRun("k1ll"); return err })
	a := run.Tasks[0].Attempts[0]
	if run.State != store.RunCancelled || run.Reason != ReasonOperatorKill || a.State != store.AttemptCancelled ||
		a.Class != string(taskfile.ClassCancellation) || a.Code != CodeKilled || len(run.Tasks[0].Attempts) != 1 {
		t.Errorf("after kill: run %s (%s), attempt %s %s/%s; want cancelled (operator-kill), attempt cancelled cancellation/killed",
			run.State, run.Reason, a.State, a.Class, a.Code)
	}
	if a.FilesChanged == nil || *a.FilesChanged != 1 {
		t.Errorf("files_changed = %v, want 1 (half.txt)", a.FilesChanged)
	}
	if c, err := env.Repo.Ref(postRef); err != nil || c != postCommit {
		t.Errorf("post ref %s = %v, %v after the fenced runner stopped; kill wrote %v", postRef, c, err, postCommit)
	}
	if _, err := os.Stat(filepath.Join(env.Repo.Root(), "half.txt")); err != nil {
		t.Errorf("kill must leave the tree as the agent left it: %v", err)
	}
}
