package snapshot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// GraftPath gives the tree git gives for the same edit of an index: read-tree dst, then
// update-index with src's entry at the path (or --force-remove), then write-tree.
func TestGraftPathAgainstGit(t *testing.T) {
	dir := newGitRepo(t)
	r := openRepo(t, dir)
	for p, c := range map[string]string{
		"mulligan.yaml": "v1\n", "a/b/tasks.yaml": "v1\n", "a/b.txt": "x\n", "a.b": "y\n", "gone/only.txt": "z\n",
		"keep/x.txt": "k\n",
	} {
		writeFile(t, filepath.Join(dir, p), c)
	}
	dst := writeTree(t, r).Tree
	writeFile(t, filepath.Join(dir, "mulligan.yaml"), "v2\n")
	writeFile(t, filepath.Join(dir, "a/b/tasks.yaml"), "v2\n")
	writeFile(t, filepath.Join(dir, "new/dir/file.yaml"), "new\n")
	writeFile(t, filepath.Join(dir, "a/b-c"), "sorts between a/b.txt and a/b/\n")
	if err := os.Chmod(filepath.Join(dir, "a/b.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "gone")); err != nil {
		t.Fatal(err)
	}
	src := writeTree(t, r).Tree

	for _, path := range []string{"mulligan.yaml", "a/b/tasks.yaml", "new/dir/file.yaml", "a/b-c", "a/b.txt",
		"gone/only.txt", "not/there.yaml"} {
		t.Run(path, func(t *testing.T) {
			got, err := r.GraftPath(dst, src, path)
			if err != nil {
				t.Fatal(err)
			}
			if want := gitGraft(t, dir, dst, src, path); got.String() != want {
				t.Errorf("GraftPath = %s, git gives %s", got, want)
			}
		})
	}
	if _, err := r.GraftPath(dst, src, "a/b"); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("grafting a directory: %v", err)
	}
	if _, err := r.GraftPath(dst, src, "../x"); err == nil {
		t.Error("a path out of the tree accepted")
	}
	// the last file of a tree removed: the empty tree
	one, err := r.GraftPath(plumbing.ZeroHash, src, "mulligan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	empty, err := r.GraftPath(one, plumbing.ZeroHash, "mulligan.yaml")
	if err != nil || empty != emptyTree {
		t.Errorf("graft to nothing = %s, %v; want the empty tree", empty, err)
	}
}

func gitGraft(t *testing.T, dir string, dst, src plumbing.Hash, path string) string {
	t.Helper()
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
	runGitEnv(t, dir, env, "read-tree", dst.String())
	line := runGit(t, dir, "ls-tree", src.String(), "--", path)
	if line == "" {
		runGitEnv(t, dir, env, "update-index", "--force-remove", "--", path)
	} else {
		f := strings.Fields(line) // mode type hash\tpath
		runGitEnv(t, dir, env, "update-index", "--add", "--cacheinfo", f[0]+","+f[2]+","+path)
	}
	return runGitEnv(t, dir, env, "write-tree")
}
