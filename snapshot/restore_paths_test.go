package snapshot

import (
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// checkPaths and limitToPaths answer as the per-path lookups they replaced (one tree walk from
// the root, one scan of the paths, per path) on random path lists: files, directories, paths in
// one tree only, in neither, under a file, malformed.
func TestRestorePathsAsPerPathLookups(t *testing.T) {
	dir := newGitRepo(t)
	r := openRepo(t, dir)
	for _, p := range []string{"a.txt", "a/b.txt", "a/b/c.txt", "a/b-c", "d/e/f/g.txt", "only-cur/x", "z"} {
		writeFile(t, filepath.Join(dir, p), p+"\n")
	}
	cur := writeTree(t, r).Tree
	writeFile(t, filepath.Join(dir, "a/b/c.txt"), "changed\n")
	writeFile(t, filepath.Join(dir, "only-target/y"), "y\n")
	writeFile(t, filepath.Join(dir, "d/e/h"), "h\n")
	target := writeTree(t, r).Tree
	changes, err := r.DiffTrees(cur, target)
	if err != nil {
		t.Fatal(err)
	}
	changes = append(changes, Change{Path: "a"}, Change{Path: "ab"}, Change{Path: "a/b"}, Change{Path: "d/e/f/g.txt"})

	pool := []string{"a.txt", "a", "a/b", "a/b.txt", "a/b/c.txt", "a/b-c", "a/b/", "d", "d/e", "d/e/f/g.txt", "d/e/h",
		"only-cur", "only-cur/x", "only-target/y", "z", "z/under-a-file", "missing", "a/missing", "", ".", "/a", "a//b", "../a", "ab"}
	rnd := rand.New(rand.NewSource(1))
	for i := 0; i < 500; i++ {
		paths := make([]string, rnd.Intn(5))
		for j := range paths {
			paths[j] = pool[rnd.Intn(len(pool))]
		}
		name := fmt.Sprintf("%q", paths)
		got, want := r.checkPaths(paths, cur, target), checkPathsPerPath(r, paths, cur, target)
		if fmt.Sprint(got) != fmt.Sprint(want) || errors.Is(got, ErrPathNotFound) != errors.Is(want, ErrPathNotFound) {
			t.Errorf("checkPaths(%s) = %v, want %v", name, got, want)
		}
		if got, want := limitToPaths(changes, paths), limitToPathsPerPath(changes, paths); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("limitToPaths(%s) = %v, want %v", name, got, want)
		}
	}
}

// checkPathsPerPath is the former checkPaths: a lookup from the root per path.
func checkPathsPerPath(r *Repo, paths []string, cur, target plumbing.Hash) error {
	for _, p := range paths {
		if p == "" || p == "." {
			continue
		}
		if err := checkPath(p); err != nil {
			return fmt.Errorf("%w: %q", ErrPathNotFound, p)
		}
		parts := strings.Split(p, "/")
		a, err := r.lookupEntry(target, parts)
		if err != nil {
			return err
		}
		b, err := r.lookupEntry(cur, parts)
		if err != nil {
			return err
		}
		if a == nil && b == nil {
			return fmt.Errorf("%w: %s is in neither the tree to restore nor the working tree", ErrPathNotFound, p)
		}
	}
	return nil
}

// limitToPathsPerPath is the former limitToPaths: every path against every change.
func limitToPathsPerPath(changes []Change, paths []string) []Change {
	if len(paths) == 0 {
		return changes
	}
	for _, p := range paths {
		if p == "" || p == "." {
			return changes
		}
	}
	var out []Change
	for _, c := range changes {
		for _, p := range paths {
			if c.Path == p || strings.HasPrefix(c.Path, p+"/") {
				out = append(out, c)
				break
			}
		}
	}
	return out
}
