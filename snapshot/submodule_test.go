package snapshot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An agent moves a submodule's HEAD and edits a file in it; restoring the tree from before puts
// the submodule back (HEAD detached at the base's gitlink commit, its files and its index as
// checkout leaves them), keeping what its working tree held in an undo ref of its own.
func TestRestorePutsSubmoduleBack(t *testing.T) {
	dir := newSuperWithSubmodule(t)
	sub := filepath.Join(dir, "sub")
	baseHead := strings.TrimSpace(runGit(t, sub, "rev-parse", "HEAD"))
	r := openRepo(t, dir)
	base := snapshotTree(t, r, dir)

	// The agent: an older commit checked out in the submodule, a file in it edited.
	runGit(t, sub, "checkout", "-q", "HEAD~1")
	writeFile(t, filepath.Join(sub, "lib.c"), "agent's edit\n")
	if post := snapshotTree(t, r, dir); post == base {
		t.Fatal("the moved submodule should change the snapshot")
	}
	res, err := r.Restore(context.Background(), base, RestoreOptions{UndoRef: "refs/mulligan/undo/s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Submodules) != 1 || res.Submodules[0].Skipped != "" || res.Submodules[0].Path != "sub" {
		t.Fatalf("submodules: %+v", res.Submodules)
	}
	if got := strings.TrimSpace(runGit(t, sub, "rev-parse", "HEAD")); got != baseHead {
		t.Errorf("submodule HEAD %s, want %s", got, baseHead)
	}
	if got := readFileT(t, filepath.Join(sub, "lib.c")); got != "v2\n" {
		t.Errorf("lib.c = %q", got)
	}
	if got := runGit(t, sub, "status", "--porcelain"); got != "" {
		t.Errorf("the submodule is not clean:\n%s", got)
	}
	if got := runGit(t, dir, "status", "--porcelain"); got != "" {
		t.Errorf("the superproject is not clean:\n%s", got)
	}
	if got := runGit(t, sub, "show", res.Submodules[0].UndoRef+":lib.c"); got != "agent's edit" {
		t.Errorf("the submodule's undo ref holds %q", got)
	}
	if got := snapshotTree(t, r, dir); got != base {
		t.Errorf("tree %s after the restore, want %s", got, base)
	}
}

// newSuperWithSubmodule makes a superproject with a real submodule at sub (its library at two
// commits, v2 checked out) and returns the superproject's directory.
func newSuperWithSubmodule(t *testing.T) string {
	t.Helper()
	hermeticGit(t)
	lib := t.TempDir()
	runGit(t, lib, "init", "-q")
	writeFile(t, filepath.Join(lib, "lib.c"), "v1\n")
	runGit(t, lib, "add", ".")
	runGit(t, lib, "commit", "-qm", "v1")
	writeFile(t, filepath.Join(lib, "lib.c"), "v2\n")
	runGit(t, lib, "commit", "-qam", "v2")
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "main.c"), "main\n")
	runGit(t, dir, "add", ".")
	runGit(t, dir, "commit", "-qm", "init")
	runGit(t, dir, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "sub")
	runGit(t, dir, "commit", "-qm", "sub")
	return dir
}

