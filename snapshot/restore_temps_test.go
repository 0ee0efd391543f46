package snapshot

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// A restore killed half-way leaves its temporary files; the next command that opens the
// repository removes them (and only them), guided by the note the restore wrote first.
func TestOpenRemovesKilledRestoreTemps(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "a/f"), "1\n")
	r := openRepo(t, dir)
	tree := snapshotTree(t, r, dir)
	writeFile(t, filepath.Join(dir, "a/f"), "2\n")
	if _, err := r.Restore(context.Background(), tree, RestoreOptions{UndoRef: "refs/mulligan/undo/t"}); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".git/mulligan/restoring-*")); len(m) > 0 {
		t.Fatalf("a finished restore left its note: %v", m)
	}

	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := strconv.Itoa(cmd.Process.Pid)
	live := strconv.Itoa(os.Getppid())
	writeFile(t, filepath.Join(dir, ".git/mulligan/restoring-"+dead), strconv.Quote("a")+"\n"+strconv.Quote("")+"\n")
	writeFile(t, filepath.Join(dir, ".git/mulligan/restoring-"+live), strconv.Quote("a")+"\n")
	left := []string{"a/.mulligan-restore-" + dead + "-1", "a/.mulligan-restore-" + dead + "-2z", ".mulligan-restore-" + dead + "-3"}
	kept := []string{"a/.mulligan-restore-" + live + "-1", "a/.mulligan-restore-notes", "a/f"}
	for _, p := range append(left, kept...) {
		if p != "a/f" {
			writeFile(t, filepath.Join(dir, p), "x\n")
		}
	}
	r2 := openRepo(t, dir)
	defer r2.Close()
	for _, p := range left {
		if _, err := os.Lstat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("%s not removed: %v", p, err)
		}
	}
	for _, p := range kept {
		if _, err := os.Lstat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".git/mulligan/restoring-"+dead)); !os.IsNotExist(err) {
		t.Errorf("the dead restore's note stays: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git/mulligan/restoring-"+live)); err != nil {
		t.Errorf("a live restore's note was removed: %v", err)
	}
}
