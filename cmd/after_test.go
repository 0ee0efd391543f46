package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"

	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// TestHooksAfterCommandOnItsStreams: the hooks a dead process left pending are delivered by
// the next command, as a step after it, and what that step reports goes to the command's own
// stderr stream (not the process's os.Stderr); a dry run delivers none.
func TestHooksAfterCommandOnItsStreams(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(home, ".gitconfig")
	os.WriteFile(cfg, []byte("[user]\n\tname = Test\n\temail = test@example.com\n"), 0o644)
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_GLOBAL", cfg)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "xdg"))
	dir := t.TempDir()
	if _, err := git.PlainInit(dir, false); err != nil {
		t.Fatal(err)
	}
	repo, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	dbPath := store.DefaultPath(repo.CommonDir())
	repo.Close()
	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(home, "hook.ran")
	dead := store.Owner{PID: 1 << 22, Host: store.Self().Host, StartTicks: 1} // no such process
	err = db.Update(context.Background(), func(tx *store.Tx) error {
		if err := tx.InsertRun(&store.Run{ID: "r1", Worktree: dir, State: store.RunRunning, Owner: &dead,
			Tasks: []store.Task{{ID: "t", Needs: []string{}}}}); err != nil {
			return err
		}
		if err := tx.InsertHooks("r1", []store.HookDef{{Hook: "on_failed", Command: []string{"sh", "-c", "echo >> " + ran + "; exit 3"}}}); err != nil {
			return err
		}
		_, err := tx.TransitionRun("r1", store.RunTransition{To: store.RunState(store.RunFailed), Reason: "test"})
		return err
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })

	ios, _, errOut := Test()
	if code := Run(context.Background(), []string{"-C", dir, "gc", "--dry-run"}, ios); code != 0 {
		t.Fatalf("gc --dry-run: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(ran); err == nil || strings.Contains(errOut.String(), "hook") {
		t.Fatalf("a dry run delivered a hook: %s", errOut)
	}

	ios, out, errOut := Test()
	if code := Run(context.Background(), []string{"-C", dir, "ls"}, ios); code != 0 {
		t.Fatalf("ls: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Fatal("the pending hook was not delivered after the command")
	}
	if !strings.Contains(errOut.String(), "mulligan: hook ") || !strings.Contains(errOut.String(), "failed") {
		t.Errorf("the failed hook is not reported on the command's stderr: %q (stdout %q)", errOut, out)
	}
}
