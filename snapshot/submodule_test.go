package snapshot

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// An agent moves a submodule's HEAD and edits a file in it; restoring the tree from before puts
// the submodule back (HEAD detached at the base's gitlink commit, its files and its index as
// checkout leaves them), keeping what its working tree held in an undo ref of its own.
func TestRestorePutsSubmoduleBack(t *testing.T) {
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
