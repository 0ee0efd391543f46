package snapshot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An agent that edits .gitignore makes the user's ignored files part of its snapshot; restoring
// the tree from before must not delete them, and restoring the agent's tree must not overwrite
// them either.
func TestRestoreSparesFilesEitherTreeIgnores(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, ".gitignore"), "*.log\n.env\nbuild/\n")
	writeFile(t, filepath.Join(dir, "main.go"), "package main\n")
	runGit(t, dir, "add", ".")
	runGit(t, dir, "commit", "-qm", "init")
	writeFile(t, filepath.Join(dir, "debug.log"), "user's log\n")
	writeFile(t, filepath.Join(dir, ".env"), "SECRET=1\n")
	writeFile(t, filepath.Join(dir, "build/out.bin"), "artifact\n")
	writeFile(t, filepath.Join(dir, "force.log"), "tracked although ignored\n")
	runGit(t, dir, "add", "-f", "force.log")
	r := openRepo(t, dir)
	base := snapshotTree(t, r, dir)

	// The agent forgets every rule and adds a file of its own.
	writeFile(t, filepath.Join(dir, ".gitignore"), "# nothing\n")
	writeFile(t, filepath.Join(dir, "agent.txt"), "agent\n")
	post := snapshotTree(t, r, dir)
	if ls := runGit(t, dir, "ls-tree", "-r", "--name-only", post.String()); !strings.Contains(ls, "debug.log") || !strings.Contains(ls, ".env") {
		t.Fatalf("the agent's snapshot should hold the formerly ignored files:\n%s", ls)
	}

	dry, err := r.Restore(context.Background(), base, RestoreOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Restore(context.Background(), base, RestoreOptions{UndoRef: "refs/mulligan/undo/t1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".env", "build/out.bin", "debug.log"} {
		if got := readFileT(t, filepath.Join(dir, want)); got == "" {
			t.Errorf("restore to the base deleted the ignored %s", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "agent.txt")); !os.IsNotExist(err) {
		t.Errorf("agent.txt should be gone: %v", err)
	}
	if got := changedPaths(res.Spared); got != ".env build/out.bin debug.log" {
		t.Errorf("spared %q", got)
	}
	if changedPaths(dry.Spared) != changedPaths(res.Spared) || changedPaths(dry.Changes) != changedPaths(res.Changes) {
		t.Errorf("dry run %q/%q, restore %q/%q", changedPaths(dry.Changes), changedPaths(dry.Spared), changedPaths(res.Changes), changedPaths(res.Spared))
	}
	if got := snapshotTree(t, r, dir); got != base {
		t.Errorf("after the restore the tree is %s, want the base %s", got, base)
	}

	// The user edits the ignored files; going to the agent's tree (whose rules ignore nothing)
	// must not put its copies over them.
	writeFile(t, filepath.Join(dir, ".env"), "SECRET=2\n")
	writeFile(t, filepath.Join(dir, "debug.log"), "newer log\n")
	res, err = r.Restore(context.Background(), post, RestoreOptions{UndoRef: "refs/mulligan/undo/t2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, filepath.Join(dir, ".env")); got != "SECRET=2\n" {
		t.Errorf(".env overwritten: %q", got)
	}
	if got := readFileT(t, filepath.Join(dir, "debug.log")); got != "newer log\n" {
		t.Errorf("debug.log overwritten: %q", got)
	}
	if got := readFileT(t, filepath.Join(dir, "agent.txt")); got != "agent\n" {
		t.Errorf("agent.txt not restored: %q", got)
	}
	if got := changedPaths(res.Spared); got != ".env build/out.bin debug.log" {
		t.Errorf("spared %q", got)
	}

	// A tracked file is never spared, whatever the rules say.
	os.Remove(filepath.Join(dir, "force.log"))
	res, err = r.Restore(context.Background(), base, RestoreOptions{UndoRef: "refs/mulligan/undo/t3"})
	if err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, filepath.Join(dir, "force.log")); got != "tracked although ignored\n" {
		t.Errorf("force.log not restored: %q", got)
	}
}

func readFileT(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

func changedPaths(cs []Change) string {
	var s []string
	for _, c := range cs {
		s = append(s, c.Path)
	}
	return strings.Join(s, " ")
}
