package autopsy

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// tempObjects is an object store in a temporary directory (go-git, no git binary).
func tempObjects(t *testing.T) *objects {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"objects", "refs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &objects{st: filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())}
}

func (o *objects) putBlob(t *testing.T, data string) plumbing.Hash {
	t.Helper()
	obj := o.st.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, _ := obj.Writer()
	w.Write([]byte(data))
	w.Close()
	h, err := o.st.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (o *objects) putTree(t *testing.T, entries ...object.TreeEntry) plumbing.Hash {
	t.Helper()
	obj := o.st.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		t.Fatal(err)
	}
	h, err := o.st.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestMaterializeAndRunOnBase(t *testing.T) {
	o := tempObjects(t)
	sub := o.putTree(t, object.TreeEntry{Name: "check.sh", Mode: filemode.Executable, Hash: o.putBlob(t, "#!/bin/sh\ntest -f ../wanted.txt || { echo 'FAIL: wanted.txt missing'; exit 3; }\n")})
	tree := o.putTree(t,
		object.TreeEntry{Name: "README", Mode: filemode.Regular, Hash: o.putBlob(t, "hello\n")},
		object.TreeEntry{Name: "link", Mode: filemode.Symlink, Hash: o.putBlob(t, "README")},
		object.TreeEntry{Name: "scripts", Mode: filemode.Dir, Hash: sub},
	)
	dir := t.TempDir()
	if err := o.materialize(tree, dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "link")); err != nil || string(b) != "hello\n" {
		t.Errorf("symlink: %q, %v", b, err)
	}
	st, err := os.Stat(filepath.Join(dir, "scripts", "check.sh"))
	if err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Fatalf("executable not written as such: %v %v", st, err)
	}
	res, err := runBounded(context.Background(), []string{"sh", "-c", "cd scripts && ./check.sh"}, dir, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || lastNonBlank(res.Output) != "FAIL: wanted.txt missing" {
		t.Errorf("base check = %+v", res)
	}
	if res, err := runBounded(context.Background(), []string{"true"}, dir, time.Minute); err != nil || res.failed() {
		t.Errorf("a passing command: %+v, %v", res, err)
	}
	if _, err := runBounded(context.Background(), []string{"no-such-command-here"}, dir, time.Minute); err == nil {
		t.Error("a command that cannot start gives an answer")
	}
}

func TestMaterializeRefusesUnsafeNames(t *testing.T) {
	o := tempObjects(t)
	tree := o.putTree(t, object.TreeEntry{Name: ".git", Mode: filemode.Regular, Hash: o.putBlob(t, "x")})
	if err := o.materialize(tree, t.TempDir()); err == nil {
		t.Error(".git entry written")
	}
}
