package snapshot

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// Materialize writes a tree as stored: contents, the executable bit, links as links,
// directories; and it refuses a tree past its limits.
func TestMaterialize(t *testing.T) {
	dir := newGitRepo(t)
	r := openRepo(t, dir)
	writeFile(t, filepath.Join(dir, "README"), "hello\n")
	writeFile(t, filepath.Join(dir, "scripts/check.sh"), "#!/bin/sh\nexit 3\n")
	if err := os.Chmod(filepath.Join(dir, "scripts/check.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("README", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	tree := writeTree(t, r).Tree

	out := t.TempDir()
	if err := r.Materialize(tree, out, MaterializeLimits{}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "link")); err != nil || string(b) != "hello\n" {
		t.Errorf("through the link: %q, %v", b, err)
	}
	if target, err := os.Readlink(filepath.Join(out, "link")); err != nil || target != "README" {
		t.Errorf("link = %q, %v", target, err)
	}
	st, err := os.Stat(filepath.Join(out, "scripts", "check.sh"))
	if err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Fatalf("executable not written as such: %v %v", st, err)
	}
	if err := r.Materialize(tree, t.TempDir(), MaterializeLimits{Files: 2}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("3 files with a limit of 2: %v", err)
	}
	if err := r.Materialize(tree, t.TempDir(), MaterializeLimits{Bytes: 10}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("more bytes than the limit: %v", err)
	}
}

func TestMaterializeRefusesUnsafeNames(t *testing.T) {
	r := openRepo(t, newGitRepo(t))
	blob, err := r.objs.WriteBytes(plumbing.BlobObject, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".git", ".GIT"} {
		var b bytes.Buffer
		b.WriteString("100644 " + name + "\x00")
		b.Write(blob[:])
		tree, err := r.objs.WriteBytes(plumbing.TreeObject, b.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		if err := r.Materialize(tree, out, MaterializeLimits{}); err == nil || !strings.Contains(err.Error(), "unsafe") {
			t.Errorf("%s entry: %v", name, err)
		}
		if _, err := os.Lstat(filepath.Join(out, name)); err == nil {
			t.Errorf("%s written", name)
		}
	}
}

// ReadBlob, ReadCommit, HasPath and IsDir read what a snapshot wrote.
func TestReads(t *testing.T) {
	dir := newGitRepo(t)
	r := openRepo(t, dir)
	writeFile(t, filepath.Join(dir, "a/b.txt"), "content\n")
	res, err := r.Snapshot(t.Context(), SnapshotOptions{Ref: "refs/mulligan/manual/x", Message: "m"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.ReadCommit(res.Commit)
	if err != nil || c.Tree != res.Tree || len(c.Parents) != 0 || c.Message != "m\n" {
		t.Fatalf("ReadCommit = %+v, %v", c, err)
	}
	if _, err := r.ReadCommit(res.Tree); err == nil {
		t.Error("a tree read as a commit")
	}
	for p, want := range map[string]bool{"a": true, "a/b.txt": true, "./a/b.txt": true, "a/c": false, "b/x": false} {
		if has, err := r.HasPath(res.Tree, p); err != nil || has != want {
			t.Errorf("HasPath(%s) = %v, %v; want %v", p, has, err, want)
		}
	}
	for p, want := range map[string]bool{"a": true, "a/": true, "a/b.txt": false, "a/c": false} {
		if is, err := r.IsDir(res.Tree, p); err != nil || is != want {
			t.Errorf("IsDir(%s) = %v, %v; want %v", p, is, err, want)
		}
	}
	changes, err := r.DiffTrees(ZeroHash, res.Tree)
	if err != nil || len(changes) != 1 {
		t.Fatalf("DiffTrees = %v, %v", changes, err)
	}
	b, err := r.ReadBlob(changes[0].To.Hash, 0)
	if err != nil || string(b) != "content\n" {
		t.Errorf("ReadBlob = %q, %v", b, err)
	}
	if _, err := r.ReadBlob(changes[0].To.Hash, 3); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadBlob past its limit: %v", err)
	}
	p, err := r.Patch(changes[0])
	if err != nil {
		t.Fatal(err)
	}
	if add, del := p.Counts(); add != 1 || del != 0 || p.Binary() {
		t.Errorf("Patch counts = +%d -%d binary %v", add, del, p.Binary())
	}
	var out bytes.Buffer
	if err := WriteUnified(&out, []*FilePatch{p}, false); err != nil || !strings.Contains(out.String(), "+++ b/a/b.txt\n@@ -0,0 +1 @@\n+content\n") {
		t.Errorf("WriteUnified = %q, %v", out.String(), err)
	}
}
