package odb

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// Objects of any size mulligan writes are read by git (cat-file, fsck --strict).
func TestLooseObjectsGitReads(t *testing.T) {
	dir := newGitRepo(t)
	s := openStore(t, dir)
	for _, n := range []int{0, 10, 4075, 4076, 1 << 20} {
		data := []byte(strings.Repeat("mulligan stores this blob. ", n/27+1)[:n])
		id, err := s.WriteBytes(plumbing.BlobObject, data)
		if err != nil {
			t.Fatal(err)
		}
		if got := runGit(t, dir, "cat-file", "blob", id.String()); got != string(data) {
			t.Errorf("%d bytes: git cat-file gives %d bytes", n, len(got))
		}
	}
	runGit(t, dir, "fsck", "--strict", "--no-dangling")
}

// readLoose reads what mulligan writes and what git writes (deflated at its
// own level) as git cat-file gives it; objects over maxPackedRead are left to go-git, which the
// Repo's reads fall back to; a damaged file is an error, not content.
func TestReadLooseMatchesGit(t *testing.T) {
	dir := newGitRepo(t)
	s := openStore(t, dir)
	var ids []plumbing.Hash
	for _, n := range []int{0, 10, 4075, 4076, 70_000, maxPackedRead + 1} {
		id, err := s.WriteBytes(plumbing.BlobObject, []byte(strings.Repeat("mulligan writes this blob. ", n/27+1)[:n]))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	writeFile(t, filepath.Join(dir, "sub/by-git.txt"), strings.Repeat("git writes this one\n", 500))
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-qm", "objects git wrote")
	for _, name := range []string{"HEAD", "HEAD^{tree}", "HEAD:sub", "HEAD:sub/by-git.txt"} {
		ids = append(ids, plumbing.NewHash(runGit(t, dir, "rev-parse", name)))
	}
	tree, err := s.WriteBytes(plumbing.TreeObject, mustGit(t, dir, "cat-file", "tree", "HEAD:sub")) // a tree mulligan wrote
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, tree)

	want := catFileAll(t, dir)
	for _, id := range ids {
		typ := runGit(t, dir, "cat-file", "-t", id.String())
		gotType, data, err := s.readLoose(id)
		if len(want[id.String()]) > maxPackedRead {
			if !errors.Is(err, errLooseTooLarge) {
				t.Errorf("%s (%d bytes): %v, want errLooseTooLarge", id, len(want[id.String()]), err)
			}
		} else if err != nil {
			t.Errorf("%s %s: %v", id, typ, err)
		} else if gotType.String() != typ || !bytes.Equal(data, want[id.String()]) {
			t.Errorf("%s: read a %s of %d bytes, git has a %s of %d", id, gotType, len(data), typ, len(want[id.String()]))
		}
		obj, err := s.Object(id)
		if err != nil {
			t.Fatalf("%s through Object: %v", id, err)
		}
		rd, _ := obj.Reader()
		got, _ := io.ReadAll(rd)
		rd.Close()
		if obj.Type().String() != typ || !bytes.Equal(got, want[id.String()]) {
			t.Errorf("%s through Object: a %s of %d bytes, git has a %s of %d", id, obj.Type(), len(got), typ, len(want[id.String()]))
		}
	}
	if _, _, err := s.readLoose(plumbing.NewHash("0123456789012345678901234567890123456789")); !errors.Is(err, errNotLoose) {
		t.Errorf("an absent object: %v, want errNotLoose", err)
	}

	// Damage: a flipped byte near the end fails the Adler-32; a cut stream does not inflate.
	// Either is an error.
	for i, id := range []plumbing.Hash{ids[1], ids[4]} {
		path := s.loosePath(id)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		bad := append([]byte(nil), raw...)
		if i == 0 {
			bad[len(bad)-6] ^= 0x20
		} else {
			bad = bad[:len(bad)/2]
		}
		os.Chmod(path, 0o644)
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, data, err := s.readLoose(id); err == nil {
			t.Errorf("damaged %s read as %d bytes", id, len(data))
		}
	}
}
