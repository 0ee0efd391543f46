package snapshot

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"errors"
	"fmt"
	"os"
	"os/exec"
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

// fuzzRepo is a repository for a fuzz target's git runs, with one commit.
type fuzzRepo struct {
	dir, gitDir string
	commit      plumbing.Hash
	blob        plumbing.Hash // a.txt
}

func newFuzzRepo(f *testing.F) *fuzzRepo {
	f.Helper()
	dir := newGitRepo(f)
	writeFile(f, filepath.Join(dir, "a.txt"), "one\n")
	writeFile(f, filepath.Join(dir, "dir/b.sh"), "#!/bin/sh\n")
	os.Chmod(filepath.Join(dir, "dir/b.sh"), 0o755)
	os.Symlink("a.txt", filepath.Join(dir, "link"))
	runGit(f, dir, "add", "-A")
	runGit(f, dir, "commit", "-qm", "first")
	return &fuzzRepo{
		dir: dir, gitDir: filepath.Join(dir, ".git"),
		commit: plumbing.NewHash(runGit(f, dir, "rev-parse", "HEAD")),
		blob:   plumbing.NewHash(runGit(f, dir, "rev-parse", "HEAD:a.txt")),
	}
}

// git runs git in the repository; an error is git refusing (its stderr in the error).
func (g *fuzzRepo) git(stdin []byte, env []string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = g.dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.Bytes(), nil
}

// canonMode is git's canon_mode: the mode a tree entry is read as.
func canonMode(m uint32) uint32 {
	switch m & 0o170000 {
	case 0o100000:
		if m&0o100 != 0 {
			return 0o100755
		}
		return 0o100644
	case 0o120000:
		return 0o120000
	case 0o040000:
		return 0o040000
	}
	return 0o160000
}

func FuzzTree(f *testing.F) {
	g := newFuzzRepo(f)
	tree := runGit(f, g.dir, "rev-parse", "HEAD^{tree}")
	raw, err := g.git(nil, nil, "cat-file", "tree", tree)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte{})
	f.Add(append([]byte("160000 sub\x00"), g.commit[:]...))
	f.Add(append([]byte("100664 odd\x00"), g.blob[:]...))
	f.Add(append([]byte("0100644 lead\x00"), g.blob[:]...))
	f.Add(append([]byte("100644 \x00"), g.blob[:]...))
	f.Add([]byte("100644 cut\x00abc"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ours, oerr := parseTree(data, plumbing.ZeroHash)
		id, err := g.git(data, nil, "hash-object", "-t", "tree", "--literally", "-w", "--stdin")
		if err != nil {
			t.Fatal(err)
		}
		out, err := g.git(nil, nil, "ls-tree", "-z", "--full-tree", strings.TrimSpace(string(id)))
		if err != nil {
			return // git refuses it
		}
		if oerr != nil {
			t.Fatalf("git reads the tree, mulligan refuses it: %v\n%s", oerr, out)
		}
		var theirs []string
		for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
			if rec == "" {
				continue
			}
			meta, name, _ := strings.Cut(rec, "\t")
			f := strings.Fields(meta)
			theirs = append(theirs, f[0]+" "+f[2]+" "+name)
		}
		var mine []string
		for _, e := range ours {
			mine = append(mine, fmt.Sprintf("%06o %s %s", canonMode(e.mode), e.hash, e.name))
		}
		if !slices.Equal(mine, theirs) {
			t.Fatalf("tree %q:\nmulligan %q\ngit      %q", data, mine, theirs)
		}
	})
}

func FuzzLooseObject(f *testing.F) {
	g := newFuzzRepo(f)
	s := newObjectStore(filepath.Join(g.gitDir, "objects"))
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
		gt, err := g.git(nil, nil, "cat-file", "-t", id.String())
		if err != nil {
			return
		}
		content, err := g.git(nil, nil, "cat-file", strings.TrimSpace(string(gt)), id.String())
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

func FuzzPackedRefs(f *testing.F) {
	g := newFuzzRepo(f)
	os.Remove(filepath.Join(g.gitDir, "refs", "heads", "main"))
	c := g.commit.String()
	for _, seed := range []string{
		"# pack-refs with: peeled fully-peeled sorted \n" + c + " refs/heads/main\n",
		c + " refs/heads/main\n" + c + " refs/tags/v1\n^" + c + "\n",
		c + " refs/heads/no-newline",
		c + " refs/heads/cr\r\n",
		c + " refs/heads/bad..name\n" + c + " refs/heads/ok\n",
		c + "  refs/heads/two-spaces\n",
		c + " HEAD\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(g.gitDir, "packed-refs"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		ours := parsePackedRefs(data)
		out, err := g.git(nil, nil, "for-each-ref", "--format=%(objectname) %(refname)")
		if err != nil {
			return
		}
		var theirs, mine []string
		// Compared: the refs under refs/ that point at the commit (git also lists names it
		// marks broken, with no object, and skips refs whose object is missing).
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.HasPrefix(l, g.commit.String()+" refs/") {
				theirs = append(theirs, l)
			}
		}
		for name, h := range ours {
			if strings.HasPrefix(name, "refs/") && h == g.commit {
				mine = append(mine, h.String()+" "+name)
			}
		}
		slices.Sort(mine)
		slices.Sort(theirs)
		if !slices.Equal(mine, theirs) {
			t.Fatalf("packed-refs %q:\nmulligan %q\ngit      %q", data, mine, theirs)
		}
	})
}

// withTrailer is data with its last 20 bytes replaced by the SHA-1 of the rest, the trailer git
// checks on an index and a pack: fuzzed bytes get past it to the parsers.
func withTrailer(data []byte) []byte {
	if len(data) < 20+12 {
		return data
	}
	out := slices.Clone(data)
	sum := sha1.Sum(out[:len(out)-20])
	copy(out[len(out)-20:], sum[:])
	return out
}

