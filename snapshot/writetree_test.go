package snapshot

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWriteTreeBasic(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "a.txt"), "a\n")
	writeFile(t, filepath.Join(dir, "sub/b.txt"), "b\n")
	writeFile(t, filepath.Join(dir, ".gitignore"), "*.log\nbuild/\n")
	writeFile(t, filepath.Join(dir, "x.log"), "ignored\n")
	writeFile(t, filepath.Join(dir, "build/out"), "ignored\n")
	runGit(t, dir, "add", "a.txt", ".gitignore")
	runGit(t, dir, "commit", "-qm", "one")
	writeFile(t, filepath.Join(dir, "untracked.txt"), "u\n")
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	ageFiles(t, dir) // nothing racily clean: the Hashed counts below are exact
	r := openRepo(t, dir)
	res := assertSameTree(t, r, dir)
	if res.Files != 5 {
		t.Errorf("files = %d, want 5", res.Files)
	}
	again := assertSameTree(t, r, dir)
	if again.Hashed != 0 {
		t.Errorf("second snapshot hashed %d files, want 0", again.Hashed)
	}
	writeFile(t, filepath.Join(dir, "sub/b.txt"), "changed\n")
	old := time.Now().Add(-time.Minute)
	os.Chtimes(filepath.Join(dir, "sub/b.txt"), old, old)
	os.Remove(filepath.Join(dir, "a.txt"))
	third := assertSameTree(t, r, dir)
	if third.Hashed != 1 {
		t.Errorf("third snapshot hashed %d files, want 1", third.Hashed)
	}
}
