package attempt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// PlanApply and Execute without a CLI: an attempt's change carried onto a tree the user changed
// elsewhere, a conflict refused with nothing written, a live run's working tree refused.
func TestApplyPlan(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t)
	repo, dir := env.Repo, env.Repo.Root()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	tree := func() snapshot.Hash {
		t.Helper()
		r, err := repo.WriteTree(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return r.Tree
	}
	write("b.txt", "b\n")
	pre := tree()
	write("a.txt", "agent a\n")
	write("c.txt", "agent c\n")
	post := tree()
	if _, err := repo.Restore(ctx, pre, snapshot.RestoreOptions{NoUndoRef: true}); err != nil {
		t.Fatal(err)
	}
	addRun(t, env.DB, "r1", store.RunFailed, os.Getpid(), nil)
	a := store.Attempt{RunID: "r1", TaskID: "main", N: 1, PreTree: pre.String(), Tree: post.String(), Ref: "refs/mulligan/runs/r1/main/1/post"}

	write("b.txt", "user b\n") // the user's edit elsewhere
	p, err := PlanApply(ctx, repo, "r1", a)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, ch := range p.Changes {
		paths = append(paths, ch.Path)
	}
	if !slices.Equal(paths, []string{"a.txt", "c.txt"}) || len(p.Conflicts) != 0 {
		t.Fatalf("plan changes %v, conflicts %v; want [a.txt c.txt] and none", paths, p.Conflicts)
	}
	if read("a.txt") != "a\n" {
		t.Fatal("planning changed the working tree")
	}
	res, err := p.Execute(ctx, repo, env.DB, snapshot.UndoRef("t1"), "test")
	if err != nil {
		t.Fatal(err)
	}
	if read("a.txt") != "agent a\n" || read("c.txt") != "agent c\n" || read("b.txt") != "user b\n" {
		t.Fatalf("after apply: a=%q c=%q b=%q", read("a.txt"), read("c.txt"), read("b.txt"))
	}
	if res.Undo == nil || res.Undo.Ref != snapshot.UndoRef("t1") {
		t.Fatalf("undo ref %+v", res.Undo)
	}
	var applied bool
	env.DB.View(ctx, func(tx *store.Tx) error {
		evs, err := tx.Events("r1", 0, 0)
		for _, ev := range evs {
			applied = applied || ev.Type == EventApply
		}
		return err
	})
	if !applied {
		t.Fatal("no apply event recorded")
	}

	// The user changed a.txt otherwise: a conflict, nothing written.
	if _, err := repo.Restore(ctx, pre, snapshot.RestoreOptions{NoUndoRef: true}); err != nil {
		t.Fatal(err)
	}
	write("a.txt", "user a\n")
	if p, err = PlanApply(ctx, repo, "r1", a); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Conflicts, []string{"a.txt"}) {
		t.Fatalf("conflicts %v, want [a.txt]", p.Conflicts)
	}
	var conflict *ConflictPathsError
	if _, err := p.Execute(ctx, repo, env.DB, snapshot.UndoRef("t2"), "test"); !errors.As(err, &conflict) {
		t.Fatalf("execute with a conflict: %v", err)
	}
	if read("a.txt") != "user a\n" || fileExists(filepath.Join(dir, "c.txt")) {
		t.Fatalf("a conflicting apply wrote: a=%q c=%q", read("a.txt"), read("c.txt"))
	}

	// A run of another live process holds the working tree: refused.
	write("a.txt", "a\n")
	if p, err = PlanApply(ctx, repo, "r1", a); err != nil {
		t.Fatal(err)
	}
	addRun(t, env.DB, "live", store.RunRunning, os.Getppid(), nil)
	if err := env.DB.Update(ctx, func(tx *store.Tx) error {
		return tx.AcquireWorktreeLock(dir, "live", store.Owner{PID: os.Getppid(), Host: store.Self().Host}, store.ProcessAlive)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Execute(ctx, repo, env.DB, snapshot.UndoRef("t3"), "test"); !errors.Is(err, ErrActive) {
		t.Fatalf("execute on a live run's tree: %v, want ErrActive", err)
	}
	if read("a.txt") != "a\n" {
		t.Fatal("a refused apply wrote")
	}

	// An attempt still running has no tree to apply.
	if _, err := PlanApply(ctx, repo, "r1", store.Attempt{TaskID: "main", N: 2, PreTree: pre.String()}); !errors.Is(err, ErrNotFinished) {
		t.Fatalf("plan of a running attempt: %v", err)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
