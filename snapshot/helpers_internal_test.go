package snapshot

import (
	"bytes"
	"context"
	"errors"
	"github.com/mulligan-dev/mulligan/snapshot/internal/gittest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/index"
	"golang.org/x/sys/unix"
)

// hermeticGit points every git setting the engine and the git binary read at fresh temporary
// places (gittest.Hermetic).
func hermeticGit(t testing.TB) string { return gittest.Hermetic(t) }

func writeFile(t testing.TB, path, content string) { gittest.WriteFile(t, path, content) }

func runGit(t testing.TB, dir string, args ...string) string {
	return gittest.Run(t, dir, nil, args...)
}

func runGitEnv(t testing.TB, dir string, env []string, args ...string) string {
	return gittest.Run(t, dir, env, args...)
}

// newGitRepo makes an empty repository (hermetic environment included).
func newGitRepo(t testing.TB) string { return gittest.NewRepo(t) }

func catFileAll(t *testing.T, dir string) map[string][]byte { return gittest.CatFileAll(t, dir) }

// gitAddAllTree is the reference: git add -A on a copy of the user's index, then write-tree.
func gitAddAllTree(t testing.TB, dir string) string {
	t.Helper()
	gd := runGit(t, dir, "rev-parse", "--absolute-git-dir")
	tmp := filepath.Join(t.TempDir(), "index")
	if data, err := os.ReadFile(filepath.Join(gd, "index")); err == nil {
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	top := runGit(t, dir, "rev-parse", "--show-toplevel")
	env := []string{"GIT_INDEX_FILE=" + tmp}
	runGitEnv(t, top, env, "add", "-A")
	return runGitEnv(t, top, env, "write-tree")
}

func openRepo(t testing.TB, dir string) *Repo {
	t.Helper()
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func writeTree(t testing.TB, r *Repo) TreeResult {
	t.Helper()
	res, err := r.WriteTree(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// assertSameTree checks WriteTree against git and returns the result.
func assertSameTree(t testing.TB, r *Repo, dir string) TreeResult {
	t.Helper()
	res := writeTree(t, r)
	want := gitAddAllTree(t, dir)
	if res.Tree.String() != want {
		t.Fatalf("tree %s, git says %s\nours:\n%s\ngit:\n%s", res.Tree, want,
			runGit(t, dir, "ls-tree", "-r", res.Tree.String()), runGit(t, dir, "ls-tree", "-r", want))
	}
	return res
}

// ageFiles sets every file's mtime an hour back (symlinks are left alone), so that no entry is
// racily clean and tests can count exactly which files a snapshot reads.
func ageFiles(t testing.TB, dir string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() && fi.Name() == ".git" {
			return filepath.SkipDir
		}
		switch {
		case fi.Mode().IsRegular():
			return os.Chtimes(p, old, old)
		case fi.Mode()&os.ModeSymlink != 0:
			// Chtimes would age the link's target; a fresh link stays racily clean, and the
			// next snapshot hashes it again (TestWriteTreeBasic failed so about 1 run in 6)
			tv := unix.NsecToTimeval(old.UnixNano())
			return unix.Lutimes(p, []unix.Timeval{tv, tv})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// goGitIndex decodes an index with go-git's decoder, the oracle for decodeUserIndex.
func goGitIndex(t testing.TB, data []byte) *index.Index {
	t.Helper()
	idx := &index.Index{}
	if err := index.NewDecoder(bytes.NewReader(data)).Decode(idx); err != nil {
		t.Fatal(err)
	}
	return idx
}

func timeMs(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func errorsIs(err, target error) bool { return errors.Is(err, target) }
