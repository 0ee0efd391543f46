package snapshot

import (
	"fmt"
	"github.com/mulligan-dev/mulligan/snapshot/internal/odb"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"
)

func TestPrivIndexRoundTrip(t *testing.T) {
	dir := t.TempDir()
	h := func(s string) plumbing.Hash { return odb.ObjectID(plumbing.BlobObject, []byte(s)) }
	hp := func(h plumbing.Hash) *plumbing.Hash { return &h }
	entries := []entry{
		{path: "a", st: statData{1, 2, 3, 4, 5, 6, 7, 8, 9, modeRegular}, mode: modeRegular, flags: fTracked, blob: h("a"), umode: uint16(modeRegular), ub: hp(h("a"))},
		{path: "a b/ü", st: statData{ctimeS: 10, mtimeS: 11, size: 12, mode: modeExec}, mode: modeExec, flags: fTracked | fHashed | fCRCalled | fCRValue, blob: h("x"), umode: uint16(modeRegular), ub: hp(h("y"))},
		{path: "a b/üz", mode: modeSymlink, flags: fHashed, blob: h("link")},
		{path: "sparse/", mode: modeTree, flags: fTracked | fSkipWT, blob: h("tree"), umode: uint16(modeTree), ub: hp(h("tree")), st: statData{size: 42}},
		{path: "zz/gitlink", mode: modeGitlink, flags: fTracked, blob: h("commit"), umode: uint16(modeGitlink), ub: hp(h("old"))},
	}
	p := &privIndex{
		t0S: 100, t0Ns: 200,
		user: userIndexStamp{present: true, st: statData{ctimeS: 1, ctimeNs: 2, mtimeS: 3, mtimeNs: 4, dev: 5, ino: 6, size: 7}, sum: h("index")},
		dirs: []dirInfo{{path: "", tree: h("t0"), fp: 1 << 60, valid: true}, {path: "a b", tree: h("t1"), fp: 7}, {path: "zz", valid: true}},
	}
	dest, tmp := savePrivEntries(t, dir, p, entries)
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("temporary file still there after save: %v", err)
	}
	got, err := loadPrivIndex(dest, nil)
	if err != nil || got == nil {
		t.Fatalf("load: %v, %v", got, err)
	}
	if !reflect.DeepEqual(got.entries, entries) {
		t.Errorf("entries differ:\n got %+v\nwant %+v", got.entries, entries)
	}
	if e := &got.entries[0]; e.ub != &e.blob {
		t.Error("a tracked entry whose user's blob is its own blob does not share it (a hash per file)")
	}
	if !reflect.DeepEqual(got.dirs, p.dirs) || got.user != p.user || got.t0S != 100 || got.t0Ns != 200 {
		t.Errorf("header or dirs differ: %+v", got)
	}

	// Any damage reads as "no private index" (it is a cache), never as wrong data.
	data, _ := os.ReadFile(dest)
	for _, off := range []int{0, 9, len(data) / 2, len(data) - 1} {
		bad := append([]byte(nil), data...)
		bad[off] ^= 0x40
		os.WriteFile(dest, bad, 0o600)
		if got, err := loadPrivIndex(dest, nil); err != nil || got != nil {
			t.Errorf("flipping byte %d: load = %v, %v; want nil, nil", off, got, err)
		}
	}
	os.WriteFile(dest, data[:len(data)-3], 0o600)
	if got, _ := loadPrivIndex(dest, nil); got != nil {
		t.Error("a truncated private index was accepted")
	}
}

// TestRacyRule: an entry whose mtime is not before the private index's own timestamp is read
// again by the next snapshot (its content may have changed within the same clock tick);
// once its mtime is in the past it is trusted.
func TestRacyRule(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "f"), "one\n")
	writeFile(t, filepath.Join(dir, "g"), "other\n")
	ageFiles(t, dir)
	r := openRepo(t, dir)
	if res := assertSameTree(t, r, dir); res.Hashed != 2 {
		t.Fatalf("first snapshot hashed %d, want 2", res.Hashed)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "f"), future, future); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if res := assertSameTree(t, r, dir); res.Hashed != 1 {
			t.Fatalf("snapshot %d with f racily clean hashed %d, want 1 (f again)", i, res.Hashed)
		}
	}
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "f"), past, past); err != nil {
		t.Fatal(err)
	}
	if res := assertSameTree(t, r, dir); res.Hashed != 1 {
		t.Fatalf("after the mtime moved back: hashed %d, want 1", res.Hashed)
	}
	if res := assertSameTree(t, r, dir); res.Hashed != 0 {
		t.Fatalf("clean snapshot hashed %d, want 0", res.Hashed)
	}

	// The rule is what protects a same-size rewrite inside one tick: simulate one by
	// restoring the old mtime after rewriting f while the entry is racy.
	writeFile(t, filepath.Join(dir, "f"), "two\n")
	os.Chtimes(filepath.Join(dir, "f"), future, future)
	assertSameTree(t, r, dir)
	writeFile(t, filepath.Join(dir, "f"), "six\n")
	os.Chtimes(filepath.Join(dir, "f"), future, future)
	res := assertSameTree(t, r, dir)
	if got := runGit(t, dir, "cat-file", "-p", res.Tree.String()+":f"); got != "six" {
		t.Fatalf("snapshot holds f = %q, want the rewrite", got)
	}
}

