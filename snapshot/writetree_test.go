package snapshot

import (
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestWriteTreeBasic(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "a.txt"), "a\n")
	writeFile(t, filepath.Join(dir, "sub/b.txt"), "b\n")
	writeFile(t, filepath.Join(dir, ".gitignore"), "*.log\nbuild/\n")
	writeFile(t, filepath.Join(dir, "x.log"), "ignored\n")
	writeFile(t, filepath.Join(dir, "build/out"), "ignored\n")
	runGit(t, dir, "add", "a.txt", ".gitignore")
	runGit(t, dir, "commit", "-qm", "one")
	writeFile(t, filepath.Join(dir, "untracked.txt"), "u\n")
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	ageFiles(t, dir) // nothing racily clean: the Hashed counts below are exact
	r := openRepo(t, dir)
	res := assertSameTree(t, r, dir)
	if res.Files != 5 {
		t.Errorf("files = %d, want 5", res.Files)
	}
	objects := countObjects(t, dir)
	again := writeTree(t, r)
	if again.Hashed != 0 || again.Tree != res.Tree {
		t.Errorf("second snapshot hashed %d files (tree %s), want 0 (%s)", again.Hashed, again.Tree, res.Tree)
	}
	if n := countObjects(t, dir); n != objects {
		t.Errorf("a clean snapshot wrote %d objects", n-objects)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, ".git", "mulligan")); len(ents) != 1 {
		t.Errorf(".git/mulligan holds %d files after a clean snapshot, want just the private index", len(ents))
	}
	writeFile(t, filepath.Join(dir, "sub/b.txt"), "changed\n")
	old := time.Now().Add(-time.Minute)
	os.Chtimes(filepath.Join(dir, "sub/b.txt"), old, old)
	os.Remove(filepath.Join(dir, "a.txt"))
	third := assertSameTree(t, r, dir)
	if third.Hashed != 1 {
		t.Errorf("third snapshot hashed %d files, want 1", third.Hashed)
	}
}

// TestWriteTreeBigFileBoundedMemory: a 100 MB file streams through hashing and the object writer;
// the heap does not grow with the file.
func TestWriteTreeBigFileBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and compresses 100 MB")
	}
	dir := newGitRepo(t)
	const size = 100 << 20
	f, err := os.Create(filepath.Join(dir, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", size)
	buf := make([]byte, 1<<20)
	x := uint64(88172645463325252)
	for written := 0; written < size; written += len(buf) {
		for i := 0; i < len(buf); i += 8 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			binary.LittleEndian.PutUint64(buf[i:], x&0x0f0f0f0f0f0f0f0f) // half-random: zlib has work to do
		}
		f.Write(buf)
		h.Write(buf)
	}
	f.Close()
	want := fmt.Sprintf("%x", h.Sum(nil))
	r := openRepo(t, dir)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
			}
		}
	}()
	res := writeTree(t, r)
	close(done)
	if got := runGit(t, dir, "rev-parse", res.Tree.String()+":big.bin"); got != want {
		t.Fatalf("blob %s, want %s", got, want)
	}
	if grew := int64(peak.Load()) - int64(before.HeapInuse); grew > 16<<20 {
		t.Fatalf("heap grew by %d MB while snapshotting a 100 MB file", grew>>20)
	}
	if out := runGit(t, dir, "cat-file", "-s", want); out != fmt.Sprint(size) {
		t.Fatalf("git cat-file -s = %s", out)
	}
}

