package snapshot

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A watched walk with nothing at all changed since the last one takes its result as it stands
// (no directory read, no second copy of the entry list); an event, a submodule or an entry whose
// stat data cannot vouch for it makes it read again, and every tree is git's.
func TestQuietWalkReusesLastResult(t *testing.T) {
	dir := newGitRepo(t)
	past := time.Now().Add(-time.Hour)
	for i := 0; i < 40; i++ {
		p := filepath.Join(dir, fmt.Sprintf("d%d/f%02d", i%4, i))
		writeFile(t, p, fmt.Sprint(i))
		os.Chtimes(p, past, past) // not racy: the reuse is for stat data that vouches for content
	}
	runGit(t, dir, "add", "d0")
	r := openRepo(t, dir)
	if err := r.Watch(); err != nil {
		t.Skipf("cannot watch here: %v", err)
	}
	defer r.Unwatch()
	first := assertSameTree(t, r, dir)

	again := assertSameTree(t, r, dir)
	if st := r.LastWalk(); !st.Incremental || st.DirsRead != 0 || again.Tree != first.Tree || again.Files != first.Files {
		t.Fatalf("nothing changed: %+v, result %+v (first %+v); want the last result, no directory read", st, again, first)
	}

	// An event: the directory is read again.
	writeFile(t, filepath.Join(dir, "d2", "f02"), "changed")
	os.Chtimes(filepath.Join(dir, "d2", "f02"), past, past)
	changed := assertSameTree(t, r, dir)
	if st := r.LastWalk(); st.DirsRead == 0 || changed.Tree == first.Tree {
		t.Fatalf("after an edit: %+v, tree %s (before %s); want d2 read and a new tree", st, changed.Tree, first.Tree)
	}
	assertSameTree(t, r, dir)
	if st := r.LastWalk(); st.DirsRead != 0 {
		t.Fatalf("quiet again: %+v, want no directory read", st)
	}

	// An entry without stat data (as a racy one, or one a restore wrote, is left) is read again.
	r.mu.Lock()
	for _, e := range r.live.entries {
		if e.path == "d1/f01" {
			e.st = statData{}
		}
	}
	r.mu.Unlock()
	assertSameTree(t, r, dir)
	if st := r.LastWalk(); st.DirsRead == 0 {
		t.Fatalf("an entry without stat data: %+v, want its directory read", st)
	}

	// A nested repository's HEAD moves without an event in this tree: its directory's parent is
	// read every time.
	sub := filepath.Join(dir, "d3", "nested")
	writeFile(t, filepath.Join(sub, "x"), "x")
	runGit(t, sub, "init", "-q")
	runGit(t, sub, "add", "x")
	runGit(t, sub, "commit", "-q", "-m", "one")
	assertSameTree(t, r, dir)
	writeFile(t, filepath.Join(sub, "x"), "y")
	runGit(t, sub, "commit", "-q", "-am", "two")
	assertSameTree(t, r, dir)
	if st := r.LastWalk(); st.DirsRead == 0 {
		t.Fatalf("with a nested repository: %+v, want its parent read", st)
	}
}

// mergeEntries: sorted lists merged in the first one's array when it has the room, in a new one
// when it has not; every entry once, in path order.
func TestMergeEntries(t *testing.T) {
	mk := func(paths ...string) []*entry {
		out := make([]*entry, len(paths))
		for i, p := range paths {
			out[i] = &entry{path: p}
		}
		return out
	}
	for _, c := range []struct{ out, add, want []string }{
		{[]string{"b", "d", "f"}, []string{"a", "c", "g"}, []string{"a", "b", "c", "d", "f", "g"}},
		{[]string{"a"}, nil, []string{"a"}},
		{nil, []string{"a", "b"}, []string{"a", "b"}},
		{[]string{"x", "y"}, []string{"a"}, []string{"a", "x", "y"}},
	} {
		for _, room := range []int{0, 8} {
			base := make([]*entry, 0, len(c.out)+room)
			base = append(base, mk(c.out...)...)
			got := mergeEntries(base, mk(c.add...))
			var paths []string
			for _, e := range got {
				paths = append(paths, e.path)
			}
			if fmt.Sprint(paths) != fmt.Sprint(c.want) {
				t.Errorf("merge %v + %v (room %d) = %v, want %v", c.out, c.add, room, paths, c.want)
			}
			if room >= len(c.add) && len(got) > 0 && &got[0] != &base[:1][0] {
				t.Errorf("merge %v + %v: a new array although the first had room", c.out, c.add)
			}
		}
	}
}