func TestUserIndexDecoderAgainstGoGit(t *testing.T) {
	for _, version := range []string{"2", "3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			dir := newGitRepo(t)
			long := repeat(repeat("x", 200)+"/", 3) + "f"
			for _, f := range []string{"a", "b/c d", "b/ü", "b/e/f", "-dash", long} {
				writeFile(t, filepath.Join(dir, f), f+"\n")
			}
			runGit(t, dir, "add", "-A")
			// A path of 4095 bytes or more, whose length the entry's flags cannot hold (no
			// file: the filesystem refuses such paths).
			blob := runGit(t, dir, "hash-object", "-w", filepath.Join(dir, "a"))
			runGit(t, dir, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+repeat(repeat("y", 250)+"/", 17)+"g")
			writeFile(t, filepath.Join(dir, "ita"), "later\n")
			runGit(t, dir, "add", "-N", "ita")
			runGit(t, dir, "update-index", "--skip-worktree", "a")
			runGit(t, dir, "update-index", "--assume-unchanged", "b/c d")
			runGit(t, dir, "update-index", "--index-version", version)
			data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
			if err != nil {
				t.Fatal(err)
			}
			ours, err := decodeUserIndex(data)
			if err != nil {
				t.Fatal(err)
			}
			oracle := goGitIndex(t, data)
			if len(ours.entries) != len(oracle.Entries) {
				t.Fatalf("%d entries, go-git decodes %d", len(ours.entries), len(oracle.Entries))
			}
			for i, e := range oracle.Entries {
				u := ours.entries[i]
				if u.name != e.Name || u.hash != e.Hash || u.mode != uint32(e.Mode) || u.st.size != e.Size ||
					u.st.ino != e.Inode || u.st.mtimeS != unixSec(e.ModifiedAt) ||
					(u.flags&fSkipWT != 0) != e.SkipWorktree || (u.flags&fITA != 0) != e.IntentToAdd {
					t.Errorf("entry %d: ours %+v, go-git %+v", i, u, e)
				}
				if want := e.Name == "b/c d"; (u.flags&fAssumeValid != 0) != want {
					t.Errorf("%s: assume-unchanged = %v, want %v", e.Name, !want, want)
				}
			}
		})
	}
}

func repeat(s string, n int) string {
	b := make([]byte, 0, len(s)*n)
	for i := 0; i < n; i++ {
		b = append(b, s...)
	}
	return string(b)
}

func unixSec(t time.Time) uint32 {
	if t.IsZero() {
		return 0
	}
	return uint32(t.Unix())
}

// A run holds an entry per file of the tree from its base snapshot to its end: a field added to
// entry costs that many bytes per file, for every run. (96 = the 16-bit flags and user mode, the
// user's blob by pointer; see entry.)
func TestEntrySize(t *testing.T) {
	if got := unsafe.Sizeof(entry{}); got > 96 {
		t.Fatalf("entry is %d bytes, want at most 96", got)
	}
}