func countObjects(t testing.TB, dir string) int {
	t.Helper()
	n := 0
	filepath.Walk(filepath.Join(dir, ".git", "objects"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// TestWriteTreeBlobPruned: the private index remembers the blob of an untracked file mulligan
// hashed, but nothing keeps that object alive until a ref names it (here no ref ever does) and
// `git gc` may prune it. The next snapshot must hash the file again, not name a missing object.
func TestWriteTreeBlobPruned(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "tracked.txt"), "t\n")
	runGit(t, dir, "add", "tracked.txt")
	runGit(t, dir, "commit", "-qm", "one")
	writeFile(t, filepath.Join(dir, "notes/untracked.txt"), "only in the working tree\n")
	ageFiles(t, dir)
	r := openRepo(t, dir)
	first := assertSameTree(t, r, dir)
	blob := runGit(t, dir, "rev-parse", first.Tree.String()+":notes/untracked.txt")
	// what `git gc --prune=now` does to an object no ref reaches
	if err := os.Remove(filepath.Join(dir, ".git", "objects", blob[:2], blob[2:])); err != nil {
		t.Fatal(err)
	}
	again := assertSameTree(t, r, dir)
	if again.Hashed != 1 || again.Tree != first.Tree {
		t.Errorf("after the prune: hashed %d (tree %s), want 1 (%s)", again.Hashed, again.Tree, first.Tree)
	}
	if got := runGit(t, dir, "cat-file", "-t", blob); got != "blob" {
		t.Errorf("the blob is %q after the snapshot, want it written again", got)
	}
}

// TestWriteTreeSkipsRestoreLeftovers: the temporary files a killed restore leaves are not part of
// a snapshot (a tracked file of that name, however unlikely, still is).
func TestWriteTreeSkipsRestoreLeftovers(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "a.txt"), "a\n")
	writeFile(t, filepath.Join(dir, ".mulligan-restore-7-tracked"), "the user's, tracked\n")
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-qm", "one")
	r := openRepo(t, dir)
	clean := assertSameTree(t, r, dir)
	for _, p := range []string{".mulligan-restore-4242-1", "sub/.mulligan-restore-99999-2z"} {
		writeFile(t, filepath.Join(dir, p), "half-written\n")
	}
	writeFile(t, filepath.Join(dir, ".mulligan-restore-notours"), "kept: not a name restore makes\n")
	got := writeTree(t, r)
	os.Remove(filepath.Join(dir, ".mulligan-restore-4242-1"))
	os.RemoveAll(filepath.Join(dir, "sub"))
	want := assertSameTree(t, r, dir)
	if got.Tree != want.Tree || want.Tree == clean.Tree {
		t.Errorf("with leftovers %s, without them %s (clean %s)", got.Tree, want.Tree, clean.Tree)
	}
	for name, want := range map[string]bool{
		".mulligan-restore-1-a": true, ".mulligan-restore-12-": false, ".mulligan-restore--a": false,
		".mulligan-restore-1-A": false, ".mulligan-restore-x-1": false, "mulligan-restore-1-a": false,
	} {
		if isRestoreTemp([]byte(name)) != want {
			t.Errorf("isRestoreTemp(%q) = %v", name, !want)
		}
	}
}

// TestWriteTreeIndexBlobNotLookedUp: a tracked file mulligan read again (its stat data no longer
// the index's, as after a reset rewrote it) keeps the blob the user's index names, which git's
// gc never prunes (the index is one of its roots): the next walk trusts it on its stat data
// without looking for the object. Removing the object by hand, which gc would not do, shows it.
func TestWriteTreeIndexBlobNotLookedUp(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "tracked.txt"), "t\n")
	runGit(t, dir, "add", "tracked.txt")
	runGit(t, dir, "commit", "-qm", "one")
	writeFile(t, filepath.Join(dir, "tracked.txt"), "t\n") // same content, new stat data
	ageFiles(t, dir)
	r := openRepo(t, dir)
	first := assertSameTree(t, r, dir)
	if first.Hashed != 1 {
		t.Fatalf("first walk: hashed %d, want the rewritten file read", first.Hashed)
	}
	blob := runGit(t, dir, "rev-parse", first.Tree.String()+":tracked.txt")
	if err := os.Remove(filepath.Join(dir, ".git", "objects", blob[:2], blob[2:])); err != nil {
		t.Fatal(err)
	}
	// A new process (this one remembers what it found), and not compared with git's tree: `git
	// add -A` would write the blob back.
	if again := writeTree(t, openRepo(t, dir)); again.Hashed != 0 || again.Tree != first.Tree {
		t.Errorf("second walk: hashed %d (tree %s), want nothing read (%s): the index names the blob", again.Hashed, again.Tree, first.Tree)
	}
}
