package attempt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// applyFixture is a working tree with helpers to write, read and snapshot it.
type applyFixture struct {
	t    *testing.T
	env  Env
	repo *snapshot.Repo
	dir  string
}

func newApplyFixture(t *testing.T) *applyFixture {
	env := testEnv(t)
	addRun(t, env.DB, "r1", store.RunFailed, os.Getpid(), nil)
	return &applyFixture{t: t, env: env, repo: env.Repo, dir: env.Repo.Root()}
}

func (f *applyFixture) write(name, content string) {
	f.t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *applyFixture) read(name string) string {
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func (f *applyFixture) tree() snapshot.Hash {
	f.t.Helper()
	r, err := f.repo.WriteTree(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return r.Tree
}

func (f *applyFixture) restore(tree snapshot.Hash) {
	f.t.Helper()
	if _, err := f.repo.Restore(context.Background(), tree, snapshot.RestoreOptions{NoUndoRef: true}); err != nil {
		f.t.Fatal(err)
	}
}

// attempt records the change made by edit on the tree as it is (then undone) as attempt n.
func (f *applyFixture) attempt(n int, edit func()) store.Attempt {
	f.t.Helper()
	pre := f.tree()
	edit()
	post := f.tree()
	f.restore(pre)
	return store.Attempt{RunID: "r1", TaskID: "main", N: n, PreTree: pre.String(), Tree: post.String(),
		Ref: fmt.Sprintf("refs/mulligan/runs/r1/main/%d/post", n)}
}

func (f *applyFixture) apply(a store.Attempt, opts ApplyOptions) (*ApplyResult, error) {
	return Apply(context.Background(), f.repo, f.env.DB, a, opts)
}

func numbered(n int, edit map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := edit[i]; ok {
			b.WriteString(s + "\n")
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// An attempt's change carried onto a tree the user changed elsewhere; a conflict refused with
// nothing written; a live run's working tree refused; a running attempt has nothing to apply.
func TestApply(t *testing.T) {
	f := newApplyFixture(t)
	f.write("b.txt", "b\n")
	a := f.attempt(1, func() { f.write("a.txt", "agent a\n"); f.write("c.txt", "agent c\n") })
	f.write("b.txt", "user b\n") // the user's edit elsewhere

	p, err := PlanApply(context.Background(), f.repo, a, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, ch := range p.Changes {
		paths = append(paths, ch.Path)
	}
	if !slices.Equal(paths, []string{"a.txt", "c.txt"}) || p.Refused() {
		t.Fatalf("plan changes %v, conflicts %v; want [a.txt c.txt] and none", paths, p.ConflictPaths())
	}
	if f.read("a.txt") != "a\n" {
		t.Fatal("planning changed the working tree")
	}
	res, err := f.apply(a, ApplyOptions{UndoRef: snapshot.UndoRef("t1"), UndoMessage: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if f.read("a.txt") != "agent a\n" || f.read("c.txt") != "agent c\n" || f.read("b.txt") != "user b\n" {
		t.Fatalf("after apply: a=%q c=%q b=%q", f.read("a.txt"), f.read("c.txt"), f.read("b.txt"))
	}
	if c, err := f.repo.Ref(snapshot.UndoRef("t1")); err != nil || c.IsZero() || len(res.Restore.Changes) != 2 {
		t.Fatalf("undo ref %s %v, changes %v", c, err, res.Restore.Changes)
	}
	if evs := events(t, f.env.DB, "r1", EventApply); len(evs) != 1 {
		t.Fatalf("%d apply events, want 1", len(evs))
	}
	if n := intents(t, f); n != 0 {
		t.Fatalf("%d intents left after a done apply", n)
	}

	// The user changed a.txt otherwise: a conflict, nothing written.
	f.restore(snapshot.NewHash(a.PreTree))
	f.write("a.txt", "user a\n")
	var refused *ApplyConflictError
	if _, err := f.apply(a, ApplyOptions{}); !errors.As(err, &refused) || !slices.Equal(refused.Plan.ConflictPaths(), []string{"a.txt"}) {
		t.Fatalf("apply with a conflict: %v", err)
	}
	if f.read("a.txt") != "user a\n" || fileExists(filepath.Join(f.dir, "c.txt")) {
		t.Fatalf("a conflicting apply wrote: a=%q c=%q", f.read("a.txt"), f.read("c.txt"))
	}

	// A run of another live process holds the working tree: refused.
	f.write("a.txt", "a\n")
	addRun(t, f.env.DB, "live", store.RunRunning, os.Getppid(), nil)
	if err := f.env.DB.Update(context.Background(), func(tx *store.Tx) error {
		return tx.AcquireWorktreeLock(f.dir, "live", store.Owner{PID: os.Getppid(), Host: store.Self().Host}, store.ProcessAlive)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.apply(a, ApplyOptions{}); !errors.Is(err, ErrActive) {
		t.Fatalf("apply on a live run's tree: %v, want ErrActive", err)
	}
	if f.read("a.txt") != "a\n" {
		t.Fatal("a refused apply wrote")
	}

	// An attempt still running has no tree to apply.
	if _, err := f.apply(store.Attempt{TaskID: "main", N: 2, PreTree: a.PreTree}, ApplyOptions{}); !errors.Is(err, ErrNotFinished) {
		t.Fatalf("apply of a running attempt: %v", err)
	}
}

// The user edits line 3 while the agent edits line 30: both are kept. The same line conflicts,
// refused; --merge writes the file with conflict markers and the rest of the change.
func TestApplyMergesHunks(t *testing.T) {
	f := newApplyFixture(t)
	f.write("f.txt", numbered(40, nil))
	a := f.attempt(1, func() { f.write("f.txt", numbered(40, map[int]string{30: "agent"})) })
	f.write("f.txt", numbered(40, map[int]string{3: "user"}))
	res, err := f.apply(a, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.read("f.txt"), numbered(40, map[int]string{3: "user", 30: "agent"}); got != want || !slices.Equal(res.Plan.Merged, []string{"f.txt"}) {
		t.Fatalf("merged file:\n%s\nwant:\n%s (merged %v)", got, want, res.Plan.Merged)
	}

	f.write("f.txt", numbered(40, nil))
	b := f.attempt(2, func() {
		f.write("f.txt", numbered(40, map[int]string{3: "agent"}))
		f.write("new.txt", "new\n")
	})
	user := numbered(40, map[int]string{3: "user"})
	f.write("f.txt", user)
	var refused *ApplyConflictError
	if _, err := f.apply(b, ApplyOptions{}); !errors.As(err, &refused) {
		t.Fatalf("same line: %v, want a conflict", err)
	}
	if f.read("f.txt") != user || fileExists(filepath.Join(f.dir, "new.txt")) {
		t.Fatal("a refused apply wrote")
	}
	if _, err := f.apply(b, ApplyOptions{Markers: true}); err != nil {
		t.Fatal(err)
	}
	want := numbered(40, map[int]string{3: "<<<<<<< working tree\nuser\n=======\nagent\n>>>>>>> r1/main@2"})
	if got := f.read("f.txt"); got != want || f.read("new.txt") != "new\n" {
		t.Fatalf("with markers:\n%s\nwant:\n%s", got, want)
	}
}

// A path the change writes where the user has an ignored directory (data vs data/), or where
// a directory of the change would go through a symbolic link: the whole apply is refused
// before anything is written.
func TestApplyChecksEveryPathFirst(t *testing.T) {
	f := newApplyFixture(t)
	f.write(".gitignore", "data/\nnode_modules\n")
	a := f.attempt(1, func() {
		f.write("a1.txt", "first\n")
		f.write("data", "a file where the user keeps a directory\n")
		f.write("z.txt", "last\n")
	})
	f.write("data/keep.bin", "the user's ignored data\n")
	var refused *ApplyConflictError
	if _, err := f.apply(a, ApplyOptions{}); !errors.As(err, &refused) || !slices.Equal(refused.Plan.ConflictPaths(), []string{"data"}) {
		t.Fatalf("apply over an ignored directory: %v", err)
	}
	if fileExists(filepath.Join(f.dir, "a1.txt")) || fileExists(filepath.Join(f.dir, "z.txt")) || f.read("data/keep.bin") != "the user's ignored data\n" {
		t.Fatal("a blocked apply wrote part of the change")
	}

	// The agent's change writes under node_modules/, which the user has as a link elsewhere.
	os.RemoveAll(filepath.Join(f.dir, "data"))
	b := f.attempt(2, func() {
		f.write(".gitignore", "")
		f.write("a1.txt", "first\n")
		f.write("node_modules/pkg/index.js", "x\n")
	})
	os.RemoveAll(filepath.Join(f.dir, "node_modules")) // ignored before the change: left by the restore
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(f.dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.apply(b, ApplyOptions{}); !errors.As(err, &refused) {
		t.Fatalf("apply through a link: %v", err)
	}
	if fileExists(filepath.Join(f.dir, "a1.txt")) || f.read(".gitignore") != "data/\nnode_modules\n" || fileExists(filepath.Join(outside, "pkg")) {
		t.Fatal("a blocked apply wrote part of the change")
	}
}

// Four applies into one working tree at once, each a change to its own line of a.txt: each
// merges onto the tree as the one before left it, and all four changes are in (none lost);
// four changes of the same line: one applies, three conflict, none overwrites another.
func TestApplyConcurrent(t *testing.T) {
	for _, sameLine := range []bool{false, true} {
		t.Run(fmt.Sprintf("same-line=%v", sameLine), func(t *testing.T) {
			f := newApplyFixture(t)
			f.write("a.txt", numbered(40, nil))
			var as []store.Attempt
			for k := 1; k <= 4; k++ {
				line := 10 * k
				if sameLine {
					line = 20
				}
				as = append(as, f.attempt(k, func() { f.write("a.txt", numbered(40, map[int]string{line: fmt.Sprintf("task %d", k)})) }))
			}
			start := make(chan struct{})
			var wg sync.WaitGroup
			errs := make([]error, len(as))
			for i, a := range as {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, errs[i] = f.apply(a, ApplyOptions{})
				}()
			}
			close(start)
			wg.Wait()
			got := f.read("a.txt")
			applied := 0
			for i, err := range errs {
				var refused *ApplyConflictError
				switch {
				case err == nil:
					applied++
					if !strings.Contains(got, fmt.Sprintf("task %d\n", i+1)) {
						t.Errorf("apply %d succeeded but its change is not in a.txt:\n%s", i+1, got)
					}
				case errors.As(err, &refused):
				default:
					t.Errorf("apply %d: %v", i+1, err)
				}
			}
			if want := map[bool]int{false: 4, true: 1}[sameLine]; applied != want {
				t.Fatalf("%d applied, want %d:\n%s (errors %v)", applied, want, got, errs)
			}
		})
	}
}

// An apply a crash interrupted (its intent recorded, part of its paths written) is finished by
// the next process; one whose paths someone else changed since is rolled back.
func TestRecoverApplies(t *testing.T) {
	ctx := context.Background()
	f := newApplyFixture(t)
	f.write("a-gone.txt", "deleted by the agent\n")
	a := f.attempt(1, func() {
		os.Remove(filepath.Join(f.dir, "a-gone.txt"))
		for i := 0; i < 6; i++ {
			f.write(fmt.Sprintf("dir/f%d.txt", i), fmt.Sprintf("agent %d\n", i))
		}
	})
	interrupt := func(written int) store.ApplyIntent {
		t.Helper()
		cur := f.tree()
		paths := []string{"a-gone.txt"} // deleted first
		for i := 0; i < 6; i++ {
			paths = append(paths, fmt.Sprintf("dir/f%d.txt", i))
		}
		in := store.ApplyIntent{Worktree: f.dir, RunID: "r1", TaskID: "main", Attempt: 1, UndoRef: snapshot.UndoRef("u"),
			From: cur.String(), Tree: a.Tree, Paths: paths}
		if err := f.env.DB.Update(ctx, func(tx *store.Tx) error { _, err := tx.AddApplyIntent(in); return err }); err != nil {
			t.Fatal(err)
		}
		if _, err := f.repo.Restore(ctx, snapshot.NewHash(a.Tree), snapshot.RestoreOptions{NoUndoRef: true, Paths: paths[:written]}); err != nil {
			t.Fatal(err)
		}
		return in
	}
	interrupt(3)
	notes, err := RecoverApplies(ctx, f.repo, f.env.DB)
	if err != nil || len(notes) != 1 || !strings.Contains(notes[0], "finished") {
		t.Fatalf("recover: %v %v", notes, err)
	}
	for i := 0; i < 6; i++ {
		if got := f.read(fmt.Sprintf("dir/f%d.txt", i)); got != fmt.Sprintf("agent %d\n", i) {
			t.Fatalf("f%d after recovery: %q", i, got)
		}
	}
	if fileExists(filepath.Join(f.dir, "a-gone.txt")) {
		t.Fatal("a-gone.txt is back after recovery")
	}
	if n := intents(t, f); n != 0 {
		t.Fatalf("%d intents left", n)
	}

	f.restore(snapshot.NewHash(a.PreTree))
	interrupt(2)
	f.write("dir/f4.txt", "the user's own\n") // a path the apply had not reached
	notes, err = RecoverApplies(ctx, f.repo, f.env.DB)
	if err != nil || len(notes) != 1 || !strings.Contains(notes[0], "rolled back") {
		t.Fatalf("recover: %v %v", notes, err)
	}
	if fileExists(filepath.Join(f.dir, "dir/f0.txt")) || f.read("dir/f4.txt") != "the user's own\n" || f.read("a-gone.txt") != "deleted by the agent\n" {
		t.Fatalf("after roll back: f0 %q, f4 %q", f.read("dir/f0.txt"), f.read("dir/f4.txt"))
	}
	if n := intents(t, f); n != 0 {
		t.Fatalf("%d intents left", n)
	}
}

func intents(t *testing.T, f *applyFixture) int {
	t.Helper()
	var n int
	if err := f.env.DB.View(context.Background(), func(tx *store.Tx) error {
		in, err := tx.ApplyIntents(f.dir)
		n = len(in)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func events(t *testing.T, db *store.DB, run, typ string) []store.Event {
	t.Helper()
	var out []store.Event
	if err := db.View(context.Background(), func(tx *store.Tx) error {
		evs, err := tx.Events(run, 0, 0)
		for _, ev := range evs {
			if ev.Type == typ {
				out = append(out, ev)
			}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// A file that appears in the way while the apply writes (after its check): what the apply wrote
// is taken back, the newcomer stays, and the apply is refused as a blocked path.
func TestApplyRollsBackAPathInTheWay(t *testing.T) {
	f := newApplyFixture(t)
	a := f.attempt(1, func() {
		for _, n := range []string{"a.new", "b.new", "c.new"} {
			f.write(n, "agent\n")
		}
	})
	snapshot.SetPathHook(func(p string) {
		if p == "b.new" {
			f.write("c.new", "the user's, just now\n")
		}
	})
	defer snapshot.SetPathHook(nil)
	var refused *ApplyConflictError
	if _, err := f.apply(a, ApplyOptions{}); !errors.As(err, &refused) || !slices.Equal(refused.Plan.ConflictPaths(), []string{"c.new"}) {
		t.Fatalf("apply: %v", err)
	}
	if fileExists(filepath.Join(f.dir, "a.new")) || fileExists(filepath.Join(f.dir, "b.new")) || f.read("c.new") != "the user's, just now\n" {
		t.Fatalf("after the refused apply: a %q, b %q, c %q", f.read("a.new"), f.read("b.new"), f.read("c.new"))
	}
	if n := intents(t, f); n != 0 {
		t.Fatalf("%d intents left", n)
	}
}