// BenchmarkSavePrivIndex writes the private index of 100k tracked files (the size the run-level
// bench writes at a watch's end after the user's index changed).
func BenchmarkSavePrivIndex(b *testing.B) {
	dir := b.TempDir()
	entries := make([]entry, 100_000)
	es := make([]*entry, len(entries))
	for i := range entries {
		e := &entries[i]
		e.path = benchFile(i)
		e.st = statData{ctimeS: uint32(i), mtimeS: uint32(i), ino: uint32(i), size: uint32(100 + i%200), mode: modeRegular}
		e.mode, e.flags, e.umode = modeRegular, fTracked|fHashed, uint16(modeRegular)
		e.blob = odb.ObjectID(plumbing.BlobObject, []byte(e.path))
		e.ub = &e.blob
		es[i] = e
	}
	p := &privIndex{t0S: 1, dirs: []dirInfo{{path: "", valid: true}}}
	dest := filepath.Join(dir, "index")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := os.CreateTemp(dir, "tmp")
		if err != nil {
			b.Fatal(err)
		}
		if err := savePrivIndex(f, dest, p, es); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPrivIndexPartial: decoded for another state of the user's index, the private index keeps
// only the entries whose content mulligan read itself (all a reseed takes from it), with their
// user's blobs, and all of its directories; for the state it was written for, all of it.
func TestPrivIndexPartial(t *testing.T) {
	dir := t.TempDir()
	h := func(s string) plumbing.Hash { return odb.ObjectID(plumbing.BlobObject, []byte(s)) }
	hp := func(h plumbing.Hash) *plumbing.Hash { return &h }
	st := statData{ctimeS: 10, mtimeS: 11, ino: 3, size: 12, mode: modeRegular}
	entries := []entry{
		{path: "a", st: st, mode: modeRegular, flags: fTracked, blob: h("a"), umode: uint16(modeRegular), ub: hp(h("a"))},
		{path: "b", st: st, mode: modeRegular, flags: fTracked | fHashed, blob: h("b"), umode: uint16(modeRegular), ub: hp(h("b"))},
		{path: "c/d", st: st, mode: modeExec, flags: fTracked | fHashed | fCRCalled, blob: h("x"), umode: uint16(modeRegular), ub: hp(h("y"))},
		{path: "c/e", mode: modeSymlink, flags: fHashed, blob: h("link")}, // no stat data: not kept
		{path: "c/f", st: st, flags: fHashed}, // no content: not kept
		{path: "u", st: st, mode: modeRegular, flags: fHashed, blob: h("u")},
	}
	p := &privIndex{t0S: 100, t0Ns: 200, user: userIndexStamp{present: true, st: statData{mtimeS: 3, ino: 6, size: 7}, sum: h("index")},
		dirs: []dirInfo{{path: "", tree: h("t0"), valid: true}, {path: "c", tree: h("t1"), fp: 7}}}
	dest, _ := savePrivEntries(t, dir, p, entries)

	same := p.user
	full, err := loadPrivIndex(dest, &same)
	if err != nil || full == nil || full.partial || !reflect.DeepEqual(full.entries, entries) {
		t.Fatalf("for the state it was written for: %+v, %v; want all %d entries", full, err, len(entries))
	}
	other := p.user
	other.st.mtimeS++
	part, err := loadPrivIndex(dest, &other)
	if err != nil || part == nil || !part.partial {
		t.Fatalf("for another state: %+v, %v; want a partial index", part, err)
	}
	want := []entry{entries[1], entries[2], entries[5]}
	if !reflect.DeepEqual(part.entries, want) {
		t.Errorf("partial entries:\n got %+v\nwant %+v", part.entries, want)
	}
	if e := &part.entries[0]; e.ub != &e.blob {
		t.Error("a kept entry whose user's blob is its own does not share it")
	}
	if !reflect.DeepEqual(part.dirs, p.dirs) || part.user != p.user || part.t0S != 100 || part.t0Ns != 200 {
		t.Errorf("partial header or dirs differ: %+v", part)
	}
}

// TestPrivIndexPartialMatchesFull: for random private indexes, the partial decode is exactly the
// full decode's entries with own content, user's blobs included.
func TestPrivIndexPartialMatchesFull(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	h := func() plumbing.Hash {
		var x plumbing.Hash
		for i := range x {
			x[i] = byte(rng.IntN(256))
		}
		return x
	}
	for round := 0; round < 20; round++ {
		n := rng.IntN(300)
		entries := make([]entry, n)
		for i := range entries {
			e := &entries[i]
			e.path = fmt.Sprintf("d%02d/%s%05d", rng.IntN(5), strings.Repeat("x", rng.IntN(3)), i)
			e.flags = uint16(rng.IntN(1<<8)) &^ fUblobSame
			if rng.IntN(3) > 0 {
				e.st = statData{ctimeS: rng.Uint32(), mtimeS: rng.Uint32(), ino: rng.Uint32(), size: rng.Uint32(), mode: modeRegular}
			}
			e.mode = []uint32{0, modeRegular, modeExec, modeSymlink, modeGitlink}[rng.IntN(5)]
			e.blob = h()
			if e.flags&fTracked != 0 {
				e.umode = uint16(modeRegular)
				switch rng.IntN(3) {
				case 0:
				case 1:
					if e.mode != 0 {
						e.ub = &e.blob
					}
				default:
					ub := h()
					e.ub = &ub
				}
			}
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].path < entries[j].path })
		p := &privIndex{t0S: 1, user: userIndexStamp{present: true, st: statData{ino: 9}}, dirs: []dirInfo{{path: "", valid: true}}}
		dest, _ := savePrivEntries(t, dir, p, entries)
		full, err := loadPrivIndex(dest, nil)
		if err != nil || full == nil {
			t.Fatalf("round %d: full: %v, %v", round, full, err)
		}
		other := p.user
		other.st.ino++
		part, err := loadPrivIndex(dest, &other)
		if err != nil || part == nil || !part.partial {
			t.Fatalf("round %d: partial: %+v, %v", round, part, err)
		}
		var want []entry
		for _, e := range full.entries {
			if e.ownContent() {
				want = append(want, e)
			}
		}
		if len(part.entries) != len(want) || (len(want) > 0 && !reflect.DeepEqual(part.entries, want)) {
			t.Fatalf("round %d: partial has %d entries, want the %d with own content of %d:\n got %+v\nwant %+v",
				round, len(part.entries), len(want), n, part.entries, want)
		}
	}
}

// savePrivEntries saves p with entries as dir/index through a temporary file of dir, and returns
// both paths.
func savePrivEntries(tb testing.TB, dir string, p *privIndex, entries []entry) (dest, tmp string) {
	tb.Helper()
	f, err := os.CreateTemp(dir, "tmp")
	if err != nil {
		tb.Fatal(err)
	}
	dest = filepath.Join(dir, "index")
	if err := savePrivIndex(f, dest, p, ptrs(entries)); err != nil {
		tb.Fatal(err)
	}
	return dest, f.Name()
}
