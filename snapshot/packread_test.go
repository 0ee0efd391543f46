package snapshot

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// readPacked reads every object of a repacked repository as git does: commits, trees, tags and
// blobs, whole or as deltas (offset and ref deltas, long chains), and leaves objects over
// maxPackedRead to go-git; Repo's reads (which use it) give the same bytes.
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
			r := openRepo(t, dir)
			want := catFileAll(t, dir)
			deltas, large := 0, 0
			for _, line := range strings.Split(all, "\n") {
				f := strings.Fields(line)
				h := plumbing.NewHash(f[0])
				size, _ := strconv.Atoi(f[2])
				if f[3] != plumbing.ZeroHash.String() {
					deltas++
				}
				typ, data, err := r.objs.readPacked(h)
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
				// Through the Repo (go-git for the large ones).
				obj, err := r.encodedObject(plumbing.AnyObject, h)
				if err != nil {
					t.Fatalf("%s: %v", f[0], err)
				}
				rd, _ := obj.Reader()
				got, _ := io.ReadAll(rd)
				rd.Close()
				if obj.Type().String() != f[1] || !bytes.Equal(got, want[f[0]]) {
					t.Errorf("%s through the Repo: a %s of %d bytes, git has a %s of %d", f[0], obj.Type(), len(got), f[1], len(want[f[0]]))
				}
			}
			if deltas < 20 || large < 2 {
				t.Fatalf("%d deltas, %d large objects: the pack does not exercise the reader", deltas, large)
			}
			// A type asked for that the object is not: not found, as go-git answers.
			head := plumbing.NewHash(runGit(t, dir, "rev-parse", "HEAD"))
			if _, err := r.encodedObject(plumbing.TreeObject, head); !errors.Is(err, plumbing.ErrObjectNotFound) {
				t.Errorf("a commit read as a tree: %v", err)
			}
		})
	}
}

// catFileAll is every object's content, as git cat-file --batch gives it.
func catFileAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	cmd := exec.Command("git", "cat-file", "--batch-all-objects", "--batch")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	br := bufio.NewReader(bytes.NewReader(out))
	for {
		hdr, err := br.ReadString('\n')
		if err == io.EOF {
			return m
		}
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(hdr)
		n, _ := strconv.Atoi(f[2])
		data := make([]byte, n+1)
		if _, err := io.ReadFull(br, data); err != nil {
			t.Fatal(err)
		}
		m[f[0]] = data[:n]
	}
}