// When a watch ends, the private index is written only when the walks since it was last written
// changed enough entries that reading them again would cost more than writing it: a run that
// edited a file and put it back leaves the index on disk as it was, and the next process's walk
// reads that one file again and gives the same tree.
func TestUnwatchSavesOnlyWhatIsWorthIt(t *testing.T) {
	dir := newGitRepo(t)
	past := time.Now().Add(-time.Hour)
	const n = 200 // the index is written past 16 drifted entries
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("d%d/f%03d", i%4, i))
		writeFile(t, p, fmt.Sprint(i))
		os.Chtimes(p, past, past)
	}
	runGit(t, dir, "add", "-A")
	// The index on disk, written by a process that did not watch.
	r0 := openRepo(t, dir)
	base := assertSameTree(t, r0, dir)
	index := privIndexPath(r0.gitDir)
	// The index is replaced by a rename when written: a new inode, whatever the clock's tick.
	stamp := func() string {
		fi, err := os.Stat(index)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(fi.ModTime().UnixNano(), fi.Sys().(*syscall.Stat_t).Ino)
	}
	written := stamp()

	watched := func(edit func()) {
		r := openRepo(t, dir)
		if err := r.Watch(); err != nil {
			t.Skipf("cannot watch here: %v", err)
		}
		assertSameTree(t, r, dir)
		edit()
		assertSameTree(t, r, dir)
		if err := r.Unwatch(); err != nil {
			t.Fatal(err)
		}
	}
	watched(func() {
		writeFile(t, filepath.Join(dir, "d1", "f001"), "edited")
		os.Chtimes(filepath.Join(dir, "d1", "f001"), past, past)
	})
	if got := stamp(); got != written {
		t.Fatalf("one file changed: the private index was written again (%v, was %v)", got, written)
	}
	r := openRepo(t, dir)
	res := assertSameTree(t, r, dir)
	if res.Tree == base.Tree || res.Hashed != 1 {
		t.Fatalf("the next process: %+v; want a new tree with the one drifted file read again", res)
	}

	// Many changed files: written, and the next process reads none of them again.
	watched(func() {
		for i := 0; i < n; i += 2 {
			p := filepath.Join(dir, fmt.Sprintf("d%d/f%03d", i%4, i))
			writeFile(t, p, "many")
			os.Chtimes(p, past, past) // not racy: a racy file is read again whatever was written
		}
	})
	if got := stamp(); got == written {
		t.Fatal("half the files changed: the private index was not written")
	}
	r = openRepo(t, dir)
	if res := assertSameTree(t, r, dir); res.Hashed != 0 {
		t.Fatalf("after the index was written: %+v, want nothing read again", res)
	}
}

