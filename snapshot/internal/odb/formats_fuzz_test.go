package odb

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"errors"
	"fmt"
	"github.com/mulligan-dev/mulligan/snapshot/internal/gittest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// The binary formats mulligan reads itself, each fuzzed and checked against what git reads from
// the same bytes: wherever git accepts the input, mulligan must read what git reads (it may refuse
// more than git, never read something else). The seed corpora run in `go test`; `go test -fuzz`
// explores further, one git process or two per input.

func FuzzLooseObject(f *testing.F) {
	g := gittest.NewCommitted(f)
	s := Open(filepath.Join(g.GitDir, "objects"), "")
	for _, seed := range []string{"blob 4\x00one\n", "blob 0\x00", "tree 0\x00", "commit 3\x00abc", "blob 5\x00one\n", "blob 3\x00one\n",
		"blob 4 \x00one\n", "blob 04\x00one\n", "blob -1\x00", "bogus 1\x00x", "ofs-delta 1\x00x", "blob 4one\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		id := plumbing.Hash(sha1.Sum(append([]byte("fuzz "), raw...)))
		path := s.loosePath(id)
		var z bytes.Buffer
		zw := zlib.NewWriter(&z)
		zw.Write(raw)
		zw.Close()
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, z.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		typ, data, oerr := s.readLoose(id)
		gt, err := g.Git(nil, nil, "cat-file", "-t", id.String())
		if err != nil {
			return
		}
		content, err := g.Git(nil, nil, "cat-file", strings.TrimSpace(string(gt)), id.String())
		if err != nil {
			return
		}
		if oerr != nil {
			// A header whose size is not the content's is a corrupt object (git fsck says so),
			// which git's cat-file still prints: mulligan refuses it.
			if hdr, rest, ok := bytes.Cut(raw, []byte{0}); ok && !bytes.HasSuffix(hdr, []byte(" "+strconv.Itoa(len(rest)))) {
				return
			}
			t.Fatalf("git reads %q as a %s, mulligan refuses it: %v", raw, gt, oerr)
		}
		if typ.String() != strings.TrimSpace(string(gt)) || !bytes.Equal(data, content) {
			t.Fatalf("%q: mulligan reads a %s %q, git a %s %q", raw, typ, data, gt, content)
		}
	})
}

func FuzzPack(f *testing.F) {
	g := gittest.NewCommitted(f)
	// Two versions of a file that delta against each other, and the commit's objects.
	big := strings.Repeat("line of the base version\n", 200)
	writeFile(f, filepath.Join(g.Dir, "big.txt"), big)
	runGit(f, g.Dir, "add", "big.txt")
	runGit(f, g.Dir, "commit", "-qm", "base")
	writeFile(f, filepath.Join(g.Dir, "big.txt"), big+"one more line\n")
	runGit(f, g.Dir, "commit", "-qam", "edit")
	objs := runGit(f, g.Dir, "rev-list", "--objects", "HEAD")
	var ids []string
	for _, l := range strings.Split(objs, "\n") {
		ids = append(ids, strings.Fields(l)[0])
	}
	seedDir := f.TempDir()
	for _, args := range [][]string{{"pack-objects", "-q"}, {"pack-objects", "-q", "--window=0"}, {"pack-objects", "-q", "--no-reuse-delta", "--delta-base-offset"}} {
		base := filepath.Join(seedDir, fmt.Sprint(len(args)))
		sum, err := g.Git([]byte(strings.Join(ids, "\n")+"\n"), nil, append(args, base)...)
		if err != nil {
			f.Fatal(err)
		}
		data, err := os.ReadFile(base + "-" + strings.TrimSpace(string(sum)) + ".pack")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		data = gittest.WithTrailer(data)
		objects := filepath.Join(t.TempDir(), "objects")
		pack := filepath.Join(objects, "pack", "pack-fuzz.pack")
		writeFile(t, pack, string(data))
		idx := strings.TrimSuffix(pack, ".pack") + ".idx"
		if _, err := g.Git(nil, nil, "index-pack", "-o", idx, pack); err != nil {
			return // git refuses the pack
		}
		idxData, err := os.ReadFile(idx)
		if err != nil {
			t.Fatal(err)
		}
		shown, err := g.Git(idxData, nil, "show-index")
		if err != nil {
			t.Fatal(err)
		}
		s := Open(objects, "")
		defer s.Close()
		env := []string{"GIT_OBJECT_DIRECTORY=" + objects}
		for _, l := range strings.Split(strings.TrimSpace(string(shown)), "\n") {
			id := plumbing.NewHash(strings.Fields(l)[1])
			typ, content, oerr := s.readPacked(id)
			gt, err := g.Git(nil, env, "cat-file", "-t", id.String())
			if err != nil {
				continue
			}
			want, err := g.Git(nil, env, "cat-file", strings.TrimSpace(string(gt)), id.String())
			if err != nil {
				continue
			}
			if oerr != nil {
				t.Fatalf("git reads %s from the pack, mulligan refuses it: %v", id, oerr)
			}
			if typ.String() != strings.TrimSpace(string(gt)) || !bytes.Equal(content, want) {
				t.Fatalf("%s: mulligan reads a %s of %d bytes, git a %s of %d", id, typ, len(content), gt, len(want))
			}
		}
	})
}

