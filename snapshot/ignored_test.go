package snapshot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// KeepIgnored keeps only the individually ignored files, outside refs/mulligan/; after an agent's
// `git stash -u; git clean -fdx`, RestoreIgnored puts them back with their permissions, keeps what
// a changed one held, and leaves what an ignored directory held gone (not protected).
func TestKeepAndRestoreIgnored(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, ".gitignore"), ".env\n*.log\n.venv/\n__pycache__/\nbig.bin\nforced.log\n")
	writeFile(t, filepath.Join(dir, "app.py"), "print(1)\n")
	writeFile(t, filepath.Join(dir, "forced.log"), "tracked although ignored\n")
	runGit(t, dir, "add", ".")
	runGit(t, dir, "add", "-f", "forced.log")
	runGit(t, dir, "commit", "-qm", "init")
	writeFile(t, filepath.Join(dir, ".env"), "SECRET=1\n")
	os.Chmod(filepath.Join(dir, ".env"), 0o600)
	writeFile(t, filepath.Join(dir, "sub/debug.log"), "log\n")
	writeFile(t, filepath.Join(dir, ".venv/lib/site.py"), "venv\n")
	writeFile(t, filepath.Join(dir, "__pycache__/app.pyc"), "pyc\n")
	writeFile(t, filepath.Join(dir, "big.bin"), strings.Repeat("x", KeepIgnoredFileMax+1))
	writeFile(t, filepath.Join(dir, "vendor/x/README"), "nested\n")
	runGit(t, filepath.Join(dir, "vendor/x"), "init", "-q")
	runGit(t, filepath.Join(dir, "vendor/x"), "add", ".")
	runGit(t, filepath.Join(dir, "vendor/x"), "commit", "-qm", "nested")
	r := openRepo(t, dir)

	if _, err := r.KeepIgnored(context.Background(), "refs/mulligan/runs/x/ignored", "m"); err == nil {
		t.Fatal("KeepIgnored accepted a ref under refs/mulligan/")
	}
	ref := "refs/mulligan-local/runs/r1/ignored"
	kept, err := r.KeepIgnored(context.Background(), ref, "mulligan run r1: ignored files\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := runGit(t, dir, "ls-tree", "-r", "--name-only", ref); got != ".env\nsub/debug.log" {
		t.Fatalf("kept:\n%s", got)
	}
	if kept.Files != 2 || strings.Join(kept.TooLarge, ",") != "big.bin" || strings.Join(kept.Nested, ",") != "vendor/x" {
		t.Fatalf("kept %+v", kept)
	}
	base := snapshotTree(t, r, dir)

	// The agent cleans up like a tidy developer, and edits the log.
	writeFile(t, filepath.Join(dir, "app.py"), "print(2)\n")
	runGit(t, dir, "stash", "-u")
	runGit(t, dir, "clean", "-fdxq", "-e", "vendor")
	writeFile(t, filepath.Join(dir, "sub/debug.log"), "agent's log\n")
	if _, err := os.Stat(filepath.Join(dir, ".env")); !os.IsNotExist(err) {
		t.Fatalf(".env should be gone: %v", err)
	}
	if _, err := r.Restore(context.Background(), base, RestoreOptions{UndoRef: "refs/mulligan/undo/x"}); err != nil {
		t.Fatal(err)
	}
	put, err := r.RestoreIgnored(context.Background(), ref, base, "refs/mulligan-local/undo/x")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(put.Restored, ",") != ".env,sub/debug.log" || len(put.Failed) > 0 {
		t.Fatalf("put back %+v", put)
	}
	if got := readFileT(t, filepath.Join(dir, ".env")); got != "SECRET=1\n" {
		t.Errorf(".env = %q", got)
	}
	if fi, err := os.Stat(filepath.Join(dir, ".env")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf(".env mode %v, %v; want 0600", fi.Mode(), err)
	}
	if got := readFileT(t, filepath.Join(dir, "sub/debug.log")); got != "log\n" {
		t.Errorf("debug.log = %q", got)
	}
	if got := runGit(t, dir, "show", put.ReplacedRef+":sub/debug.log"); got != "agent's log" {
		t.Errorf("the replaced log is not kept: %q", got)
	}
	for _, gone := range []string{".venv", "__pycache__", "big.bin"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
			t.Errorf("%s is back, but nothing kept it: %v", gone, err)
		}
	}
	if got := snapshotTree(t, r, dir); got != base {
		t.Errorf("tree after the reset %s, want %s", got, base)
	}

	// A second call finds everything in place.
	put, err = r.RestoreIgnored(context.Background(), ref, base, "refs/mulligan-local/undo/y")
	if err != nil || len(put.Restored) != 0 || put.ReplacedRef != "" {
		t.Fatalf("second put back: %+v, %v", put, err)
	}
}