// ReadGitState reads a loose ref again only when its file changed: a ref git rewrote (a new file
// renamed into place) gives its new value, one left alone is taken from the last read.
func TestLooseRefsReadAgainWhenChanged(t *testing.T) {
	defer func(d time.Duration) { refTrustAfter = d }(refTrustAfter)
	refTrustAfter = -time.Hour // every file counts as settled: the cache is used at once
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "a"), "a")
	runGit(t, dir, "add", "a")
	runGit(t, dir, "commit", "-q", "-m", "one")
	c1 := runGit(t, dir, "rev-parse", "HEAD")
	runGit(t, dir, "commit", "-q", "--allow-empty", "-m", "two")
	c2 := runGit(t, dir, "rev-parse", "HEAD")
	runGit(t, dir, "update-ref", "refs/heads/side", c1)
	runGit(t, dir, "update-ref", "refs/tags/keep", c1)
	r := openRepo(t, dir)
	st, err := r.ReadGitState(false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Refs["refs/heads/side"] != c1 || st.Refs["refs/tags/keep"] != c1 {
		t.Fatalf("refs %v, want side and keep at %s", st.Refs, c1)
	}
	if len(r.refSeen) < 2 {
		t.Fatalf("refSeen %v: the loose refs were not kept", r.refSeen)
	}
	runGit(t, dir, "update-ref", "refs/heads/side", c2)
	st, err = r.ReadGitState(false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Refs["refs/heads/side"] != c2 || st.Refs["refs/tags/keep"] != c1 {
		t.Fatalf("after update-ref: side %s, keep %s; want %s and %s", st.Refs["refs/heads/side"], st.Refs["refs/tags/keep"], c2, c1)
	}
	os.Remove(filepath.Join(dir, ".git", "refs", "tags", "keep"))
	st, err = r.ReadGitState(false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Refs["refs/tags/keep"]; ok {
		t.Fatalf("a deleted ref is still listed: %v", st.Refs)
	}
}

func TestTrackedFiles(t *testing.T) {
	dir := newGitRepo(t)
	r := openRepo(t, dir)
	if n := r.TrackedFiles(); n != 0 {
		t.Fatalf("no index yet: %d tracked files", n)
	}
	for i := 0; i < 3; i++ {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("f%d", i)), "x")
	}
	runGit(t, dir, "add", "f0", "f1")
	if n := r.TrackedFiles(); n != 2 {
		t.Fatalf("%d tracked files, want 2", n)
	}
}

// A private index written for another state of the user's index is decoded partial (what a
// reseed keeps of it): the walk reseeds and still trusts the untracked file it read before.
func TestPrivIndexAfterTheUsersIndexChanged(t *testing.T) {
	dir := newGitRepo(t)
	for i := 0; i < 20; i++ {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("d%d/f%02d", i%3, i)), fmt.Sprint(i))
	}
	writeFile(t, filepath.Join(dir, "untracked"), "read by mulligan, not in the user's index")
	writeFile(t, filepath.Join(dir, "later"), "added by the user between two runs")
	ageFiles(t, dir) // nothing racily clean: the test counts what is read
	runGit(t, dir, "add", "d0", "d1", "d2")
	assertSameTree(t, openRepo(t, dir), dir) // the private index, with untracked and later read

	runGit(t, dir, "add", "later") // the user's index changes
	r := openRepo(t, dir)
	if res := assertSameTree(t, r, dir); res.Hashed != 0 {
		t.Fatalf("after the user's index changed: %+v, want nothing read again", res)
	}
}

// TreeEvents counts the writes in the watched tree (the heartbeat's sign of work), whatever walks
// take in between; an unwatched tree says so.
func TestTreeEvents(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "a", "f"), "1")
	r := openRepo(t, dir)
	if _, ok := r.TreeEvents(); ok {
		t.Fatal("an unwatched tree reports events")
	}
	if err := r.Watch(); err != nil {
		t.Skipf("cannot watch here: %v", err)
	}
	defer r.Unwatch()
	assertSameTree(t, r, dir) // the walk watches the directories it reads
	n0, ok := r.TreeEvents()
	if n1, _ := r.TreeEvents(); !ok || n1 != n0 {
		t.Fatalf("quiet tree: %d then %d events", n0, n1)
	}
	writeFile(t, filepath.Join(dir, "a", "f"), "2")
	n2, _ := r.TreeEvents()
	if n2 == n0 {
		t.Fatal("a write in the tree is not counted")
	}
	assertSameTree(t, r, dir) // a take does not reset the count
	if n3, _ := r.TreeEvents(); n3 < n2 {
		t.Fatalf("the count went back from %d to %d after a walk", n2, n3)
	}
}
