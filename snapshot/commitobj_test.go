package snapshot

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Commits git wrote — a root, a merge, and one with headers mulligan skips (a multi-line gpgsig,
// an encoding) — read as git reads them: tree, parents, committer time and zone, message.
func TestParseCommitAsGitReadsIt(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "a"), "a\n")
	runGit(t, dir, "add", "a")
	runGit(t, dir, "commit", "-qm", "root")
	root := runGit(t, dir, "rev-parse", "HEAD")
	runGit(t, dir, "checkout", "-qb", "side")
	writeFile(t, filepath.Join(dir, "b"), "b\n")
	runGit(t, dir, "add", "b")
	runGit(t, dir, "commit", "-qm", "side")
	runGit(t, dir, "checkout", "-q", "-")
	writeFile(t, filepath.Join(dir, "c"), "c\n")
	runGit(t, dir, "add", "c")
	runGit(t, dir, "commit", "-qm", "main")
	runGit(t, dir, "merge", "-q", "--no-edit", "side")
	merge := runGit(t, dir, "rev-parse", "HEAD")

	tree := runGit(t, dir, "rev-parse", root+"^{tree}")
	raw := "tree " + tree + "\nparent " + root + "\nauthor A U Thor <a@example.com> 1700000000 -0230\n" +
		"committer C O Mitter <c@example.com> 1700000123 +0545\nencoding ISO-8859-1\n" +
		"gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nsigned\n\nbody line\n"
	cmd := exec.Command("git", "hash-object", "-t", "commit", "-w", "--stdin")
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(raw)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	signed := strings.TrimSpace(string(out))

	r := openRepo(t, dir)
	for _, id := range []string{root, merge, signed} {
		_, obj, err := r.readObject(plumbing.NewHash(id))
		if err != nil {
			t.Fatal(err)
		}
		c, err := decodeCommit(obj)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if want := runGit(t, dir, "rev-parse", id+"^{tree}"); c.tree.String() != want {
			t.Errorf("%s: tree %s, git says %s", id, c.tree, want)
		}
		var parents []string
		for _, p := range c.parents {
			parents = append(parents, p.String())
		}
		if want := runGit(t, dir, "log", "-1", "--format=%P", id); strings.Join(parents, " ") != want {
			t.Errorf("%s: parents %v, git says %q", id, parents, want)
		}
		if want := runGit(t, dir, "log", "-1", "--format=%ct %cI", id); want != strconv.FormatInt(c.committer.Unix(), 10)+" "+c.committer.Format("2006-01-02T15:04:05-07:00") {
			t.Errorf("%s: committer time %v, git says %q", id, c.committer, want)
		}
		body := runGit(t, dir, "cat-file", "commit", id)
		if _, msg, _ := strings.Cut(body, "\n\n"); strings.TrimSpace(c.message) != strings.TrimSpace(msg) {
			t.Errorf("%s: message %q, git's object has %q", id, c.message, msg)
		}
	}
}

// An annotated tag's target, as git peels it.
func TestParseTagTarget(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "a"), "a\n")
	runGit(t, dir, "add", "a")
	runGit(t, dir, "commit", "-qm", "one")
	runGit(t, dir, "tag", "-a", "-m", "a tag\n\nwith a body", "v1")
	tag := runGit(t, dir, "rev-parse", "v1")
	r := openRepo(t, dir)
	_, obj, err := r.readObject(plumbing.NewHash(tag))
	if err != nil {
		t.Fatal(err)
	}
	data, err := objectBytes(obj)
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseTagTarget(data)
	if want := runGit(t, dir, "rev-parse", "v1^{}"); err != nil || got.String() != want {
		t.Fatalf("target %s (%v), git says %s", got, err, want)
	}
	if _, err := parseTagTarget([]byte("type commit\ntag v1\n\nno object line\n")); err == nil {
		t.Fatal("a tag without an object line was read")
	}
	if _, err := parseCommit([]byte("parent " + tag + "\n\nno tree\n")); err == nil {
		t.Fatal("a commit without a tree line was read")
	}
}

// What Commit writes is what git writes for the same commit: `git commit-tree` with the same
// identity, time and zone gives the same id, and fsck --strict accepts it.
func TestCommitEncodingIsGits(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "a"), "a\n")
	runGit(t, dir, "add", "a")
	runGit(t, dir, "commit", "-qm", "one")
	head := runGit(t, dir, "rev-parse", "HEAD")
	tree := runGit(t, dir, "rev-parse", "HEAD^{tree}")
	defer func(f func() time.Time) { now = f }(now)
	when := time.Date(2026, 12, 4, 5, 6, 7, 0, time.FixedZone("", -(3*3600+30*60)))
	now = func() time.Time { return when }
	r := openRepo(t, dir)
	id, err := r.Commit(plumbing.NewHash(tree), []plumbing.Hash{plumbing.NewHash(head)}, "mulligan run x: base\n\nThe working tree.")
	if err != nil {
		t.Fatal(err)
	}
	stamp := strconv.FormatInt(when.Unix(), 10) + " -0330"
	want := runGitEnv(t, dir, []string{"GIT_AUTHOR_NAME=mulligan", "GIT_AUTHOR_EMAIL=mulligan@localhost", "GIT_AUTHOR_DATE=" + stamp,
		"GIT_COMMITTER_NAME=mulligan", "GIT_COMMITTER_EMAIL=mulligan@localhost", "GIT_COMMITTER_DATE=" + stamp},
		"commit-tree", tree, "-p", head, "-m", "mulligan run x: base\n\nThe working tree.")
	if id.String() != want {
		t.Fatalf("commit %s, git commit-tree gives %s:\n%s", id, want, runGit(t, dir, "cat-file", "commit", id.String()))
	}
	runGit(t, dir, "fsck", "--strict", "--no-dangling")
}

func FuzzParseCommit(f *testing.F) {
	f.Add([]byte("tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nparent 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor a <b> 1 +0000\ncommitter a <b> 2 -0130\n\nmsg\n"))
	f.Add([]byte("tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\ngpgsig x\n y\n\n"))
	f.Add([]byte("object 4b825dc642cb6eb9a060e54bf8d69288fbee4904\ntype tree\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if c, err := parseCommit(data); err == nil && c.tree.IsZero() {
			t.Fatal("a commit without a tree was accepted")
		}
		parseTagTarget(data)
		signatureTime(data)
	})
}
