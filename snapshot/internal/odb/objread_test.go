package odb

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// A clone that borrows its objects (git clone --shared: objects/info/alternates) reads every
// object of the one it borrows from as git does, loose and packed, small and large; an object
// found nowhere is ErrObjectNotFound.
func TestObjectsFromAlternates(t *testing.T) {
	src := newGitRepo(t)
	writeFile(t, filepath.Join(src, "small.txt"), "small\n")
	writeFile(t, filepath.Join(src, "big.bin"), strings.Repeat("0123456789abcdef", (maxPackedRead+4096)/16))
	runGit(t, src, "add", "-A")
	runGit(t, src, "commit", "-qm", "packed")
	runGit(t, src, "repack", "-adq")
	writeFile(t, filepath.Join(src, "loose.txt"), "loose\n")
	writeFile(t, filepath.Join(src, "big2.bin"), strings.Repeat("fedcba9876543210", (maxPackedRead+4096)/16))
	runGit(t, src, "add", "-A")
	runGit(t, src, "commit", "-qm", "loose")

	dst := filepath.Join(t.TempDir(), "clone")
	runGit(t, filepath.Dir(dst), "clone", "-q", "--shared", src, dst)
	s := openStore(t, dst)
	want := catFileAll(t, src)
	if len(want) < 8 {
		t.Fatalf("only %d objects in the source", len(want))
	}
	for hex, content := range want {
		typ := runGit(t, src, "cat-file", "-t", hex)
		obj, err := s.Object(plumbing.NewHash(hex))
		if err != nil {
			t.Fatalf("%s %s (%d bytes) through the alternate: %v", typ, hex, len(content), err)
		}
		rd, err := obj.Reader()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rd)
		rd.Close()
		if obj.Type().String() != typ || obj.Size() != int64(len(content)) || !bytes.Equal(got, content) {
			t.Errorf("%s: a %s of %d bytes (size %d), git has a %s of %d", hex, obj.Type(), len(got), obj.Size(), typ, len(content))
		}
	}
	if _, err := s.Object(plumbing.NewHash("0123456789012345678901234567890123456789")); err != plumbing.ErrObjectNotFound {
		t.Errorf("an object nowhere: %v, want ErrObjectNotFound", err)
	}
}
