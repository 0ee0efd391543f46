package odb

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// readPacked reads every object of a repacked repository as git does: commits, trees, tags and
// blobs, whole or as deltas (offset and ref deltas, long chains), and leaves objects over
// maxPackedRead to Object, which gives the same bytes.
func TestReadPackedMatchesGit(t *testing.T) {
	for _, ofs := range []bool{true, false} {
		t.Run(fmt.Sprintf("ofs-delta=%v", ofs), func(t *testing.T) {
			dir := newGitRepo(t)
			var base strings.Builder
			for i := 0; i < 400; i++ {
				fmt.Fprintf(&base, "line %d of a file that changes a little in every commit\n", i)
			}
			for c := 0; c < 30; c++ {
				content := strings.Replace(base.String(), fmt.Sprintf("line %d ", c*7), fmt.Sprintf("LINE %d (commit %d) ", c*7, c), 1)
				writeFile(t, filepath.Join(dir, "a.txt"), content)
				writeFile(t, filepath.Join(dir, fmt.Sprintf("dir/f%02d.txt", c%5)), content[:1000+c*37])
				if c == 3 {
					writeFile(t, filepath.Join(dir, "big.bin"), strings.Repeat("0123456789abcdef", (maxPackedRead+4096)/16))
				}
				if c == 4 {
					writeFile(t, filepath.Join(dir, "big.bin"), strings.Repeat("0123456789abcdef", (maxPackedRead+4096)/16)+"tail\n")
				}
				runGit(t, dir, "add", "-A")
				runGit(t, dir, "commit", "-qm", fmt.Sprintf("commit %d", c))
			}
			runGit(t, dir, "tag", "-a", "v1", "-m", "an annotated tag")
			runGit(t, dir, "-c", fmt.Sprintf("repack.useDeltaBaseOffset=%v", ofs), "repack", "-adfq", "--depth=50", "--window=50")
			runGit(t, dir, "prune-packed")

			all := runGit(t, dir, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype) %(objectsize) %(deltabase)")
			s := openStore(t, dir)
			want := catFileAll(t, dir)
			deltas, large := 0, 0
			for _, line := range strings.Split(all, "\n") {
				f := strings.Fields(line)
				h := plumbing.NewHash(f[0])
				size, _ := strconv.Atoi(f[2])
				if f[3] != plumbing.ZeroHash.String() {
					deltas++
				}
				typ, data, err := s.readPacked(h)
				if size > maxPackedRead {
					large++
					if !errors.Is(err, errPackedTooLarge) {
						t.Errorf("%s (%d bytes): %v, want errPackedTooLarge", f[0], size, err)
					}
				} else if err != nil {
					t.Errorf("%s %s: %v", f[0], f[1], err)
					continue
				} else if typ.String() != f[1] || !bytes.Equal(data, want[f[0]]) {
					t.Errorf("%s: read a %s of %d bytes, git has a %s of %d", f[0], typ, len(data), f[1], len(want[f[0]]))
				}
				// Through Object (streamed for the large ones).
				obj, err := s.Object(h)
				if err != nil {
					t.Fatalf("%s: %v", f[0], err)
				}
				rd, _ := obj.Reader()
				got, _ := io.ReadAll(rd)
				rd.Close()
				if obj.Type().String() != f[1] || !bytes.Equal(got, want[f[0]]) {
					t.Errorf("%s through Object: a %s of %d bytes, git has a %s of %d", f[0], obj.Type(), len(got), f[1], len(want[f[0]]))
				}
			}
			if deltas < 20 || large < 2 {
				t.Fatalf("%d deltas, %d large objects: the pack does not exercise the reader", deltas, large)
			}
		})
	}
}
