package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

func snapshotTree(t testing.TB, r *Repo, dir string) plumbing.Hash {
	t.Helper()
	return assertSameTree(t, r, dir).Tree
}

func TestDiffTrees(t *testing.T) {
	dir := newGitRepo(t)
	r := openRepo(t, dir)
	writeFile(t, filepath.Join(dir, "same/deep/x"), "same\n")
	writeFile(t, filepath.Join(dir, "mod"), "1\n")
	writeFile(t, filepath.Join(dir, "exec"), "x\n")
	writeFile(t, filepath.Join(dir, "gone"), "bye\n")
	writeFile(t, filepath.Join(dir, "f2d"), "file\n")
	writeFile(t, filepath.Join(dir, "d2f/inner"), "in\n")
	writeFile(t, filepath.Join(dir, "l2f"), "target\n")
	os.Symlink("mod", filepath.Join(dir, "f2l"))
	a := snapshotTree(t, r, dir)

	writeFile(t, filepath.Join(dir, "mod"), "2\n")
	os.Chmod(filepath.Join(dir, "exec"), 0o755)
	os.Remove(filepath.Join(dir, "gone"))
	os.Remove(filepath.Join(dir, "f2d"))
	writeFile(t, filepath.Join(dir, "f2d/now"), "dir\n")
	os.RemoveAll(filepath.Join(dir, "d2f"))
	writeFile(t, filepath.Join(dir, "d2f"), "now a file\n")
	os.Remove(filepath.Join(dir, "l2f"))
	os.Symlink("mod", filepath.Join(dir, "l2f"))
	os.Remove(filepath.Join(dir, "f2l"))
	writeFile(t, filepath.Join(dir, "f2l"), "plain\n")
	writeFile(t, filepath.Join(dir, "new/file"), "new\n")
	b := snapshotTree(t, r, dir)

	changes, err := r.DiffTrees(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		got = append(got, fmt.Sprintf("%s %s %o %o", c.Action, c.Path, c.From.Mode, c.To.Mode))
	}
	want := []string{
		"delete d2f/inner 100644 0", "add d2f 0 100644", "mode exec 100644 100755",
		"delete f2d 100644 0", "add f2d/now 0 100644", "type f2l 120000 100644",
		"delete gone 100644 0", "type l2f 100644 120000", "modify mod 100644 100644", "add new/file 0 100644",
	}
	sort.Strings(want)
	sorted := append([]string(nil), got...)
	sort.Strings(sorted)
	if strings.Join(sorted, "\n") != strings.Join(want, "\n") {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := 1; i < len(changes); i++ {
		if changes[i-1].Path >= changes[i].Path {
			t.Errorf("not sorted by path: %q before %q", changes[i-1].Path, changes[i].Path)
		}
	}
	// git agrees on the paths (diff-tree lists a type change as delete+add; compare path sets).
	gitPaths := map[string]bool{}
	for _, line := range strings.Split(runGit(t, dir, "diff-tree", "-r", "--name-only", a.String(), b.String()), "\n") {
		gitPaths[line] = true
	}
	for _, c := range changes {
		if !gitPaths[c.Path] {
			t.Errorf("%s is not in git diff-tree's list", c.Path)
		}
		delete(gitPaths, c.Path)
	}
	if len(gitPaths) != 0 {
		t.Errorf("git diff-tree also lists %v", gitPaths)
	}
	if none, err := r.DiffTrees(a, a); err != nil || len(none) != 0 {
		t.Errorf("DiffTrees(a, a) = %v, %v", none, err)
	}
	all, err := r.DiffTrees(plumbing.ZeroHash, a)
	if err != nil || len(all) != 8 {
		t.Errorf("DiffTrees(zero, a) = %d changes, %v; want 8 adds", len(all), err)
	}
}

// TestRestoreManyFilesWaitsForClock: a restore that writes more than racyRereadFiles files waits
// for the filesystem clock to pass its writes before stamping its index, so the next snapshot
// trusts them all and reads none again.
func TestRestoreManyFilesWaitsForClock(t *testing.T) {
	dir := newGitRepo(t)
	ctx := context.Background()
	n := racyRereadFiles + 36
	for i := range n {
		writeFile(t, filepath.Join(dir, "d", fmt.Sprintf("f%03d", i)), fmt.Sprintf("v1 %d\n", i))
	}
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-qm", "base")
	r := openRepo(t, dir)
	base := snapshotTree(t, r, dir)
	for i := range n {
		writeFile(t, filepath.Join(dir, "d", fmt.Sprintf("f%03d", i)), fmt.Sprintf("v2 %d\n", i))
	}
	ageFiles(t, dir)
	snapshotTree(t, r, dir)
	if _, err := r.Restore(ctx, base, RestoreOptions{NoUndoRef: true}); err != nil {
		t.Fatal(err)
	}
	after := assertSameTree(t, r, dir)
	if after.Tree != base {
		t.Fatalf("after restore the tree is %s, want %s", after.Tree, base)
	}
	if after.Hashed != 0 {
		t.Errorf("the snapshot after restoring %d files re-read %d; restore records what it wrote", n, after.Hashed)
	}
}

func TestRestoreRoundTrip(t *testing.T) {
	dir := newGitRepo(t)
	ctx := context.Background()
	writeFile(t, filepath.Join(dir, ".gitignore"), "*.log\ncache/\n")
	writeFile(t, filepath.Join(dir, "keep/a"), "a1\n")
	writeFile(t, filepath.Join(dir, "mod"), "m1\n")
	writeFile(t, filepath.Join(dir, "run.sh"), "#!/bin/sh\n")
	os.Symlink("mod", filepath.Join(dir, "link"))
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-qm", "base")
	r := openRepo(t, dir)
	base := snapshotTree(t, r, dir)

	// An attempt makes a mess: edits, deletes, a new tree, type and mode changes, ignored output.
	writeFile(t, filepath.Join(dir, "mod"), "m2, longer\n")
	os.Chmod(filepath.Join(dir, "run.sh"), 0o755)
	os.Remove(filepath.Join(dir, "keep/a"))
	writeFile(t, filepath.Join(dir, "new/deep/file"), "n\n")
	writeFile(t, filepath.Join(dir, "new/ignored.log"), "log\n") // keeps new/ alive
	writeFile(t, filepath.Join(dir, "other/x"), "x\n")           // other/ goes entirely
	os.Remove(filepath.Join(dir, "link"))
	writeFile(t, filepath.Join(dir, "link"), "was a link\n")
	writeFile(t, filepath.Join(dir, "cache/blob"), "ignored dir\n")
	ageFiles(t, dir)
	mess := snapshotTree(t, r, dir)

	res, err := r.Restore(ctx, base, RestoreOptions{UndoRef: "refs/mulligan/undo/t1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.UndoTree != mess || res.Undo == nil || res.Undo.Tree != mess {
		t.Fatalf("undo tree %s (result %+v), want %s", res.UndoTree, res.Undo, mess)
	}
	if got := runGit(t, dir, "rev-parse", "refs/mulligan/undo/t1^{tree}"); got != mess.String() {
		t.Fatalf("undo ref holds %s, want %s", got, mess)
	}
	after := assertSameTree(t, r, dir)
	if after.Tree != base {
		t.Fatalf("after restore the tree is %s, want %s", after.Tree, base)
	}
	// A restore of a few files does not wait for the clock to pass its writes: those written in
	// the tick its index was stamped in are racy, read again (TestRestoreManyFilesWaitsForClock
	// has the other side). Nothing else is.
	written := 0
	for _, c := range res.Changes {
		if c.Action != Delete {
			written++
		}
	}
	if after.Hashed > written {
		t.Errorf("the snapshot after restore re-read %d files, more than the %d restore wrote; restore records what it wrote", after.Hashed, written)
	}
	for _, p := range []string{"new/ignored.log", "cache/blob"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("ignored %s was touched: %v", p, err)
		}
	}
	for _, p := range []string{"new/deep", "other"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("directory %s left empty by the restore is still there (%v)", p, err)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link is not a symlink again: %v %v", fi, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "run.sh")); fi.Mode()&0o111 != 0 {
		t.Errorf("run.sh is still executable: %v", fi.Mode())
	}

	// And back: the undo ref puts the mess back.
	if _, err := r.Restore(ctx, mess, RestoreOptions{UndoRef: "refs/mulligan/undo/t2"}); err != nil {
		t.Fatal(err)
	}
	if got := assertSameTree(t, r, dir).Tree; got != mess {
		t.Fatalf("restoring the undo tree gave %s, want %s", got, mess)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "run.sh")); fi.Mode()&0o100 == 0 {
		t.Errorf("run.sh lost its executable bit: %v", fi.Mode())
	}
	// DryRun reports without touching anything.
	dry, err := r.Restore(ctx, base, RestoreOptions{DryRun: true, UndoRef: "refs/mulligan/undo/dry"})
	if err != nil || dry.Undo != nil || len(dry.Changes) == 0 {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	if got := assertSameTree(t, r, dir).Tree; got != mess {
		t.Fatalf("dry run changed the tree to %s", got)
	}
	if _, err := r.Ref("refs/mulligan/undo/dry"); !errors.Is(err, ErrRefNotFound) {
		t.Fatalf("dry run wrote its undo ref: %v", err)
	}
	runGit(t, dir, "fsck", "--no-dangling")
}

// TestRestoreConflict: a path that changed after the undo snapshot is not overwritten or
// deleted; what was written before it stays written, and a second Restore finishes.
func TestRestoreConflict(t *testing.T) {
	for _, victim := range []string{"b", "c"} {
		t.Run(victim, func(t *testing.T) {
			dir := newGitRepo(t)
			ctx := context.Background()
			r := openRepo(t, dir)
			writeFile(t, filepath.Join(dir, "a"), "a1\n")
			writeFile(t, filepath.Join(dir, "b"), "b1\n")
			target := snapshotTree(t, r, dir)
			writeFile(t, filepath.Join(dir, "a"), "a2\n")
			writeFile(t, filepath.Join(dir, "b"), "b2\n")
			writeFile(t, filepath.Join(dir, "c"), "c2, to be deleted\n")
			ageFiles(t, dir)
			defer func() { testHookBeforePath = nil }()
			testHookBeforePath = func(p string) {
				if p == victim {
					writeFile(t, filepath.Join(dir, victim), "user edit during restore\n")
				}
			}
			_, err := r.Restore(ctx, target, RestoreOptions{UndoRef: "refs/mulligan/undo/c1"})
			testHookBeforePath = nil
			var ce *ConflictError
			if !errors.As(err, &ce) || ce.Path != victim {
				t.Fatalf("Restore = %v, want *ConflictError for %s", err, victim)
			}
			if data, _ := os.ReadFile(filepath.Join(dir, victim)); string(data) != "user edit during restore\n" {
				t.Fatalf("%s was overwritten: %q", victim, data)
			}
			if victim == "b" {
				// c (a deletion) ran before the writes; a was written before b.
				if _, err := os.Stat(filepath.Join(dir, "c")); !os.IsNotExist(err) {
					t.Errorf("c should already be deleted: %v", err)
				}
			}
			res, err := r.Restore(ctx, target, RestoreOptions{UndoRef: "refs/mulligan/undo/c2"})
			if err != nil {
				t.Fatalf("second Restore: %v", err)
			}
			if got := runGit(t, dir, "cat-file", "-p", res.UndoTree.String()+":"+victim); got != "user edit during restore" {
				t.Errorf("the second undo snapshot holds %q, want the user's edit", got)
			}
			if got := assertSameTree(t, r, dir).Tree; got != target {
				t.Fatalf("tree %s after the second Restore, want %s", got, target)
			}
		})
	}
}

// TestRestoreNeverFollowsSymlinkOut: a directory swapped for a symlink to outside the worktree
// between the undo snapshot and the write stops the restore; nothing outside is written.
func TestRestoreNeverFollowsSymlinkOut(t *testing.T) {
	dir := newGitRepo(t)
	outside := t.TempDir()
	ctx := context.Background()
	r := openRepo(t, dir)
	writeFile(t, filepath.Join(dir, "d/f"), "target version\n")
	target := snapshotTree(t, r, dir)
	writeFile(t, filepath.Join(dir, "d/f"), "current\n")
	ageFiles(t, dir)
	defer func() { testHookBeforePath = nil }()
	testHookBeforePath = func(p string) {
		if p == "d/f" {
			os.RemoveAll(filepath.Join(dir, "d"))
			os.Symlink(outside, filepath.Join(dir, "d"))
		}
	}
	_, err := r.Restore(ctx, target, RestoreOptions{UndoRef: "refs/mulligan/undo/s1"})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Path != "d" {
		t.Fatalf("Restore = %v, want *ConflictError naming d", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("restore wrote outside the worktree: %v", ents)
	}

	// A symlink that the restore itself replaces (recorded in the undo snapshot) is fine.
	testHookBeforePath = nil
	os.Remove(filepath.Join(dir, "d"))
	os.Symlink(outside, filepath.Join(dir, "d"))
	if _, err := r.Restore(ctx, target, RestoreOptions{UndoRef: "refs/mulligan/undo/s2"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "d")); err != nil || !fi.IsDir() {
		t.Fatalf("d is not a directory after restore: %v %v", fi, err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("restore wrote outside the worktree: %v", ents)
	}
	if got := assertSameTree(t, r, dir).Tree; got != target {
		t.Fatalf("tree %s, want %s", got, target)
	}
}

// TestRestoreRefusesDotGit: a tree naming .git (a hostile or hand-made tree) is never written.
func TestRestoreRefusesDotGit(t *testing.T) {
	dir := newGitRepo(t)
	r := openRepo(t, dir)
	blob := runGit(t, dir, "hash-object", "-w", "--stdin")
	_ = blob
	evilBlob, err := r.objs.WriteBytes(plumbing.BlobObject, []byte("#!/bin/sh\necho pwned\n"))
	if err != nil {
		t.Fatal(err)
	}
	hooks, _ := r.objs.WriteBytes(plumbing.TreeObject, append([]byte("100755 post-checkout\x00"), evilBlob[:]...))
	dotgit, _ := r.objs.WriteBytes(plumbing.TreeObject, append([]byte("40000 hooks\x00"), hooks[:]...))
	root, _ := r.objs.WriteBytes(plumbing.TreeObject, append([]byte("40000 .GIT\x00"), dotgit[:]...))
	if _, err := r.Restore(context.Background(), root, RestoreOptions{UndoRef: "refs/mulligan/undo/evil"}); err == nil {
		t.Fatal("Restore wrote a tree with a .git directory")
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "hooks", "post-checkout")); !os.IsNotExist(err) {
		t.Fatal("a hook was written")
	}
}

func TestNewID(t *testing.T) {
	base := idEpoch.Add(1000 * 24 * 3600 * 1e9)
	prev := ""
	for i := 0; i < 2000; i++ {
		id := NewID(base.Add(timeMs(i / 3)))
		if len(id) != 10 || strings.Trim(id, idAlphabet) != "" {
			t.Fatalf("id %q is not 10 characters of [0-9a-z]", id)
		}
		if id <= prev {
			t.Fatalf("id %q does not sort after %q", id, prev)
		}
		prev = id
	}
	a, b := NewID(base.Add(48*3600*1e9)), NewID(base.Add(72*3600*1e9))
	if a >= b {
		t.Fatalf("ids a day apart do not sort by time: %s, %s", a, b)
	}
}

// TestRestoreAfterGitBlindTouch: a tracked file whose stat data git still calls unchanged (same
// second; core.trustCtime=false) but which differs exactly is read once, so Restore's exact
// conflict check does not refuse it forever when its content is in fact unchanged.
func TestRestoreAfterGitBlindTouch(t *testing.T) {
	dir := newGitRepo(t)
	runGit(t, dir, "config", "core.trustCtime", "false")
	ctx := context.Background()
	writeFile(t, filepath.Join(dir, "f"), "old\n")
	r := openRepo(t, dir)
	target := snapshotTree(t, r, dir)
	writeFile(t, filepath.Join(dir, "f"), "new\n")
	mt := time.Now().Add(-time.Hour).Truncate(time.Second).Add(100 * time.Millisecond)
	os.Chtimes(filepath.Join(dir, "f"), mt, mt)
	runGit(t, dir, "add", "f")
	// Same second, other nanoseconds: git (whole seconds, no ctime) sees no change.
	os.Chtimes(filepath.Join(dir, "f"), mt.Add(300*time.Millisecond), mt.Add(300*time.Millisecond))
	assertSameTree(t, r, dir)
	if _, err := r.Restore(ctx, target, RestoreOptions{UndoRef: "refs/mulligan/undo/blind"}); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "f")); string(data) != "old\n" {
		t.Fatalf("f = %q after restore", data)
	}
}

// TestNewRunID: run ids are ten characters of [0-9a-z] and differ early, so that short prefixes name
// one run even for runs started in the same millisecond.
func TestNewRunID(t *testing.T) {
	firstTwo := map[string]bool{}
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		id := NewRunID()
		if len(id) != 10 || strings.Trim(id, idAlphabet) != "" {
			t.Fatalf("bad run id %q", id)
		}
		if seen[id] {
			t.Fatalf("run id %q made twice", id)
		}
		seen[id] = true
		firstTwo[id[:2]] = true
	}
	// 200 draws over 1296 two-character prefixes give about 186 distinct ones; time-sorted ids made
	// in one loop would give one or two.
	if len(firstTwo) < 150 {
		t.Errorf("only %d distinct two-character prefixes in 200 run ids", len(firstTwo))
	}
}
