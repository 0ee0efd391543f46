package autopsy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mulligan-dev/mulligan/snapshot"
)

// twoTrees is a real repository whose working tree held files before and then after (as an
// attempt leaves it), with the two trees written: what an attempt's pre and post refs hold.
func twoTrees(t *testing.T, before, after map[string]string) (*snapshot.Repo, string, string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("git", "init", "-q", dir)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("git init: %v: %s", err, out)
	}
	repo, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	write := func(files map[string]string) string {
		for name, text := range files {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		res, err := repo.WriteTree(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return res.Tree.String()
	}
	return repo, write(before), write(after)
}

// onTrees gives every failed attempt of f the trees before and after it, in repo.
func onTrees(f *facts, repo *snapshot.Repo, pre, post string) *facts {
	f.repo = repo
	for i := range f.failed {
		f.failed[i].PreTree, f.failed[i].Tree = pre, post
	}
	return f
}

// writeTree writes repo's working tree as it is now and returns the tree's hash.
func writeTree(t *testing.T, repo *snapshot.Repo) string {
	t.Helper()
	res, err := repo.WriteTree(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res.Tree.String()
}
