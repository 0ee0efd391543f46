package snapshot

import (
	"bytes"
	"compress/zlib"
	"io"
	"os"
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
