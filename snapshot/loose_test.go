package snapshot

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"hash/adler32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

func TestStoredZlibInflates(t *testing.T) {
	for _, n := range []int{0, 1, 300, storedMax - storedOverhead} {
		data := bytes.Repeat([]byte("tree 1\x00x"), n/8+1)[:n]
		r, err := zlib.NewReader(bytes.NewReader(storedZlib(data)))
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: inflated %d bytes, %v", n, len(got), err)
		}
		if err := r.Close(); err != nil {
			t.Fatalf("%d bytes: checksum: %v", n, err)
		}
	}
}

// Objects just under and just over the stored size are written, one stored and one deflated, and
// git reads both (cat-file, fsck --strict).
func TestLooseObjectsStoredAndDeflated(t *testing.T) {
	dir := newGitRepo(t)
	r := openRepo(t, dir)
	// "blob 4075\x00" and 4075 bytes fill a 4096-byte file exactly; a byte more is deflated.
	for _, n := range []int{10, 4075, 4076, 1 << 20} {
		data := []byte(strings.Repeat("mulligan stores this blob. ", n/27+1)[:n])
		id, err := r.objs.writeBytes(plumbing.BlobObject, data)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(r.objs.loosePath(id))
		if err != nil {
			t.Fatal(err)
		}
		stored := raw[2] == 0x01 // BFINAL, BTYPE 00
		if want := len("blob ")+digits(n)+1+n+storedOverhead <= storedMax; stored != want {
			t.Errorf("%d bytes: stored=%t (file %d bytes), want stored=%t", n, stored, len(raw), want)
		}
		if got := runGit(t, dir, "cat-file", "blob", id.String()); got != string(data) {
			t.Errorf("%d bytes: git cat-file gives %d bytes", n, len(got))
		}
	}
	runGit(t, dir, "fsck", "--strict", "--no-dangling")
}

func digits(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}

// readLoose reads what mulligan writes (stored or deflated) and what git writes (deflated at its
// own level) as git cat-file gives it; objects over maxPackedRead are left to go-git, which the
// Repo's reads fall back to; a damaged file is an error, not content.
func TestReadLooseMatchesGit(t *testing.T) {
	dir := newGitRepo(t)
	r := openRepo(t, dir)
	var ids []plumbing.Hash
	for _, n := range []int{0, 10, 4075, 4076, 70_000, maxPackedRead + 1} {
		id, err := r.objs.writeBytes(plumbing.BlobObject, []byte(strings.Repeat("mulligan writes this blob. ", n/27+1)[:n]))
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
	tree := snapshotTree(t, r, dir) // a tree mulligan wrote (stored)
	ids = append(ids, tree)

	want := catFileAll(t, dir)
	for _, id := range ids {
		typ := runGit(t, dir, "cat-file", "-t", id.String())
		gotType, data, err := r.objs.readLoose(id)
		if len(want[id.String()]) > maxPackedRead {
			if !errors.Is(err, errLooseTooLarge) {
				t.Errorf("%s (%d bytes): %v, want errLooseTooLarge", id, len(want[id.String()]), err)
			}
		} else if err != nil {
			t.Errorf("%s %s: %v", id, typ, err)
		} else if gotType.String() != typ || !bytes.Equal(data, want[id.String()]) {
			t.Errorf("%s: read a %s of %d bytes, git has a %s of %d", id, gotType, len(data), typ, len(want[id.String()]))
		}
		obj, err := r.encodedObject(plumbing.AnyObject, id)
		if err != nil {
			t.Fatalf("%s through the Repo: %v", id, err)
		}
		rd, _ := obj.Reader()
		got, _ := io.ReadAll(rd)
		rd.Close()
		if obj.Type().String() != typ || !bytes.Equal(got, want[id.String()]) {
			t.Errorf("%s through the Repo: a %s of %d bytes, git has a %s of %d", id, obj.Type(), len(got), typ, len(want[id.String()]))
		}
	}
	if _, _, err := r.objs.readLoose(plumbing.NewHash("0123456789012345678901234567890123456789")); !errors.Is(err, errNotLoose) {
		t.Errorf("an absent object: %v, want errNotLoose", err)
	}

	// Damage: a flipped byte in a stored stream fails its Adler-32 and inflating it; a cut
	// deflated stream does not inflate. Either is an error.
	for i, id := range []plumbing.Hash{ids[1], ids[4]} {
		path := r.objs.loosePath(id)
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
		if _, data, err := r.objs.readLoose(id); err == nil {
			t.Errorf("damaged %s read as %d bytes", id, len(data))
		}
	}
}

func TestUnstoreZlib(t *testing.T) {
	data := []byte(strings.Repeat("stored ", 100))
	if got, ok := unstoreZlib(storedZlib(data)); !ok || !bytes.Equal(got, data) {
		t.Fatalf("one stored block: %q, %t", got, ok)
	}
	// Two stored blocks, as another writer may cut them.
	two := []byte{0x78, 0x01}
	for i, part := range [][]byte{data[:300], data[300:]} {
		n := len(part)
		two = append(two, byte(i), byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
		two = append(two, part...)
	}
	two = binary.BigEndian.AppendUint32(two, adler32.Checksum(data))
	if got, ok := unstoreZlib(two); !ok || !bytes.Equal(got, data) {
		t.Fatalf("two stored blocks: %d bytes, %t", len(got), ok)
	}
	var deflated bytes.Buffer
	zw := zlib.NewWriter(&deflated)
	zw.Write(data)
	zw.Close()
	if _, ok := unstoreZlib(deflated.Bytes()); ok {
		t.Fatal("a deflated stream taken as stored")
	}
	bad := storedZlib(data)
	bad[len(bad)-1] ^= 1
	if _, ok := unstoreZlib(bad); ok {
		t.Fatal("a stream with a wrong Adler-32 taken")
	}
}

// FuzzUnstoreZlib: whatever unstoreZlib takes, zlib inflates to the same bytes.
func FuzzUnstoreZlib(f *testing.F) {
	f.Add(storedZlib([]byte("tree 0\x00")))
	f.Add(storedZlib(nil))
	f.Add([]byte{0x78, 0x01, 0x00, 0x01, 0x00, 0xfe, 0xff, 'x', 0x01, 0x00, 0x00, 0xff, 0xff, 0x00, 0x79, 0x00, 0x79})
	f.Fuzz(func(t *testing.T, z []byte) {
		got, ok := unstoreZlib(z)
		if !ok {
			return
		}
		zr, err := zlib.NewReader(bytes.NewReader(z))
		if err != nil {
			t.Fatalf("taken, but zlib refuses its header: %v", err)
		}
		want, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("taken as %q; zlib inflates %q, %v", got, want, err)
		}
	})
}
