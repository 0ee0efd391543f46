package snapshot

import (
	"slices"
	"testing"
)

// ApplyChange carries a change (from → to) onto a tree that moved on elsewhere; the result is
// the tree of the expected files, and a path both sides changed differently is a conflict.
func TestApplyChange(t *testing.T) {
	dir := newGitRepo(t)
	r := openRepo(t, dir)
	set := treeSetter(t, dir, r)
	base := map[string]string{"a.txt": "a\n", "b.txt": "b\n", "f": "file\n", "same.txt": "s\n", "both.txt": "0\n"}
	from := set(base)
	to := set(map[string]string{"a.txt": "a2\n", "f/g.txt": "dir now\n", "n/new.txt": "new\n", "same.txt": "s2\n", "both.txt": "mine\n"})
	onto := set(map[string]string{"a.txt": "a\n", "b.txt": "b\n", "f": "file\n", "same.txt": "s2\n", "both.txt": "theirs\n", "other.txt": "o\n"})

	got, conflicts, err := r.ApplyChange(from, to, onto)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"both.txt"}; !slices.Equal(conflicts, want) {
		t.Errorf("conflicts = %v, want %v", conflicts, want)
	}
	want := set(map[string]string{"a.txt": "a2\n", "f/g.txt": "dir now\n", "n/new.txt": "new\n", "same.txt": "s2\n",
		"both.txt": "theirs\n", "other.txt": "o\n"})
	if got != want {
		t.Errorf("ApplyChange = %s, want %s", got, want)
	}

	// onto is the change's own result: nothing to do, no conflict
	if got, conflicts, err := r.ApplyChange(from, to, to); err != nil || got != to || len(conflicts) != 0 {
		t.Errorf("applied onto itself: %s %v %v", got, conflicts, err)
	}
	// a file onto turned into a directory conflicts with a change to it
	dirOnto := set(map[string]string{"a.txt": "a\n", "b.txt": "b\n", "f": "file\n", "same.txt": "s\n", "both.txt": "0\n", "a2/x": "x\n"})
	toFile := set(map[string]string{"a.txt": "a\n", "b.txt": "b\n", "f": "file\n", "same.txt": "s\n", "both.txt": "0\n", "a2": "file\n"})
	if _, conflicts, err := r.ApplyChange(from, toFile, dirOnto); err != nil || !slices.Equal(conflicts, []string{"a2"}) {
		t.Errorf("file over a directory: conflicts %v, %v", conflicts, err)
	}
}
