package snapshot

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

func commitFile(t testing.TB, dir, name, content, msg string) plumbing.Hash {
	t.Helper()
	writeFile(t, filepath.Join(dir, name), content)
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-qm", msg)
	return plumbing.NewHash(runGit(t, dir, "rev-parse", "HEAD"))
}

func TestUpdateRefCompareAndSwap(t *testing.T) {
	dir := newGitRepo(t)
	c1 := commitFile(t, dir, "a", "1\n", "one")
	c2 := commitFile(t, dir, "a", "2\n", "two")
	r := openRepo(t, dir)
	const name = "refs/mulligan/manual/x"
	zero := plumbing.ZeroHash

	if _, err := r.Ref(name); !errors.Is(err, ErrRefNotFound) {
		t.Fatalf("Ref of a missing ref: %v, want ErrRefNotFound", err)
	}
	if err := r.UpdateRef(name, c1, zero); err != nil {
		t.Fatal(err)
	}
	if err := r.UpdateRef(name, c2, zero); !errors.Is(err, ErrRefConflict) {
		t.Fatalf("create over an existing ref: %v, want ErrRefConflict", err)
	}
	if err := r.UpdateRef(name, c2, c2); !errors.Is(err, ErrRefConflict) {
		t.Fatalf("update with the wrong old value: %v, want ErrRefConflict", err)
	}
	if err := r.UpdateRef(name, c2, c1); err != nil {
		t.Fatal(err)
	}
	if got := runGit(t, dir, "rev-parse", name); got != c2.String() {
		t.Fatalf("git sees %s, want %s", got, c2)
	}
	// A held lock is someone else's update in progress: refuse, do not wait or steal it.
	lock := filepath.Join(r.CommonDir(), name+".lock")
	writeFile(t, lock, "")
	if err := r.UpdateRef(name, c1, c2); !errors.Is(err, ErrRefConflict) {
		t.Fatalf("update while locked: %v, want ErrRefConflict", err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("the foreign lock file was removed: %v", err)
	}
	os.Remove(lock)

	// Packed refs: compare against the packed value, delete from packed-refs.
	runGit(t, dir, "pack-refs", "--all")
	if _, err := os.Stat(filepath.Join(r.CommonDir(), name)); !os.IsNotExist(err) {
		t.Fatalf("pack-refs left the loose ref: %v", err)
	}
	if err := r.UpdateRef(name, c1, c1); !errors.Is(err, ErrRefConflict) {
		t.Fatalf("update of a packed ref with the wrong old value: %v", err)
	}
	refs, err := r.Refs("refs/mulligan/")
	if err != nil || len(refs) != 1 || refs[0] != (RefEntry{name, c2}) {
		t.Fatalf("Refs = %v, %v", refs, err)
	}
	if err := r.DeleteRef(name, c1); !errors.Is(err, ErrRefConflict) {
		t.Fatalf("delete with the wrong old value: %v", err)
	}
	if err := r.DeleteRef(name, c2); err != nil {
		t.Fatal(err)
	}
	if out := runGit(t, dir, "for-each-ref", "refs/mulligan/"); out != "" {
		t.Fatalf("git still lists %q after DeleteRef", out)
	}
	if data, _ := os.ReadFile(filepath.Join(r.CommonDir(), "packed-refs")); strings.Contains(string(data), name) {
		t.Fatalf("packed-refs still names the deleted ref:\n%s", data)
	}
	if err := r.DeleteRef(name, zero); !errors.Is(err, ErrRefNotFound) {
		t.Fatalf("delete of a missing ref: %v, want ErrRefNotFound", err)
	}
	if err := r.UpdateRef("refs/mulligan/bad..name", c1, zero); err == nil {
		t.Fatal("an invalid ref name was accepted")
	}

	// Directory/file conflicts git refuses too.
	if err := r.UpdateRef("refs/mulligan/runs/r/t/1", c1, zero); err != nil {
		t.Fatal(err)
	}
	if err := r.UpdateRef("refs/mulligan/runs/r/t/1/pre", c1, zero); err == nil {
		t.Fatal("a ref inside another ref's name was accepted")
	}
	if h, err := r.Head(); err != nil || h != c2 {
		t.Fatalf("Head = %s, %v; want %s", h, err, c2)
	}
}

func TestHeadUnborn(t *testing.T) {
	dir := newGitRepo(t)
	r := openRepo(t, dir)
	h, err := r.Head()
	if err != nil || !h.IsZero() {
		t.Fatalf("Head of an unborn branch = %s, %v; want zero, nil", h, err)
	}
	res, err := r.Snapshot(t.Context(), SnapshotOptions{Ref: "refs/mulligan/manual/u", Message: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if parents := runGit(t, dir, "log", "--format=%P", "-1", res.Commit.String()); parents != "" {
		t.Fatalf("snapshot on an unborn HEAD has parents %q", parents)
	}
	if out := runGit(t, dir, "cat-file", "-p", res.Commit.String()); !strings.Contains(out, "author mulligan <mulligan@localhost>") ||
		!strings.Contains(out, "committer mulligan <mulligan@localhost>") || !strings.HasSuffix(out, "first") {
		t.Fatalf("commit object:\n%s", out)
	}
	runGit(t, dir, "fsck", "--strict", "--no-dangling")
}

func TestResolveRevision(t *testing.T) {
	dir := newGitRepo(t)
	commitFile(t, dir, "a", "1\n", "one")
	commitFile(t, dir, "a", "2\n", "two")
	c3 := commitFile(t, dir, "b", "3\n", "three")
	runGit(t, dir, "update-ref", "refs/mulligan/manual/m", c3.String())
	runGit(t, dir, "tag", "-a", "-m", "annotated", "v1", "HEAD~1")
	r := openRepo(t, dir)
	for _, rev := range []string{"HEAD", "main", "refs/heads/main", "mulligan/manual/m", "refs/mulligan/manual/m",
		"HEAD~1", "HEAD~2", "HEAD^", "HEAD^^", "main~1^", "v1", "v1^{}", "v1~1", "HEAD^{tree}", "HEAD~1^{tree}",
		c3.String(), c3.String()[:7], c3.String()[:4] + "", "HEAD^{commit}", "HEAD^0"} {
		tree, commit, err := r.ResolveRevision(rev)
		if err != nil {
			if rev == c3.String()[:4] && errors.Is(err, ErrBadRevision) && strings.Contains(err.Error(), "ambiguous") {
				continue // four digits may be ambiguous in a repository; git would say so too
			}
			t.Errorf("ResolveRevision(%q): %v", rev, err)
			continue
		}
		wantTree := runGit(t, dir, "rev-parse", rev+"^{tree}")
		if tree.String() != wantTree {
			t.Errorf("ResolveRevision(%q) tree = %s, git says %s", rev, tree, wantTree)
		}
		if strings.HasSuffix(rev, "^{tree}") {
			if !commit.IsZero() {
				t.Errorf("ResolveRevision(%q) commit = %s, want zero for a tree", rev, commit)
			}
		} else if want := runGit(t, dir, "rev-parse", rev+"^{commit}"); commit.String() != want {
			t.Errorf("ResolveRevision(%q) commit = %s, git says %s", rev, commit, want)
		}
	}
	treeID := runGit(t, dir, "rev-parse", "HEAD^{tree}")
	if tree, commit, err := r.ResolveRevision(treeID); err != nil || tree.String() != treeID || !commit.IsZero() {
		t.Errorf("ResolveRevision(tree id) = %s, %s, %v", tree, commit, err)
	}
	for _, rev := range []string{"", "nope", "HEAD~9", "HEAD^3", "main^{blob}", "0000000000000000000000000000000000000000",
		"HEAD:a", "abc", runGit(t, dir, "rev-parse", "HEAD:a"), "HEAD^{tree}~1"} {
		if _, _, err := r.ResolveRevision(rev); !errors.Is(err, ErrBadRevision) {
			t.Errorf("ResolveRevision(%q) = %v, want ErrBadRevision", rev, err)
		}
	}
}
