//go:build linux

package snapshot

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A snapshot that fills the disk fails with the error and leaves no partial object behind; once
// there is room again the next one works.
func TestSnapshotFullDiskLeavesNoPartial(t *testing.T) {
	hermeticGit(t)
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=768k"); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v): the full-disk case needs one", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	dir := filepath.Join(mnt, "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "init", "-q")
	writeFile(t, filepath.Join(dir, "small.txt"), "small\n")
	r := openRepo(t, dir)
	big := make([]byte, 1<<20) // random: zlib cannot make it fit
	rand.Read(big)
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), big[:600<<10], 0o644); err != nil && !strings.Contains(err.Error(), "no space") {
		t.Fatal(err)
	}
	// Fill what is left, so the object cannot be written.
	var st unix.Statfs_t
	unix.Statfs(mnt, &st)
	free := int64(st.Bavail) * int64(st.Bsize)
	if free > 16<<10 {
		os.WriteFile(filepath.Join(mnt, "filler"), big[:free-16<<10], 0o644)
	}
	_, err := r.WriteTree(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("WriteTree on a full disk: %v, want ENOSPC", err)
	}
	assertNoTemps(t, dir)

	os.Remove(filepath.Join(mnt, "filler"))
	os.Remove(filepath.Join(dir, "big.bin"))
	got := writeTree(t, r)
	if want := gitAddAllTree(t, dir); got.Tree.String() != want {
		t.Fatalf("tree %s after the disk has room again, git says %s", got.Tree, want)
	}
	assertNoTemps(t, dir)
}
