package snapshot

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A cherry-pick and a bisect in progress that an attempt ended are put back, files and all, and
// git sees them in progress again; one that changed again since (someone else's work) is left
// and named.
func TestPutBackGitOps(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "a.txt"), "base\n")
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-qm", "base")
	runGit(t, dir, "checkout", "-qb", "other")
	writeFile(t, filepath.Join(dir, "a.txt"), "other\n")
	runGit(t, dir, "commit", "-qam", "other")
	runGit(t, dir, "checkout", "-q", "main")
	writeFile(t, filepath.Join(dir, "a.txt"), "main\n")
	runGit(t, dir, "commit", "-qam", "main")
	if err := exec.Command("git", "-C", dir, "cherry-pick", "other").Run(); err == nil {
		t.Fatal("the cherry-pick did not stop on its conflict")
	}
	r := openRepo(t, dir)
	gd := r.GitDir()
	want, err := os.ReadFile(filepath.Join(gd, "CHERRY_PICK_HEAD"))
	if err != nil {
		t.Fatal(err)
	}

	pre, err := r.ReadGitState(true)
	if err != nil {
		t.Fatal(err)
	}
	if pre.Ops.Sum == "" || strings.Join(pre.Ops.Ops, ",") != "cherry-pick" {
		t.Fatalf("ops in progress: %+v", pre.Ops)
	}
	runGit(t, dir, "cherry-pick", "--abort") // the agent
	post, err := r.ReadGitState(false)
	if err != nil {
		t.Fatal(err)
	}
	changes := DiffGitState(pre, post.Delta(pre))
	if len(changes) == 0 || changes[len(changes)-1].String() != "the cherry-pick in progress ended" {
		t.Fatalf("changes: %v", changes)
	}
	res, err := r.PutBackGit(pre, post.Delta(pre), "")
	if err != nil || len(res.Skipped) > 0 {
		t.Fatalf("put back: %+v, %v", res, err)
	}
	if got, _ := os.ReadFile(filepath.Join(gd, "CHERRY_PICK_HEAD")); string(got) != string(want) {
		t.Fatalf("CHERRY_PICK_HEAD %q, want %q", got, want)
	}
	if st := runGit(t, dir, "status"); !strings.Contains(st, "cherry-pick") {
		t.Fatalf("git status does not see the cherry-pick again:\n%s", st)
	}
	runGit(t, dir, "cherry-pick", "--abort")

	// bisect: started by the user, reset by the agent, put back.
	runGit(t, dir, "bisect", "start", "main", "other~1")
	pre, err = r.ReadGitState(true)
	if err != nil {
		t.Fatal(err)
	}
	log := runGit(t, dir, "bisect", "log")
	runGit(t, dir, "bisect", "reset")
	post, err = r.ReadGitState(false)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.PutBackGit(pre, post.Delta(pre), ""); err != nil || len(res.Skipped) > 0 {
		t.Fatalf("put back: %+v, %v", res, err)
	}
	if got := runGit(t, dir, "bisect", "log"); got != log {
		t.Fatalf("bisect log %q, want %q", got, log)
	}
	runGit(t, dir, "bisect", "reset")

	// Changed again since the attempt ended: left as it is.
	if err := exec.Command("git", "-C", dir, "merge", "other").Run(); err == nil {
		t.Fatal("the merge did not stop on its conflict")
	}
	pre, _ = r.ReadGitState(true)
	runGit(t, dir, "merge", "--abort")
	post, _ = r.ReadGitState(false)
	runGit(t, dir, "bisect", "start") // someone else's, after the attempt
	res, err = r.PutBackGit(pre, post.Delta(pre), "")
	if err != nil || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Reason, "changed again") {
		t.Fatalf("put back over someone else's bisect: %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(gd, "MERGE_HEAD")); err == nil {
		t.Fatal("MERGE_HEAD put back over a bisect started since")
	}
}