// An edit inside a submodule whose HEAD did not move changes no gitlink: the superproject's
// snapshot cannot see it. The submodule's own snapshot (in its repository, under the same ref
// name) does, and RestoreSubmodules puts its working tree back — the user's uncommitted edit in
// it included — keeping what the agent left in an undo ref of the submodule's.
func TestSubmoduleEditWithoutHeadMove(t *testing.T) {
	dir := newSuperWithSubmodule(t)
	sub := filepath.Join(dir, "sub")
	writeFile(t, filepath.Join(sub, "notes.txt"), "the user's untracked note\n")
	r := openRepo(t, dir)
	base := snapshotTree(t, r, dir)
	const ref = "refs/mulligan/runs/r1/t/1/pre"
	snaps, err := r.SnapshotSubmodules(context.Background(), ref, "pre")
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 || snaps[0].Path != "sub" {
		t.Fatalf("snapshots: %+v", snaps)
	}
	if got := runGit(t, sub, "show", ref+":notes.txt"); got != "the user's untracked note" {
		t.Errorf("the submodule's snapshot holds notes.txt = %q", got)
	}

	// The agent edits a file, adds one and deletes the user's note; HEAD stays.
	writeFile(t, filepath.Join(sub, "lib.c"), "agent's edit\n")
	writeFile(t, filepath.Join(sub, "new.c"), "agent's file\n")
	if err := os.Remove(filepath.Join(sub, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	if post := snapshotTree(t, r, dir); post != base {
		t.Fatalf("the superproject's snapshot changed (%s, base %s): the test's premise is gone", post, base)
	}
	res, err := r.Restore(context.Background(), base, RestoreOptions{UndoRef: "refs/mulligan/undo/s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 0 || len(res.Submodules) != 0 {
		t.Fatalf("the superproject's restore saw %v %+v", res.Changes, res.Submodules)
	}
	subs := r.RestoreSubmodules(context.Background(), ref)
	if len(subs) != 1 || subs[0].Skipped != "" || len(subs[0].Changes) != 3 {
		t.Fatalf("RestoreSubmodules: %+v", subs)
	}
	if got := readFileT(t, filepath.Join(sub, "lib.c")); got != "v2\n" {
		t.Errorf("lib.c = %q", got)
	}
	if got := readFileT(t, filepath.Join(sub, "notes.txt")); got != "the user's untracked note\n" {
		t.Errorf("notes.txt = %q", got)
	}
	if _, err := os.Stat(filepath.Join(sub, "new.c")); !os.IsNotExist(err) {
		t.Errorf("new.c still there: %v", err)
	}
	if got := runGit(t, sub, "status", "--porcelain"); got != "?? notes.txt" {
		t.Errorf("submodule status:\n%s", got)
	}
	undo := subs[0].UndoRef
	if got := runGit(t, sub, "show", undo+":lib.c"); got != "agent's edit" {
		t.Errorf("the submodule's undo ref holds lib.c = %q", got)
	}
	if got := runGit(t, sub, "show", undo+":new.c"); got != "agent's file" {
		t.Errorf("the submodule's undo ref holds new.c = %q", got)
	}
	// Nothing left to do the second time.
	if again := r.RestoreSubmodules(context.Background(), ref); len(again) != 0 {
		t.Errorf("a second RestoreSubmodules did %+v", again)
	}
}

// A submodule directory an agent deleted (rm -rf sub) is checked out again: by the superproject's
// restore at the gitlink's commit (its .git file, files, index and HEAD), and by
// RestoreSubmodules with the working tree its snapshot held.
func TestSubmoduleDeletedDirectoryCheckedOutAgain(t *testing.T) {
	dir := newSuperWithSubmodule(t)
	sub := filepath.Join(dir, "sub")
	head := strings.TrimSpace(runGit(t, sub, "rev-parse", "HEAD"))
	r := openRepo(t, dir)
	base := snapshotTree(t, r, dir)
	const ref = "refs/mulligan/runs/r1/t/1/pre"
	writeFile(t, filepath.Join(sub, "wip.c"), "uncommitted\n")
	if _, err := r.SnapshotSubmodules(context.Background(), ref, "pre"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	res, err := r.Restore(context.Background(), base, RestoreOptions{UndoRef: "refs/mulligan/undo/d"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Submodules) != 1 || res.Submodules[0].Skipped != "" {
		t.Fatalf("submodules: %+v", res.Submodules)
	}
	if got := strings.TrimSpace(runGit(t, sub, "rev-parse", "HEAD")); got != head {
		t.Errorf("submodule HEAD %s, want %s", got, head)
	}
	if got := readFileT(t, filepath.Join(sub, "lib.c")); got != "v2\n" {
		t.Errorf("lib.c = %q", got)
	}
	if got := runGit(t, dir, "status", "--porcelain"); got != "" {
		t.Errorf("the superproject is not clean:\n%s", got)
	}
	subs := r.RestoreSubmodules(context.Background(), ref)
	if len(subs) != 1 || subs[0].Skipped != "" {
		t.Fatalf("RestoreSubmodules: %+v", subs)
	}
	if got := readFileT(t, filepath.Join(sub, "wip.c")); got != "uncommitted\n" {
		t.Errorf("wip.c = %q", got)
	}
	if got := runGit(t, sub, "status", "--porcelain"); got != "?? wip.c" {
		t.Errorf("submodule status:\n%s", got)
	}

	// Deleted again, with no superproject restore: RestoreSubmodules alone checks it out.
	if err := os.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	subs = r.RestoreSubmodules(context.Background(), ref)
	if len(subs) != 1 || subs[0].Skipped != "" {
		t.Fatalf("RestoreSubmodules after rm -rf: %+v", subs)
	}
	if got := readFileT(t, filepath.Join(sub, "lib.c")); got != "v2\n" {
		t.Errorf("lib.c = %q", got)
	}
	if got := runGit(t, sub, "status", "--porcelain"); got != "?? wip.c" {
		t.Errorf("submodule status after rm -rf:\n%s", got)
	}

	// A git directory whose core.worktree is another checkout (a linked worktree's submodule,
	// say) is not checked out here: that would move the other checkout's HEAD and index.
	gd := strings.TrimSpace(runGit(t, sub, "rev-parse", "--absolute-git-dir"))
	runGit(t, dir, "config", "-f", filepath.Join(gd, "config"), "core.worktree", t.TempDir())
	if err := os.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	subs = r.RestoreSubmodules(context.Background(), ref)
	if len(subs) != 1 || !strings.Contains(subs[0].Skipped, "not checked out here") {
		t.Fatalf("RestoreSubmodules with another checkout's git directory: %+v", subs)
	}
	if _, err := os.Stat(filepath.Join(sub, ".git")); !os.IsNotExist(err) {
		t.Errorf("sub/.git was written: %v", err)
	}
}