func FuzzIndex(f *testing.F) {
	g := newFuzzRepo(f)
	idx := filepath.Join(g.gitDir, "index")
	add := func(args ...string) {
		runGit(f, g.dir, args...)
		data, err := os.ReadFile(idx)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	add("update-index", "--index-version", "2")
	add("update-index", "--index-version", "3", "--skip-worktree", "a.txt")
	add("update-index", "--index-version", "4")
	writeFile(f, filepath.Join(g.dir, "new.txt"), "new\n")
	add("add", "-N", "new.txt")
	add("update-index", "--index-version", "2", "--untracked-cache")
	add("update-index", "--assume-unchanged", "dir/b.sh")
	add("-c", "index.threads=2", "-c", "index.recordOffsetTable=true", "-c", "index.recordEndOfIndexEntries=true", "update-index", "--index-version", "4", "--no-untracked-cache")
	add("update-index", "--split-index")
	add("update-index", "--no-split-index")
	add("sparse-checkout", "set", "--cone", "--sparse-index", "dir")
	add("sparse-checkout", "disable")
	tmp := filepath.Join(f.TempDir(), "index")
	f.Fuzz(func(t *testing.T, data []byte) {
		data = withTrailer(data)
		ui, oerr := decodeIndexFile(data, g.gitDir) // a split index's shared index is there
		if oerr != nil && strings.Contains(oerr.Error(), "cannot fit") {
			return // (git would allocate for every entry the header claims)
		}
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := g.git(nil, []string{"GIT_INDEX_FILE=" + tmp}, "ls-files", "-s", "-z")
		if err != nil {
			return
		}
		if oerr != nil {
			// git trusts an index whose checksum holds: entries or names that run past the end
			// of the file are read from beyond it, a name with a NUL inside is kept and used as
			// two different paths, and a first entry of version 4 that strips more of the
			// previous name than there is underflows (git 2.44 refuses it). mulligan refuses
			// those.
			for _, bound := range []string{"truncated", "unterminated", "NUL in the name", "bad name compression"} {
				if strings.Contains(oerr.Error(), bound) {
					return
				}
			}
			t.Fatalf("git reads the index, mulligan refuses it: %v", oerr)
		}
		var theirs, mine []string
		for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
			if rec != "" {
				theirs = append(theirs, rec)
			}
		}
		for _, e := range ui.entries {
			if e.mode == modeTree {
				return // a sparse index: git lists it expanded
			}
			mine = append(mine, fmt.Sprintf("%06o %s %d\t%s", e.mode, e.hash, e.stage, e.name))
		}
		if !slices.Equal(mine, theirs) {
			t.Fatalf("index:\nmulligan %q\ngit      %q", mine, theirs)
		}
	})
}

func FuzzPack(f *testing.F) {
	g := newFuzzRepo(f)
	// Two versions of a file that delta against each other, and the commit's objects.
	big := strings.Repeat("line of the base version\n", 200)
	writeFile(f, filepath.Join(g.dir, "big.txt"), big)
	runGit(f, g.dir, "add", "big.txt")
	runGit(f, g.dir, "commit", "-qm", "base")
	writeFile(f, filepath.Join(g.dir, "big.txt"), big+"one more line\n")
	runGit(f, g.dir, "commit", "-qam", "edit")
	objs := runGit(f, g.dir, "rev-list", "--objects", "HEAD")
	var ids []string
	for _, l := range strings.Split(objs, "\n") {
		ids = append(ids, strings.Fields(l)[0])
	}
	seedDir := f.TempDir()
	for _, args := range [][]string{{"pack-objects", "-q"}, {"pack-objects", "-q", "--window=0"}, {"pack-objects", "-q", "--no-reuse-delta", "--delta-base-offset"}} {
		base := filepath.Join(seedDir, fmt.Sprint(len(args)))
		sum, err := g.git([]byte(strings.Join(ids, "\n")+"\n"), nil, append(args, base)...)
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
		data = withTrailer(data)
		objects := filepath.Join(t.TempDir(), "objects")
		pack := filepath.Join(objects, "pack", "pack-fuzz.pack")
		writeFile(t, pack, string(data))
		idx := strings.TrimSuffix(pack, ".pack") + ".idx"
		if _, err := g.git(nil, nil, "index-pack", "-o", idx, pack); err != nil {
			return // git refuses the pack
		}
		idxData, err := os.ReadFile(idx)
		if err != nil {
			t.Fatal(err)
		}
		shown, err := g.git(idxData, nil, "show-index")
		if err != nil {
			t.Fatal(err)
		}
		s := newObjectStore(objects)
		defer s.close()
		env := []string{"GIT_OBJECT_DIRECTORY=" + objects}
		for _, l := range strings.Split(strings.TrimSpace(string(shown)), "\n") {
			id := plumbing.NewHash(strings.Fields(l)[1])
			typ, content, oerr := s.readPacked(id)
			gt, err := g.git(nil, env, "cat-file", "-t", id.String())
			if err != nil {
				continue
			}
			want, err := g.git(nil, env, "cat-file", strings.TrimSpace(string(gt)), id.String())
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
	g := newFuzzRepo(f)
	runGit(f, g.dir, "repack", "-qad")
	matches, _ := filepath.Glob(filepath.Join(g.gitDir, "objects", "pack", "*.idx"))
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
		out, err := g.git(data, nil, "show-index")
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
	r := openRepo(t, dir)
	for id, content := range want {
		_, data, err := r.objs.readPacked(plumbing.NewHash(id))
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