func FuzzPackIdx(f *testing.F) {
	g := gittest.NewCommitted(f)
	runGit(f, g.Dir, "repack", "-qad")
	matches, _ := filepath.Glob(filepath.Join(g.GitDir, "objects", "pack", "*.idx"))
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		// The same entries as a version 1 index.
		f.Add(idxV1(data))
	}
	tmp := filepath.Join(f.TempDir(), "x.idx")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			t.Fatal(err)
		}
		p, oerr := openPackIndex(tmp)
		var mine []string
		if oerr == nil {
			for i := 0; i < int(p.fanout[255]); i++ {
				mine = append(mine, fmt.Sprintf("%d %x", p.offset(i), p.names[i*20:i*20+20]))
				p.find(plumbing.Hash(p.names[i*20 : i*20+20]))
			}
			p.close()
		}
		out, err := g.Git(data, nil, "show-index")
		if err != nil || oerr != nil {
			// git's show-index reads what it is given without the checks a pack's use makes
			// (a monotonic fan-out, the trailer): mulligan may refuse more.
			return
		}
		var theirs []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if fs := strings.Fields(l); len(fs) >= 2 {
				theirs = append(theirs, fs[0]+" "+fs[1])
			}
		}
		if !slices.Equal(mine, theirs) {
			t.Fatalf("pack index:\nmulligan %q\ngit      %q", mine, theirs)
		}
	})
}

// idxV1 rewrites a version 2 pack index as version 1 (fan-out, then offset and id per entry,
// then the pack's and the index's checksums).
func idxV1(v2 []byte) []byte {
	const hdr = 8 + 256*4
	n := int(uint32(v2[hdr-4])<<24 | uint32(v2[hdr-3])<<16 | uint32(v2[hdr-2])<<8 | uint32(v2[hdr-1]))
	out := slices.Clone(v2[8:hdr])
	for i := 0; i < n; i++ {
		out = append(out, v2[hdr+n*24+4*i:hdr+n*24+4*i+4]...)
		out = append(out, v2[hdr+20*i:hdr+20*i+20]...)
	}
	out = append(out, v2[len(v2)-40:len(v2)-20]...)
	sum := sha1.Sum(out)
	return append(out, sum[:]...)
}

// A pack whose index is version 1 (git before 1.5.2 wrote them; git still reads them) reads as
// with its version 2 index.
func TestPackIndexV1(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "a.txt"), strings.Repeat("a line\n", 100))
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-qm", "first")
	runGit(t, dir, "repack", "-qad")
	idxs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.idx"))
	if len(idxs) != 1 {
		t.Fatalf("packs: %v", idxs)
	}
	v2, err := os.ReadFile(idxs[0])
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(idxs[0], 0o644)
	if err := os.WriteFile(idxs[0], idxV1(v2), 0o644); err != nil {
		t.Fatal(err)
	}
	want := catFileAll(t, dir) // git reads the version 1 index
	if len(want) == 0 {
		t.Fatal("git lists no object")
	}
	s := openStore(t, dir)
	for id, content := range want {
		_, data, err := s.readPacked(plumbing.NewHash(id))
		if err != nil || !bytes.Equal(data, content) {
			t.Errorf("%s through the version 1 index: %d bytes, %v; git reads %d", id, len(data), err, len(content))
		}
	}
}

// FuzzDelta: applyDelta (git's patch-delta.c, which FuzzPack checks against git itself) gives
// what go-git's PatchDelta gives wherever that one accepts the delta (it refuses any delta on an
// empty base, which git applies).
func FuzzDelta(f *testing.F) {
	f.Add([]byte("hello, world"), []byte("\x0c\x0d\x90\x05\x05there\x91\x05\x07"))
	f.Add([]byte("abc"), []byte("\x03\x03\x90\x00"))
	f.Add([]byte(""), []byte("\x00\x02\x02hi"))
	f.Add([]byte("abc"), []byte("\x03\x01\x00"))
	f.Add([]byte("abc"), []byte("\x03\x03\x80"))
	f.Fuzz(func(t *testing.T, base, d []byte) {
		if _, rest, err := deltaHeaderSize(d); err == nil && len(rest) == 0 {
			return // no room for the result's size: git's get_delta_hdr_size reads past the end
		}
		ours, oerr := applyDelta(base, d, true, 1<<20)
		theirs, gerr := packfile.PatchDelta(base, d)
		switch {
		case oerr != nil && gerr == nil:
			if !errors.Is(oerr, errPackedTooLarge) {
				t.Fatalf("go-git applies the delta, mulligan refuses it: %v", oerr)
			}
		case oerr == nil && gerr != nil:
			if len(base) > 0 {
				t.Fatalf("mulligan applies the delta (%q), go-git refuses it: %v", ours, gerr)
			}
		case oerr == nil && !bytes.Equal(ours, theirs):
			t.Fatalf("mulligan gives %q, go-git %q", ours, theirs)
		}
	})
}
