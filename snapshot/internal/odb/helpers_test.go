package odb

import (
	"path/filepath"
	"testing"

	"github.com/mulligan-dev/mulligan/snapshot/internal/gittest"
)

func newGitRepo(t testing.TB) string { return gittest.NewRepo(t) }

func writeFile(t testing.TB, path, content string) { gittest.WriteFile(t, path, content) }

func runGit(t testing.TB, dir string, args ...string) string {
	return gittest.Run(t, dir, nil, args...)
}

func catFileAll(t *testing.T, dir string) map[string][]byte { return gittest.CatFileAll(t, dir) }

// openStore is the object store of the repository at dir.
func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	s := Open(filepath.Join(dir, ".git", "objects"), "")
	t.Cleanup(func() { s.Close() })
	return s
}

// mustGit is git's output as it is (binary), for content git prints.
func mustGit(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	out, err := gittest.Tried(dir, nil, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
