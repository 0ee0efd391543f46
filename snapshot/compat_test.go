package snapshot_test

// The compatibility suite: the proof that the engine's tree id is git's.
//
// Each case builds a real repository with the git binary, then compares
// Repo.WriteTree with `cp .git/index T; GIT_INDEX_FILE=T git add -A; git
// write-tree` (gitWriteTree), checks the user's index, HEAD, refs, config and
// worktree files are byte-for-byte unchanged, then edits and compares again
// (the private index is reused), then reopens and compares a third time (the
// private index is read back from disk).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/snapshot"
)

type compatCase struct {
	name string
	// long cases are skipped under -short.
	long bool
	// needs names a binary the case cannot run without (skipped, saying so).
	needs string
	// setup builds the repository and returns the directory to open the engine
	// on ("" for the root).
	setup func(r *testRepo) string
	// edit changes the tree before the second snapshot (a new file is always added too).
	edit func(r *testRepo, dir string)
}

func TestCompatWithGit(t *testing.T) {
	for _, c := range compatCases() {
		t.Run(c.name, func(t *testing.T) { runCompatCase(t, c, false) })
	}
}

// TestCompatWithGitWatched runs the same matrix through a watched Repo: the first snapshot
// walks the tree and sets up the watch, the second re-reads only what the events name (or,
// where the edit changed the rules, walks it all again), and each must still be git's tree.
// A third snapshot with nothing changed must be incremental; the private index written when
// watching ends must read back to the same tree.
func TestCompatWithGitWatched(t *testing.T) {
	if testing.Short() {
		// The short lane keeps the unwatched matrix and the watched tests of live_test.go and
		// TestRestoreRoundTripWatched (each against git); the whole cross-product runs in make test.
		t.Skip("the watched matrix: skipped under -short")
	}
	incremental := 0
	for _, c := range compatCases() {
		t.Run(c.name, func(t *testing.T) {
			if runCompatCase(t, c, true) {
				incremental++
			}
		})
	}
	if incremental == 0 && !t.Skipped() {
		t.Errorf("no case took its second snapshot incrementally: the watched path was never tested")
	}
}

// runCompatCase runs one case and reports whether its second snapshot was incremental.
func runCompatCase(t *testing.T, c compatCase, watched bool) bool {
	if c.long && testing.Short() {
		t.Skip("long case: skipped under -short")
	}
	if c.needs != "" {
		if _, err := exec.LookPath(c.needs); err != nil {
			t.Skipf("%s is not on PATH; this case needs it", c.needs)
		}
	}
	r := newRepo(t)
	dir := c.setup(r)
	if dir == "" {
		dir = r.Root
	}
	root := gitRepoInfo(t, dir).Root

	repo := openRepo(t, dir)
	if repo.Root() != root {
		t.Errorf("Root() = %q, git rev-parse --show-toplevel = %q", repo.Root(), root)
	}
	if watched {
		if err := repo.Watch(); err != nil {
			t.Fatalf("Watch: %v", err)
		}
	}
	first := assertTreeMatchesGit(t, repo, dir)

	mustWrite(t, filepath.Join(root, "mulligan-second-round.txt"), []byte("second\n"), 0o644)
	if c.edit != nil {
		c.edit(r, dir)
	}
	second := assertTreeMatchesGit(t, repo, dir)
	if second.Tree == first.Tree {
		t.Errorf("second snapshot after edits has the same tree %s as the first", first.Tree)
	}
	inc := false
	if watched {
		st := repo.LastWalk()
		inc = st.Incremental
		t.Logf("second snapshot: incremental %v (%s), %d directories read", st.Incremental, st.Full, st.DirsRead)
		again := writeTree(t, repo)
		if st := repo.LastWalk(); !st.Incremental || again.Tree != second.Tree {
			t.Errorf("watched WriteTree with nothing changed: tree %s (want %s), incremental %v (%s)", again.Tree, second.Tree, st.Incremental, st.Full)
		}
		if err := repo.Unwatch(); err != nil {
			t.Fatalf("Unwatch: %v", err)
		}
	}

	// A fresh engine reads the private index back from disk; git's answer
	// cannot have changed, so only the engine is asked.
	again := openRepo(t, dir)
	before := captureState(t, dir)
	third := writeTree(t, again)
	if d := before.diff(captureState(t, dir)); len(d) > 0 {
		t.Errorf("reopened WriteTree changed the user's repository:\n  %s", strings.Join(d, "\n  "))
	}
	if third.Tree != second.Tree {
		t.Errorf("reopened WriteTree = %s, want %s (nothing changed)", third.Tree, second.Tree)
	}
	gitFsck(t, dir)
	return inc
}

// gitFsck checks every object the engine wrote is well formed (sorted tree
// entries, modes without leading zeros, valid commit headers).
func gitFsck(t testing.TB, dir string) {
	t.Helper()
	if out, err := tryGit(dir, nil, "fsck", "--strict", "--no-dangling", "--no-progress"); err != nil {
		t.Errorf("git fsck --strict: %v\n%s", err, out)
	}
}

// eolContents are the kinds of line endings each attribute case is tried with.
var eolContents = []struct{ kind, content string }{
	{"crlf", "one\r\ntwo\r\n"},
	{"lf", "one\ntwo\n"},
	{"mixed", "one\r\ntwo\nthree\r\n"},
	{"lonecr", "one\rtwo\r\n"},
	{"binary", "bin\x00ary\r\nmore\r\n"},
	{"noeol", "a\r\nb"},
	{"empty", ""},
}

// eolSetup builds, for each content kind, files that are
//   - tracked-*: committed raw before the attributes existed, untouched since and
//     stat-clean (git keeps the committed blob, whatever the attributes now say);
//   - racy-*: committed raw with an mtime in the future, so racily clean (git
//     re-reads it and applies the new attributes, keeping CRLF when the index
//     blob has CR for the auto modes);
//   - modified-*: committed raw, then rewritten;
//   - new-*: untracked.
//
// config holds key=value pairs for the repository's config.
func eolSetup(attrs string, config ...string) func(r *testRepo) string {
	return func(r *testRepo) string {
		old := time.Now().Add(-time.Hour)
		future := time.Now().Add(time.Hour)
		for _, c := range eolContents {
			for _, pre := range []string{"tracked", "racy", "modified"} {
				name := pre + "-" + c.kind + ".t"
				r.write(name, c.content)
				if pre == "racy" {
					r.setMtime(name, future)
				} else {
					r.setMtime(name, old)
				}
			}
		}
		r.write("plain/readme", "x\r\ny\n")
		r.setMtime("plain/readme", old)
		r.commitAll("raw contents, no attributes")
		if attrs != "" {
			r.write(".gitattributes", attrs)
		}
		for _, kv := range config {
			k, v, _ := strings.Cut(kv, "=")
			r.git("config", k, v)
		}
		for _, c := range eolContents {
			r.write("modified-"+c.kind+".t", c.content+c.content+"end\r\n")
			r.write("new-"+c.kind+".t", c.content)
			r.write("sub/new-"+c.kind, c.content)
		}
		return ""
	}
}

func eolEdit(r *testRepo, _ string) {
	for _, c := range eolContents {
		r.write("new-"+c.kind+".t", "changed "+c.content)
		r.write("second-"+c.kind+".t", c.content)
	}
}

func compatCases() []compatCase {
	cases := []compatCase{
		{
			name: "plain",
			setup: func(r *testRepo) string {
				r.write("README", "hello\n")
				r.write("src/main.go", "package main\n")
				r.write("src/deep/er/file.txt", "deep\n")
				r.commitAll("init")
				r.write("src/new.go", "package main // new\n")
				r.write("README", "hello again\n")
				return ""
			},
			edit: func(r *testRepo, _ string) {
				r.remove("src/deep")
				r.write("src/main.go", "package main\n\nfunc main() {}\n")
			},
		},
		{
			name: "ignore-nested-and-negated",
			setup: func(r *testRepo) string {
				r.write(".gitignore", "*.log\n!keep.log\nbuild/\n!build/keep.txt\n/only-root.tmp\ndoc/*.md\n")
				r.write("a.log", "ignored\n")
				r.write("keep.log", "negated, kept\n")
				r.write("build/out.o", "ignored dir\n")
				r.write("build/keep.txt", "stays ignored: its directory is excluded\n")
				r.write("only-root.tmp", "anchored, ignored\n")
				r.write("sub/only-root.tmp", "anchored elsewhere, kept\n")
				r.write("doc/a.md", "ignored by doc/*.md\n")
				r.write("doc/x/a.md", "a slash in the middle anchors; one level only, kept\n")
				r.write("x/doc/a.md", "anchored to the root: kept\n")
				r.write("sub/.gitignore", "!*.log\n")
				r.write("sub/b.log", "re-included by sub/.gitignore\n")
				r.write("sub/build/y", "build/ matches at any level\n")
				r.write("sub/deeper/.gitignore", "*.txt\n!important.txt\n")
				r.write("sub/deeper/x.txt", "ignored\n")
				r.write("sub/deeper/important.txt", "kept\n")
				r.write("sub/deeper/more/y.txt", "ignored from above\n")
				r.write("sub/deeper/more/important.txt", "kept\n")
				r.write("other.txt", "not ignored at the root\n")
				return ""
			},
			edit: func(r *testRepo, _ string) {
				r.write("sub/deeper/.gitignore", "*.txt\n")
				r.write("new.log", "ignored\n")
			},
		},
		{
			name: "ignore-syntax",
			setup: func(r *testRepo) string {
				// CRLF lines, comments, escapes, trailing spaces, classes, case.
				r.write(".gitignore", "# comment\r\n\\#hash\r\n\\!bang\r\ntrailing-space   \r\nescaped-space\\ \r\n[abc]-class.x\r\n?-single.y\r\n*.Z\r\n\r\nno-newline-at-end")
				for _, f := range []string{"# comment", "#hash", "!bang", "trailing-space", "trailing-space   ",
					"escaped-space ", "escaped-space", "a-class.x", "d-class.x", "q-single.y", "qq-single.y",
					"FILE.Z", "file.z", "no-newline-at-end"} {
					r.write(f, f+"\n")
				}
				return ""
			},
		},
		{
			name: "ignore-double-star",
			setup: func(r *testRepo) string {
				r.write(".gitignore", "**/gen/\na/**/b.tmp\n**/*.cache\ndocs/**\n!docs/README\nlib**z\n**/top/**/leaf\n")
				for _, f := range []string{"gen/x", "p/q/gen/y", "a/b.tmp", "a/x/b.tmp", "a/x/y/b.tmp",
					"other/a/b.tmp", "z.cache", "deep/er/z.cache", "docs/README", "docs/other",
					"docs/sub/README", "lib-x-z", "libz", "libdir/z", "top/leaf", "m/top/n/o/leaf", "top/leafy",
					"keep.txt"} {
					r.write(f, f+"\n")
				}
				return ""
			},
		},
		{
			name: "ignore-directory-only",
			setup: func(r *testRepo) string {
				r.write(".gitignore", "logs/\ncache/\nout/\n")
				r.write("logs/a.txt", "ignored\n")
				r.write("sub/logs/b.txt", "ignored at any level\n")
				r.write("sub/out", "a file named out: kept\n")
				r.write("realcache/x", "kept\n")
				r.symlink("realcache", "cache") // a symlink is not a directory: kept
				return ""
			},
		},
		{
			name: "ignore-info-exclude",
			setup: func(r *testRepo) string {
				r.write(".git/info/exclude", "secret*\n/top-only\n")
				for _, f := range []string{"secret.txt", "sub/secret2", "top-only", "sub/top-only", "public"} {
					r.write(f, f+"\n")
				}
				return ""
			},
			edit: func(r *testRepo, _ string) { r.write("secret-new", "ignored\n") },
		},
		{
			name: "excludesfile-repo-config",
			setup: func(r *testRepo) string {
				p := filepath.Join(r.Home.Home, "repo-excludes")
				mustWrite(r.t, p, []byte("*.bak\n"), 0o644)
				r.git("config", "core.excludesFile", p)
				r.write("a.bak", "ignored\n")
				r.write("a.txt", "kept\n")
				return ""
			},
		},
		{
			name: "excludesfile-global-tilde",
			setup: func(r *testRepo) string {
				appendFile(r.t, r.Home.GlobalConfig, "[core]\n\texcludesFile = ~/my-global-ignore\n")
				mustWrite(r.t, filepath.Join(r.Home.Home, "my-global-ignore"), []byte("*.swp\n"), 0o644)
				r.write("a.swp", "ignored\n")
				r.write("sub/b.swp", "ignored\n")
				r.write("a.txt", "kept\n")
				return ""
			},
		},
		{
			name: "excludesfile-git-config-global-elsewhere",
			setup: func(r *testRepo) string {
				// GIT_CONFIG_GLOBAL replaces ~/.gitconfig: only its excludesFile counts.
				other := filepath.Join(r.Home.Home, "elsewhere.cfg")
				cfg, _ := os.ReadFile(r.Home.GlobalConfig)
				mustWrite(r.t, other, append(cfg, []byte("[core]\n\texcludesFile = ~/from-elsewhere\n")...), 0o644)
				appendFile(r.t, r.Home.GlobalConfig, "[core]\n\texcludesFile = ~/from-home\n")
				r.t.Setenv("GIT_CONFIG_GLOBAL", other)
				mustWrite(r.t, filepath.Join(r.Home.Home, "from-elsewhere"), []byte("*.one\n"), 0o644)
				mustWrite(r.t, filepath.Join(r.Home.Home, "from-home"), []byte("*.two\n"), 0o644)
				r.write("a.one", "ignored\n")
				r.write("a.two", "kept: ~/.gitconfig is not read\n")
				return ""
			},
		},
		{
			name: "xdg-ignore",
			setup: func(r *testRepo) string {
				mustMkdir(r.t, filepath.Join(r.Home.XDG, "git"))
				mustWrite(r.t, filepath.Join(r.Home.XDG, "git", "ignore"), []byte("*.xdg\n"), 0o644)
				// ~/.config is not the XDG directory here: not read.
				mustMkdir(r.t, filepath.Join(r.Home.Home, ".config", "git"))
				mustWrite(r.t, filepath.Join(r.Home.Home, ".config", "git", "ignore"), []byte("*.homecfg\n"), 0o644)
				r.write("a.xdg", "ignored\n")
				r.write("a.homecfg", "kept\n")
				return ""
			},
		},
		{
			name: "xdg-unset-home-config",
			setup: func(r *testRepo) string {
				unsetenv(r.t, "XDG_CONFIG_HOME")
				mustMkdir(r.t, filepath.Join(r.Home.Home, ".config", "git"))
				mustWrite(r.t, filepath.Join(r.Home.Home, ".config", "git", "ignore"), []byte("*.homecfg\n"), 0o644)
				r.write("a.homecfg", "ignored\n")
				r.write("a.txt", "kept\n")
				return ""
			},
		},
		{
			name: "xdg-empty-is-unset",
			setup: func(r *testRepo) string {
				r.t.Setenv("XDG_CONFIG_HOME", "")
				mustMkdir(r.t, filepath.Join(r.Home.Home, ".config", "git"))
				mustWrite(r.t, filepath.Join(r.Home.Home, ".config", "git", "ignore"), []byte("*.homecfg\n"), 0o644)
				r.write("a.homecfg", "ignored\n")
				r.write("a.txt", "kept\n")
				return ""
			},
		},
		{
			name: "excludesfile-overrides-xdg",
			setup: func(r *testRepo) string {
				appendFile(r.t, r.Home.GlobalConfig, "[core]\n\texcludesFile = ~/explicit\n")
				mustWrite(r.t, filepath.Join(r.Home.Home, "explicit"), []byte("*.one\n"), 0o644)
				mustMkdir(r.t, filepath.Join(r.Home.XDG, "git"))
				mustWrite(r.t, filepath.Join(r.Home.XDG, "git", "ignore"), []byte("*.two\n"), 0o644)
				r.write("a.one", "ignored\n")
				r.write("a.two", "kept: core.excludesFile replaces the XDG default\n")
				return ""
			},
		},
		{
			name: "tracked-now-ignored",
			setup: func(r *testRepo) string {
				r.write("x.log", "1\n")
				r.write("build/tracked.o", "t\n")
				r.write("build/keep/deep.o", "t\n")
				r.commitAll("init")
				r.write(".gitignore", "*.log\nbuild/\n")
				r.write("x.log", "2: tracked, so still in\n")
				r.write("y.log", "untracked: ignored\n")
				r.write("build/untracked.o", "ignored\n")
				r.write("build/keep/new.o", "ignored\n")
				return ""
			},
			edit: func(r *testRepo, _ string) {
				r.remove("build/tracked.o")
				r.write("build/keep/deep.o", "tracked, changed\n")
			},
		},
		{
			name: "staged-then-modified",
			setup: func(r *testRepo) string {
				for _, f := range []string{"a", "b", "c", "d"} {
					r.write(f, f+"1\n")
				}
				r.commitAll("init")
				r.write("a", "a2 staged\n")
				r.git("add", "a")
				r.write("a", "a3 on disk\n")
				r.write("new", "n1 staged\n")
				r.git("add", "new")
				r.write("new", "n2 on disk\n")
				r.write("gone", "staged then deleted\n")
				r.git("add", "gone")
				r.remove("gone")
				r.git("rm", "-q", "--cached", "b") // untracked now, not ignored: back in
				r.git("rm", "-q", "--cached", "c") // untracked and ignored: out
				r.write(".gitignore", "c\nd\n")    // d is tracked: stays in
				r.git("update-index", "--chmod=+x", "d")
				return ""
			},
			edit: func(r *testRepo, _ string) {
				r.write("new", "n3\n")
				r.git("add", "a")
			},
		},
		{
			name: "deleted-tracked",
			setup: func(r *testRepo) string {
				for _, f := range []string{"a", "d/x", "d/y", "e/f/g", "e/h"} {
					r.write(f, f+"\n")
				}
				r.commitAll("init")
				r.remove("a")
				r.remove("d")
				r.remove("e/f/g") // leaves the empty directory e/f
				return ""
			},
			edit: func(r *testRepo, _ string) { r.remove("e") },
		},
		{
			name: "exec-bit",
			setup: func(r *testRepo) string {
				r.writeMode("run.sh", "#!/bin/sh\n", 0o755)
				r.writeMode("plain.txt", "text\n", 0o644)
				r.writeMode("stays.sh", "#!/bin/sh\n", 0o755)
				r.commitAll("init")
				r.chmod("run.sh", 0o644)
				r.chmod("plain.txt", 0o755)
				r.writeMode("new.sh", "#!/bin/sh\n", 0o700)
				r.writeMode("owner-x-only", "x\n", 0o744)
				r.writeMode("group-other-x", "x\n", 0o611) // owner has no x: 100644
				r.writeMode("readonly", "x\n", 0o444)
				return ""
			},
			edit: func(r *testRepo, _ string) {
				r.chmod("run.sh", 0o755)
				r.chmod("stays.sh", 0o600)
			},
		},
		{
			name: "filemode-false",
			setup: func(r *testRepo) string {
				r.writeMode("run.sh", "#!/bin/sh\n", 0o755)
				r.writeMode("plain.txt", "text\n", 0o644)
				r.commitAll("init")
				r.git("config", "core.fileMode", "false")
				r.chmod("run.sh", 0o644)    // index mode kept: 100755
				r.chmod("plain.txt", 0o755) // index mode kept: 100644
				r.writeMode("new.sh", "#!/bin/sh\n", 0o755)
				return ""
			},
			edit: func(r *testRepo, _ string) { r.write("run.sh", "#!/bin/sh\necho changed\n") },
		},
		{
			name: "symlinks",
			setup: func(r *testRepo) string {
				r.write("target.txt", "target\n")
				r.write("realdir/a", "a\n")
				r.symlink("target.txt", "link-file")
				r.symlink("realdir", "link-dir")
				r.symlink("old-target", "retargeted")
				r.commitAll("init")
				r.symlink("nowhere/at/all", "dangling")
				r.symlink("/etc/passwd", "absolute")
				r.symlink("../outside", "escapes")
				r.symlink("sub/../target.txt", "dotdot")
				r.symlink("link-dir", "chain")
				r.symlink("realdir/a", "deep/link-in-dir")
				r.remove("retargeted")
				r.symlink("new-target", "retargeted")
				return ""
			},
			edit: func(r *testRepo, _ string) {
				r.write("link-dir/through-link", "written through the link: it is realdir/through-link\n")
				r.remove("link-file")
			},
		},
		{
			name: "type-changes",
			setup: func(r *testRepo) string {
				r.write("file-to-link", "f\n")
				r.symlink("file-to-link", "link-to-file")
				r.write("file-to-dir", "f\n")
				r.write("dir-to-file/x", "x\n")
				r.symlink("target", "link-to-dir")
				r.write("target", "t\n")
				r.commitAll("init")
				r.remove("file-to-link")
				r.symlink("target", "file-to-link")
				r.remove("link-to-file")
				r.write("link-to-file", "now a file\n")
				r.remove("file-to-dir")
				r.write("file-to-dir/inside", "now a dir\n")
				r.remove("dir-to-file")
				r.write("dir-to-file", "now a file\n")
				r.remove("link-to-dir")
				r.write("link-to-dir/y", "now a dir\n")
				return ""
			},
		},
		{
			name: "permission-and-special-files",
			setup: func(r *testRepo) string {
				r.write("a", "a\n")
				if err := syscall.Mkfifo(r.path("fifo"), 0o644); err != nil {
					r.t.Fatal(err)
				}
				r.write("empty", "")
				r.mkdir("empty-dir/nested-empty")
				r.write("sub/.git", "gitdir: nowhere-not-a-repo\n") // skipped by git: a .git entry
				r.write("sub/file", "kept\n")
				return ""
			},
		},
		{
			name: "submodule",
			setup: func(r *testRepo) string {
				src := makeSideRepo(r, "subsrc", 2)
				r.write("top.txt", "top\n")
				r.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "mod")
				r.commitAll("add submodule")
				r.write("mod/dirty-inside", "a submodule's worktree is not snapshotted\n")
				return ""
			},
			edit: func(r *testRepo, _ string) {
				mod := r.path("mod")
				r.gitIn(mod, "checkout", "-q", "HEAD~1") // gitlink moves
			},
		},
		{
			name: "submodule-deinit",
			setup: func(r *testRepo) string {
				src := makeSideRepo(r, "subsrc", 1)
				r.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "mod")
				r.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "mod2")
				r.commitAll("add submodules")
				r.git("submodule", "deinit", "-q", "-f", "mod") // empty directory, gitlink stays
				return ""
			},
			edit: func(r *testRepo, _ string) { r.remove("mod2") }, // gone from disk: gitlink removed
		},
		{
			name: "untracked-nested-repo",
			setup: func(r *testRepo) string {
				r.write("top.txt", "top\n")
				r.commitAll("init")
				nested := r.path("nested")
				mustMkdir(r.t, nested)
				r.gitIn(nested, "init", "-q")
				mustWrite(r.t, filepath.Join(nested, "inner.txt"), []byte("inner\n"), 0o644)
				r.gitIn(nested, "add", "-A")
				r.gitIn(nested, "commit", "-q", "-m", "inner")
				return ""
			},
			edit: func(r *testRepo, _ string) {
				nested := r.path("nested")
				mustWrite(r.t, filepath.Join(nested, "inner.txt"), []byte("inner 2\n"), 0o644)
				r.gitIn(nested, "commit", "-q", "-am", "inner 2")
			},
		},
		{
			name: "unborn-head-no-index",
			setup: func(r *testRepo) string {
				r.write("a.txt", "a\n")
				r.write("sub/b.txt", "b\n")
				if _, err := os.Stat(r.path(".git/index")); err == nil {
					r.t.Fatal("setup: expected no index in a fresh repository")
				}
				return ""
			},
		},
		{
			name: "unborn-head-with-index",
			setup: func(r *testRepo) string {
				r.write("a.txt", "a staged\n")
				r.git("add", "a.txt")
				r.write("a.txt", "a on disk\n")
				r.write("b.txt", "b\n")
				return ""
			},
		},
		{
			name: "linked-worktree",
			setup: func(r *testRepo) string {
				r.write("README", "main\n")
				r.write("shared.txt", "shared\n")
				r.commitAll("init")
				r.write("only-in-main.txt", "untracked in the main worktree\n")
				wt := filepath.Join(filepath.Dir(r.Root), "wt")
				r.git("worktree", "add", "-q", "-b", "feature", wt)
				mustWrite(r.t, filepath.Join(wt, "README"), []byte("feature\n"), 0o644)
				mustWrite(r.t, filepath.Join(wt, "new.txt"), []byte("new in wt\n"), 0o644)
				return wt
			},
			edit: func(r *testRepo, dir string) {
				os.Remove(filepath.Join(dir, "shared.txt"))
			},
		},
		{
			name: "subdirectory",
			setup: func(r *testRepo) string {
				r.write("top.txt", "top\n")
				r.write("a/.gitignore", "*.o\n")
				r.write("a/b/c.txt", "c\n")
				r.write("a/b/c.o", "ignored\n")
				r.write("z/other.txt", "other\n")
				r.commitAll("init")
				r.write("top.txt", "changed at the top\n")
				r.write("z/new.txt", "new elsewhere\n")
				return r.path("a/b")
			},
			edit: func(r *testRepo, _ string) { r.write("a/b/d.txt", "d\n") },
		},
		{
			name: "names",
			setup: func(r *testRepo) string {
				for _, f := range []string{
					"café", "cafe\u0301", "日本語/ファイル.txt", "with space.txt", "dir with space/x",
					"-rf", "--help", "-", "quote\"d", "back\\slash", "tab\there", "new\nline",
					"\xff\xfe-invalid-utf8", "emoji-😀", "a-b", "a.b", "a/b", "a0", "a=b", "a b/c",
					".hidden", "...", "x/.y", "UPPER", "upper", "#hash", "~tilde", "star*", "q?",
					"[brackets]", "cr\rname", " leading-space", "trailing-dot.",
				} {
					r.write(f, "name: "+f+"\n")
				}
				r.commitAll("names")
				r.write("-rf", "changed\n")
				r.write("new\nline", "changed\n")
				r.write("ünïcödé/ñ.txt", "new\n")
				return ""
			},
		},
		{
			// A file many times the engine's in-memory limit (smallBlob, 1 MiB), so it is hashed
			// and written streaming; bounded memory has its own test (TestWriteTreeBigFileBoundedMemory).
			name: "big-file",
			long: true,
			setup: func(r *testRepo) string {
				writeBigFile(r.t, r.path("big.bin"), 16<<20, 1)
				r.write("small.txt", "small\n")
				return ""
			},
			edit: func(r *testRepo, _ string) {
				f, err := os.OpenFile(r.path("big.bin"), os.O_WRONLY, 0)
				if err != nil {
					r.t.Fatal(err)
				}
				if _, err := f.WriteAt([]byte("changed in the middle"), 8<<20); err != nil {
					r.t.Fatal(err)
				}
				f.Close()
			},
		},
		{name: "attr-eol-crlf", setup: eolSetup("*.t eol=crlf\n"), edit: eolEdit},
		{name: "attr-eol-lf", setup: eolSetup("*.t eol=lf\n"), edit: eolEdit},
		{name: "attr-text-auto", setup: eolSetup("*.t text=auto\n"), edit: eolEdit},
		{name: "attr-text-auto-eol-crlf", setup: eolSetup("*.t text=auto eol=crlf\n"), edit: eolEdit},
		{name: "attr-text", setup: eolSetup("*.t text\n"), edit: eolEdit},
		{name: "attr-minus-text", setup: eolSetup("*.t -text\n", "core.autocrlf=true"), edit: eolEdit},
		{name: "attr-binary-macro", setup: eolSetup("*.t binary\n", "core.autocrlf=true"), edit: eolEdit},
		{name: "attr-legacy-crlf", setup: eolSetup("tracked-* crlf\nracy-* -crlf\nmodified-* crlf=input\n"), edit: eolEdit},
		{name: "attr-unset-and-later-rules", setup: eolSetup("* text\n*.t !text\nnew-* -text\nsub/** text=auto\n", "core.autocrlf=true"), edit: eolEdit},
		{name: "autocrlf-true", setup: eolSetup("", "core.autocrlf=true"), edit: eolEdit},
		{name: "autocrlf-input", setup: eolSetup("", "core.autocrlf=input"), edit: eolEdit},
		{name: "attr-text-auto-core-eol-crlf", setup: eolSetup("*.t text=auto\n", "core.autocrlf=false", "core.eol=crlf"), edit: eolEdit},
		{name: "autocrlf-true-safecrlf-false", setup: eolSetup("*.t text\n", "core.autocrlf=true", "core.safecrlf=false"), edit: eolEdit},
		{
			name: "attr-nested-gitattributes",
			setup: func(r *testRepo) string {
				r.write(".gitattributes", "*.txt text\n")
				r.write("sub/.gitattributes", "*.txt -text\n")
				r.write("sub/deeper/.gitattributes", "a.txt text\n")
				for _, f := range []string{"a.txt", "sub/a.txt", "sub/b.txt", "sub/deeper/a.txt", "sub/deeper/b.txt"} {
					r.write(f, "x\r\ny\r\n")
				}
				r.write(".git/info/attributes", "*.info text\n")
				r.write("z.info", "info\r\n")
				return ""
			},
		},
		{
			name: "clean-filter",
			setup: func(r *testRepo) string {
				r.git("config", "filter.upper.clean", "tr a-z A-Z")
				r.git("config", "filter.upper.smudge", "tr A-Z a-z")
				r.write(".gitattributes", "*.up filter=upper\n*.upt filter=upper text\n*.req filter=notconfigured\n")
				r.write("a.up", "hello\n")
				r.write("sub/b.up", "world\n")
				r.write("c.upt", "ab\r\ncd\r\n")
				r.write("d.req", "passed through as is\n")
				r.write("e.txt", "not filtered\n")
				return ""
			},
			edit: func(r *testRepo, _ string) { r.write("a.up", "hello again\n") },
		},
		{
			name: "clean-filter-percent-f",
			setup: func(r *testRepo) string {
				r.git("config", "filter.path.clean", "sed -e \"s|^|%f:|\"")
				r.write(".gitattributes", "*.p filter=path\n")
				r.write("x.p", "one\ntwo\n")
				r.write("sub dir/y z.p", "three\n")
				return ""
			},
		},
		{
			name: "clean-filter-required-process-less",
			setup: func(r *testRepo) string {
				// cat is a valid clean filter; required only matters when it fails.
				r.git("config", "filter.cat.clean", "cat")
				r.git("config", "filter.cat.required", "true")
				r.write(".gitattributes", "*.c filter=cat\n")
				r.write("x.c", "int x;\r\n")
				return ""
			},
		},
		{
			name: "ident",
			setup: func(r *testRepo) string {
				r.write(".gitattributes", "*.id ident\n")
				r.write("a.id", "$Id: 0123456789abcdef $\nand $Id$\n")
				r.write("b.txt", "$Id: not collapsed without the attribute $\n")
				return ""
			},
		},
		{
			name:  "lfs",
			needs: "git-lfs",
			setup: func(r *testRepo) string {
				r.git("lfs", "install", "--local")
				r.git("lfs", "track", "*.bin")
				writeBigFile(r.t, r.path("big.bin"), 300<<10, 2)
				r.write("small.txt", "not lfs\n")
				r.commitAll("lfs")
				writeBigFile(r.t, r.path("big.bin"), 300<<10, 3)
				writeBigFile(r.t, r.path("sub/new.bin"), 10<<10, 4)
				return ""
			},
			edit: func(r *testRepo, _ string) { r.write("tiny.bin", "tiny lfs\n") },
		},
		{
			name: "user-index-same-size-same-mtime-rewrite",
			setup: func(r *testRepo) string {
				// The user's index (not a private one) is the only stat cache: a
				// rewrite that keeps size and mtime is seen through ctime and inode.
				// git compares whole seconds of ctime (no USE_NSEC in common
				// builds), so the rewrite must land in a later second for git to
				// see it at all.
				old := time.Now().Add(-time.Hour)
				r.write("a", "aaaa1\n")
				r.setMtime("a", old)
				r.commitAll("init")
				sleepToNextSecond()
				r.write("a", "aaaa2\n")
				r.setMtime("a", old)
				return ""
			},
		},
		{
			name: "trustctime-false-same-mtime-rewrite",
			setup: func(r *testRepo) string {
				// With core.trustCtime=false git trusts size+mtime(+inode): an
				// in-place rewrite that keeps them is invisible to git add -A, so
				// the snapshot must keep the old blob too.
				old := time.Now().Add(-time.Hour)
				r.git("config", "core.trustCtime", "false")
				r.write("a", "aaaa1\n")
				r.setMtime("a", old)
				r.commitAll("init")
				f, err := os.OpenFile(r.path("a"), os.O_WRONLY, 0)
				if err != nil {
					r.t.Fatal(err)
				}
				f.WriteAt([]byte("b"), 0) // same inode, same size
				f.Close()
				r.setMtime("a", old)
				return ""
			},
		},
		{
			name: "assume-unchanged-and-skip-worktree",
			setup: func(r *testRepo) string {
				for _, f := range []string{"au", "sw", "sw-deleted", "normal"} {
					r.write(f, f+" 1\n")
				}
				r.commitAll("init")
				r.git("update-index", "--assume-unchanged", "au")
				r.git("update-index", "--skip-worktree", "sw", "sw-deleted")
				r.write("au", "au changed, longer\n")
				r.write("sw", "sw changed, longer\n")
				r.remove("sw-deleted")
				r.write("normal", "normal changed\n")
				return ""
			},
		},
		{
			name: "intent-to-add",
			setup: func(r *testRepo) string {
				r.write("base", "b\n")
				r.commitAll("init")
				r.write("ita", "intent to add\n")
				r.write("ita-gone", "added -N then deleted\n")
				r.git("add", "-N", "ita", "ita-gone")
				r.remove("ita-gone")
				return ""
			},
		},
		{
			name: "merge-conflict-stages",
			setup: func(r *testRepo) string {
				r.write("f", "base\n")
				r.write("g", "g\n")
				r.commitAll("base")
				r.git("checkout", "-q", "-b", "other")
				r.write("f", "other\n")
				r.remove("g")
				r.commitAll("other")
				r.git("checkout", "-q", "main")
				r.write("f", "main\n")
				r.write("g", "g main\n")
				r.commitAll("main")
				if _, err := tryGit(r.Root, nil, "merge", "-q", "other"); err == nil {
					r.t.Fatal("setup: the merge did not conflict")
				}
				return ""
			},
		},
		{
			name: "index-version-4",
			setup: func(r *testRepo) string {
				for i := 0; i < 20; i++ {
					r.write(fmt.Sprintf("dir/common-prefix-%02d", i), "x\n")
				}
				r.commitAll("init")
				r.git("update-index", "--index-version", "4")
				r.write("dir/common-prefix-03", "changed\n")
				r.write("dir/common-prefix-new", "new\n")
				return ""
			},
		},
		{
			name: "split-index",
			setup: func(r *testRepo) string {
				for i := 0; i < 10; i++ {
					r.write(fmt.Sprintf("f%d", i), "x\n")
				}
				// Tracked though ignored: only the shared index says so (a snapshot that read the
				// split part alone would leave it out).
				r.write(".gitignore", "*.log\n")
				r.write("kept.log", "tracked\n")
				r.git("add", "-f", "kept.log")
				r.commitAll("init")
				r.git("update-index", "--split-index")
				r.write("f3", "changed\n")
				r.git("add", "f3")
				r.git("rm", "-q", "--cached", "f4")
				r.write("f5", "changed on disk\n")
				return ""
			},
		},
		{
			name: "untracked-cache-and-fsmonitor-off",
			setup: func(r *testRepo) string {
				r.git("config", "core.untrackedCache", "true")
				r.write("a", "a\n")
				r.write("d/b", "b\n")
				r.commitAll("init")
				r.git("update-index", "--untracked-cache")
				r.git("status", "--porcelain") // fills the UNTR extension
				r.write("d/new", "new\n")
				return ""
			},
		},
		{
			name: "sparse-checkout-cone",
			setup: func(r *testRepo) string {
				r.write("in/a", "a\n")
				r.write("out/b", "b\n")
				r.write("top", "t\n")
				r.commitAll("init")
				r.git("sparse-checkout", "set", "--cone", "in")
				r.write("in/a", "changed\n")
				return ""
			},
		},
		{
			name: "sparse-index",
			setup: func(r *testRepo) string {
				r.write("in/a", "a\n")
				r.write("out/b", "b\n")
				r.write("out/deep/c", "c\n")
				r.write("top", "t\n")
				r.commitAll("init")
				r.git("sparse-checkout", "set", "--cone", "--sparse-index", "in")
				r.write("in/a", "changed\n")
				r.write("in/new", "new\n")
				return ""
			},
		},
		{
			name: "symlinked-gitignore-and-gitattributes",
			setup: func(r *testRepo) string {
				// git (2.32+) does not follow these when they are symlinks in the working tree.
				r.write("rules/ignore", "*.x\n")
				r.write("rules/attributes", "*.t text\n")
				r.symlink("rules/ignore", ".gitignore")
				r.symlink("../rules/attributes", "sub/.gitattributes")
				r.write("a.x", "not ignored: the .gitignore symlink is not read\n")
				r.write("sub/b.t", "crlf\r\nkept\r\n")
				return ""
			},
		},
		{
			name: "gitignore-bom-and-escapes",
			setup: func(r *testRepo) string {
				r.write(".gitignore", "\xef\xbb\xbfbom.x\n\\*literal\nends-with-slash-star/**\nnot-a-dir/\n")
				r.write("sub/.gitignore", "\xef\xbb\xbfsubbom\n")
				for _, f := range []string{"bom.x", "*literal", "xliteral", "ends-with-slash-star/a", "ends-with-slash-star/b/c",
					"sub/subbom", "sub/other", "not-a-dir"} {
					r.write(f, f+"\n")
				}
				return ""
			},
		},
		{
			name: "attribute-macros-and-bad-lines",
			setup: func(r *testRepo) string {
				r.write(".gitattributes", "[attr]crlfy text eol=crlf\n*.m crlfy\n!*.neg text\n\"quoted name.q\" text\n*.m -eol\n")
				r.write("a.m", "x\r\ny\n")
				r.write("b.neg", "x\r\ny\n")
				r.write("quoted name.q", "x\r\ny\n")
				return ""
			},
		},
		{
			name: "tracked-path-behind-symlink",
			setup: func(r *testRepo) string {
				r.write("d/f", "tracked\n")
				r.write("other/f", "other\n")
				r.commitAll("init")
				r.remove("d")
				r.symlink("other", "d") // d/f is now "beyond a symbolic link"
				return ""
			},
		},
		{
			name: "worktree-inside-worktree",
			setup: func(r *testRepo) string {
				r.write("a", "a\n")
				r.commitAll("init")
				r.git("worktree", "add", "-q", "-b", "inner", "inner-wt")
				mustWrite(r.t, r.path("inner-wt/x"), []byte("x\n"), 0o644)
				return ""
			},
		},
		{
			name: "long-and-deep-names",
			setup: func(r *testRepo) string {
				r.write(strings.Repeat("n", 255), "255 bytes\n")
				r.write(strings.Repeat("deep/", 60)+"leaf", "deep\n")
				r.write(strings.Repeat("é", 127), "254 bytes of UTF-8\n")
				return ""
			},
		},
		{
			name: "ignorecase-true",
			setup: func(r *testRepo) string {
				r.git("config", "core.ignoreCase", "true")
				r.write(".gitignore", "*.LOG\nBuild/\n")
				r.write("a.log", "ignored: patterns match case-insensitively\n")
				r.write("build/x", "ignored\n")
				r.write("keep.txt", "kept\n")
				return ""
			},
		},
		{
			name: "failing-clean-filter-not-required",
			setup: func(r *testRepo) string {
				r.git("config", "filter.broken.clean", "false")
				r.write(".gitattributes", "*.b filter=broken\n")
				r.write("x.b", "stored as is when the filter fails\n")
				return ""
			},
		},
		{
			name: "gitlink-replaced-by-file",
			setup: func(r *testRepo) string {
				src := makeSideRepo(r, "subsrc", 1)
				r.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "mod")
				r.commitAll("add submodule")
				r.remove("mod")
				r.write("mod", "a file where the submodule was\n")
				return ""
			},
		},
		{
			name: "user-index-locked",
			setup: func(r *testRepo) string {
				r.write("a", "a\n")
				r.commitAll("init")
				r.write("a", "changed while someone holds index.lock\n")
				r.write(".git/index.lock", "held by another git process\n")
				return ""
			},
			edit: func(r *testRepo, _ string) {
				if b, err := os.ReadFile(r.path(".git/index.lock")); err != nil || string(b) != "held by another git process\n" {
					r.t.Errorf("the snapshot touched .git/index.lock: %q, %v", b, err)
				}
			},
		},
		{
			name: "ignore-precedence-across-sources",
			setup: func(r *testRepo) string {
				// .gitignore beats .git/info/exclude beats core.excludesFile.
				appendFile(r.t, r.Home.GlobalConfig, "[core]\n\texcludesFile = ~/global-ignore\n")
				mustWrite(r.t, filepath.Join(r.Home.Home, "global-ignore"), []byte("*.x\n*.y\n*.z\n"), 0o644)
				r.write(".git/info/exclude", "!a.y\n!b.z\n")
				r.write(".gitignore", "!keep.x\nb.z\n")
				for _, f := range []string{"keep.x", "other.x", "a.y", "other.y", "b.z", "sub/keep.x", "sub/a.y"} {
					r.write(f, f+"\n")
				}
				return ""
			},
		},
		{
			name: "ignored-nested-repo",
			setup: func(r *testRepo) string {
				r.write(".gitignore", "vendor/\n")
				r.write("top", "t\n")
				for _, d := range []string{"vendor/lib", "notignored"} {
					nested := r.path(d)
					mustMkdir(r.t, nested)
					r.gitIn(nested, "init", "-q")
					mustWrite(r.t, filepath.Join(nested, "f"), []byte("f\n"), 0o644)
					r.gitIn(nested, "add", "-A")
					r.gitIn(nested, "commit", "-q", "-m", "nested")
				}
				return ""
			},
		},
	}
	return cases
}

// sleepToNextSecond waits until the wall clock (and so a file's ctime, which
// the kernel takes from a coarse clock a few milliseconds behind) is in the
// next second.
func sleepToNextSecond() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second + 20*time.Millisecond).Sub(now))
}

// makeSideRepo creates a repository next to r (outside its worktree) with n
// commits and returns its path.
func makeSideRepo(r *testRepo, name string, n int) string {
	r.t.Helper()
	dir := filepath.Join(filepath.Dir(r.Root), name)
	mustMkdir(r.t, dir)
	r.gitIn(dir, "init", "-q")
	for i := 0; i < n; i++ {
		mustWrite(r.t, filepath.Join(dir, "file.txt"), []byte(fmt.Sprintf("commit %d\n", i)), 0o644)
		r.gitIn(dir, "add", "-A")
		r.gitIn(dir, "commit", "-q", "-m", fmt.Sprintf("c%d", i))
	}
	return dir
}

func appendFile(t testing.TB, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// writeBigFile writes size bytes of deterministic, poorly compressible content.
func writeBigFile(t testing.TB, p string, size int, seed uint64) {
	t.Helper()
	mustMkdir(t, filepath.Dir(p))
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	x := seed*0x9E3779B97F4A7C15 + 1
	for written := 0; written < size; {
		for i := 0; i+8 <= len(buf); i += 8 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			for j := 0; j < 8; j++ {
				buf[i+j] = byte(x >> (8 * j))
			}
		}
		n := min(len(buf), size-written)
		if _, err := f.Write(buf[:n]); err != nil {
			t.Fatal(err)
		}
		written += n
	}
}

// TestRacyModification: a file rewritten within the same second as the
// previous snapshot, keeping its size, must still be seen; and so must one
// whose mtime was put back to exactly what the previous snapshot saw (only
// ctime, inode or a same-second racy check can tell).
func TestRacyModification(t *testing.T) {
	r := newRepo(t)
	r.write("a", "aaaa1\n")
	r.write("b", "bbbb1\n")
	r.commitAll("init")
	repo := openRepo(t, r.Root)

	r.write("a", "aaaa2\n")
	assertTreeMatchesGit(t, repo, r.Root)
	r.write("a", "aaaa3\n") // same size, almost surely the same second
	assertTreeMatchesGit(t, repo, r.Root)

	fi, err := os.Stat(r.path("b"))
	if err != nil {
		t.Fatal(err)
	}
	assertTreeMatchesGit(t, repo, r.Root)
	r.write("b", "bbbb2\n")
	r.setMtime("b", fi.ModTime()) // same size, same mtime as the snapshot saw
	res := assertTreeMatchesGit(t, repo, r.Root)
	if got := catFile(t, r.Root, res.Tree.String()+":b"); got != "bbbb2\n" {
		t.Errorf("snapshot after a same-size, same-mtime rewrite has b = %q, want %q", got, "bbbb2\n")
	}

	// And the reopened engine, reading its private index back from disk, too.
	r.write("a", "aaaa4\n")
	again := openRepo(t, r.Root)
	assertTreeMatchesGit(t, again, r.Root)
}

// TestPrivateIndexReuse: when nothing changed and no file is racily clean, a
// second WriteTree re-reads no file; changing one file re-reads one.
func TestPrivateIndexReuse(t *testing.T) {
	r := newRepo(t)
	old := time.Now().Add(-time.Hour)
	var names []string
	for i := 0; i < 50; i++ {
		n := fmt.Sprintf("d%d/f%d.txt", i%5, i)
		names = append(names, n)
		r.write(n, fmt.Sprintf("file %d\n", i))
	}
	r.commitAll("init")
	for _, n := range names {
		r.setMtime(n, old)
	}
	repo := openRepo(t, r.Root)
	first := assertTreeMatchesGit(t, repo, r.Root)
	if first.Files != 50 {
		t.Errorf("Files = %d, want 50", first.Files)
	}
	second := assertTreeMatchesGit(t, repo, r.Root)
	if second.Hashed != 0 {
		t.Errorf("second WriteTree with nothing changed re-read %d files, want 0", second.Hashed)
	}
	r.write(names[7], "changed, longer than before\n")
	r.setMtime(names[7], old.Add(time.Minute))
	third := assertTreeMatchesGit(t, repo, r.Root)
	if third.Hashed != 1 {
		t.Errorf("WriteTree after changing one file re-read %d files, want 1", third.Hashed)
	}
	fourth := assertTreeMatchesGit(t, openRepo(t, r.Root), r.Root)
	if fourth.Hashed != 0 {
		t.Errorf("reopened WriteTree re-read %d files, want 0 (the private index is kept on disk)", fourth.Hashed)
	}
}

func catFile(t testing.TB, dir, obj string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "cat-file", "-p", obj).Output()
	if err != nil {
		t.Fatalf("git cat-file -p %s: %v", obj, err)
	}
	return string(out)
}

// TestOpenLocations: Root, GitDir and CommonDir agree with git for the main
// worktree, a subdirectory, a linked worktree and a submodule.
func TestOpenLocations(t *testing.T) {
	r := newRepo(t)
	r.write("a/b/c", "c\n")
	r.commitAll("init")
	wt := filepath.Join(filepath.Dir(r.Root), "wt")
	r.git("worktree", "add", "-q", "-b", "feature", wt)
	src := makeSideRepo(r, "subsrc", 1)
	r.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "mod")

	for _, dir := range []string{r.Root, r.path("a/b"), wt, filepath.Join(wt, "a"), r.path("mod")} {
		repo := openRepo(t, dir)
		root := gitRepoInfo(t, dir).Root
		gitDir := runGit(t, dir, nil, "rev-parse", "--absolute-git-dir")
		common := runGit(t, dir, nil, "rev-parse", "--path-format=absolute", "--git-common-dir")
		if repo.Root() != root {
			t.Errorf("Open(%s).Root() = %q, want %q", dir, repo.Root(), root)
		}
		if filepath.Clean(repo.GitDir()) != gitDir {
			t.Errorf("Open(%s).GitDir() = %q, want %q", dir, repo.GitDir(), gitDir)
		}
		if filepath.Clean(repo.CommonDir()) != common {
			t.Errorf("Open(%s).CommonDir() = %q, want %q", dir, repo.CommonDir(), common)
		}
	}

	notRepo := resolvedTempDir(t)
	if _, err := snapshot.Open(notRepo); !errors.Is(err, snapshot.ErrNotRepository) {
		t.Errorf("Open(non-repository) error = %v, want ErrNotRepository", err)
	} else if !strings.Contains(err.Error(), notRepo) {
		t.Errorf("Open(non-repository) error %q does not name the directory", err)
	}
	bare := filepath.Join(resolvedTempDir(t), "bare.git")
	runGit(t, filepath.Dir(bare), nil, "init", "-q", "--bare", bare)
	if _, err := snapshot.Open(bare); !errors.Is(err, snapshot.ErrBareRepository) {
		t.Errorf("Open(bare) error = %v, want ErrBareRepository", err)
	}
}

// TestSnapshotCommitAndRef: the commit a snapshot writes is one git reads as
// the spec says (author, committer, parent, message, tree), and the ref is a
// compare-and-swap create.
func TestSnapshotCommitAndRef(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	repo := openRepo(t, r.Root)

	// Unborn HEAD: no parent.
	r.write("a", "a\n")
	res, err := repo.Snapshot(ctx, snapshot.SnapshotOptions{Ref: "refs/mulligan/manual/unborn", Message: "first\n"})
	if err != nil {
		t.Fatalf("Snapshot on unborn HEAD: %v", err)
	}
	if got := r.git("log", "-1", "--format=%P", res.Commit.String()); got != "" {
		t.Errorf("snapshot on unborn HEAD has parents %q, want none", got)
	}

	r.commitAll("init")
	head := r.git("rev-parse", "HEAD")
	r.write("b", "b\n")
	res, err = repo.Snapshot(ctx, snapshot.SnapshotOptions{Ref: "refs/mulligan/manual/x1", Message: "hello snapshot\n\nbody line\n"})
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if res.Ref != "refs/mulligan/manual/x1" {
		t.Errorf("Result.Ref = %q", res.Ref)
	}
	if got := r.git("rev-parse", "refs/mulligan/manual/x1"); got != res.Commit.String() {
		t.Errorf("ref points to %s, Result.Commit = %s", got, res.Commit)
	}
	if got, want := gitTreeOf(t, r.Root, res.Commit.String()), gitWriteTree(t, r.Root); got != want || res.Tree.String() != want {
		t.Errorf("commit tree %s, Result.Tree %s, git write-tree %s", got, res.Tree, want)
	}
	if res.Files != 2 {
		t.Errorf("Result.Files = %d, want 2", res.Files)
	}
	info := r.git("log", "-1", "--format=%an <%ae>|%cn <%ce>|%P|%B", res.Commit.String())
	want := "mulligan <mulligan@localhost>|mulligan <mulligan@localhost>|" + head + "|hello snapshot\n\nbody line"
	if strings.TrimSpace(info) != want {
		t.Errorf("git log says %q, want %q", info, want)
	}

	// An explicit parent wins over HEAD.
	res2, err := repo.Snapshot(ctx, snapshot.SnapshotOptions{Ref: "refs/mulligan/manual/x2", Message: "m", Parent: res.Commit})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.git("log", "-1", "--format=%P", res2.Commit.String()); got != res.Commit.String() {
		t.Errorf("explicit parent: got parents %q, want %s", got, res.Commit)
	}

	// The ref is created, never overwritten.
	if _, err := repo.Snapshot(ctx, snapshot.SnapshotOptions{Ref: "refs/mulligan/manual/x1", Message: "again"}); !errors.Is(err, snapshot.ErrRefConflict) {
		t.Errorf("Snapshot onto an existing ref: error %v, want ErrRefConflict", err)
	}
	if got := r.git("rev-parse", "refs/mulligan/manual/x1"); got != res.Commit.String() {
		t.Errorf("a refused snapshot moved the ref to %s", got)
	}

	// No ref: nothing is written under refs/.
	before := r.git("for-each-ref")
	if _, err := repo.Snapshot(ctx, snapshot.SnapshotOptions{Message: "no ref"}); err != nil {
		t.Fatal(err)
	}
	if after := r.git("for-each-ref"); after != before {
		t.Errorf("Snapshot without Ref changed refs:\n%s\n→\n%s", before, after)
	}
	gitFsck(t, r.Root)
}

// TestRefsAgainstGit: refs the engine writes are git's refs, loose or packed,
// and compare-and-swap means what it says.
func TestRefsAgainstGit(t *testing.T) {
	r := newRepo(t)
	r.write("a", "a\n")
	r.commitAll("c1")
	c1 := hash(t, r.git("rev-parse", "HEAD"))
	r.write("a", "a2\n")
	r.commitAll("c2")
	c2 := hash(t, r.git("rev-parse", "HEAD"))
	repo := openRepo(t, r.Root)
	var zero plumbing.Hash

	if err := repo.UpdateRef("refs/mulligan/manual/a", c1, zero); err != nil {
		t.Fatal(err)
	}
	if got := r.git("rev-parse", "refs/mulligan/manual/a"); got != c1.String() {
		t.Errorf("git sees %s, want %s", got, c1)
	}
	if err := repo.UpdateRef("refs/mulligan/manual/a", c2, zero); !errors.Is(err, snapshot.ErrRefConflict) {
		t.Errorf("create over an existing ref: %v, want ErrRefConflict", err)
	}
	if err := repo.UpdateRef("refs/mulligan/manual/a", c2, c2); !errors.Is(err, snapshot.ErrRefConflict) {
		t.Errorf("update with the wrong old value: %v, want ErrRefConflict", err)
	}
	if err := repo.UpdateRef("refs/mulligan/manual/a", c2, c1); err != nil {
		t.Errorf("update with the right old value: %v", err)
	}

	// Packed by git, then updated and deleted by the engine.
	if err := repo.UpdateRef("refs/mulligan/undo/p", c1, zero); err != nil {
		t.Fatal(err)
	}
	r.git("pack-refs", "--all")
	if _, err := os.Stat(r.path(".git/refs/mulligan/undo/p")); err == nil {
		t.Fatal("setup: git pack-refs left the loose ref")
	}
	if got, err := repo.Ref("refs/mulligan/undo/p"); err != nil || got != c1 {
		t.Errorf("Ref(packed) = %s, %v; want %s", got, err, c1)
	}
	if err := repo.UpdateRef("refs/mulligan/undo/p", c2, zero); !errors.Is(err, snapshot.ErrRefConflict) {
		t.Errorf("create over a packed ref: %v, want ErrRefConflict", err)
	}
	if err := repo.UpdateRef("refs/mulligan/undo/p", c2, c1); err != nil {
		t.Errorf("update a packed ref: %v", err)
	}
	if got := r.git("rev-parse", "refs/mulligan/undo/p"); got != c2.String() {
		t.Errorf("git sees the packed-then-updated ref at %s, want %s", got, c2)
	}
	r.git("pack-refs", "--all")
	if err := repo.DeleteRef("refs/mulligan/undo/p", c1); !errors.Is(err, snapshot.ErrRefConflict) {
		t.Errorf("delete with the wrong old value: %v, want ErrRefConflict", err)
	}
	if err := repo.DeleteRef("refs/mulligan/undo/p", c2); err != nil {
		t.Errorf("delete a packed ref: %v", err)
	}
	if out, err := tryGit(r.Root, nil, "rev-parse", "--verify", "-q", "refs/mulligan/undo/p"); err == nil {
		t.Errorf("git still sees the deleted packed ref at %s", out)
	}
	if _, err := repo.Ref("refs/mulligan/undo/p"); !errors.Is(err, snapshot.ErrRefNotFound) {
		t.Errorf("Ref(deleted) error = %v, want ErrRefNotFound", err)
	}
	if packed, err := os.ReadFile(r.path(".git/packed-refs")); err != nil || !bytes.Contains(packed, []byte("refs/heads/main")) {
		t.Errorf("deleting one packed ref lost the others: %v\n%s", err, packed)
	}

	// Refs lists loose and packed refs under a prefix, sorted.
	for _, n := range []string{"refs/mulligan/runs/b/base", "refs/mulligan/runs/a/base", "refs/mulligan/runs/a/main/1"} {
		if err := repo.UpdateRef(n, c1, zero); err != nil {
			t.Fatal(err)
		}
	}
	r.git("pack-refs", "--all")
	if err := repo.UpdateRef("refs/mulligan/runs/a/main/2", c2, zero); err != nil {
		t.Fatal(err)
	}
	entries, err := repo.Refs("refs/mulligan/runs/")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name+" "+e.Hash.String())
	}
	wantOut := r.git("for-each-ref", "--format=%(refname) %(objectname)", "refs/mulligan/runs/")
	want := strings.Split(wantOut, "\n")
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Refs(refs/mulligan/runs/) =\n%s\nwant (git for-each-ref)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A ref cannot be both a file and a directory (git: "'X/1' exists; cannot
	// create 'X/1/pre'"), whether the other one is loose or packed; the engine
	// must refuse too, not leave git a ref store it calls broken.
	for _, packed := range []bool{false, true} {
		base := fmt.Sprintf("refs/mulligan/df%v/main/1", packed)
		if err := repo.UpdateRef(base, c1, zero); err != nil {
			t.Fatal(err)
		}
		if err := repo.UpdateRef(base+"x/pre", c1, zero); err != nil {
			t.Fatal(err)
		}
		if packed {
			r.git("pack-refs", "--all")
		}
		if err := repo.UpdateRef(base+"/pre", c2, zero); err == nil {
			t.Errorf("UpdateRef(%s/pre) succeeded while %s exists (packed: %v); git refuses that", base, base, packed)
		} else if want := "ref " + base + " exists; cannot create " + base + "/pre"; !strings.Contains(err.Error(), want) {
			t.Errorf("UpdateRef(%s/pre) while %s exists (packed: %v): %v; want it to say %q", base, base, packed, err, want)
		}
		if err := repo.UpdateRef(base+"x", c2, zero); err == nil {
			t.Errorf("UpdateRef(%sx) succeeded while %sx/pre exists (packed: %v); git refuses that", base, base, packed)
		}
		for _, n := range []string{base + "/pre", base + "x"} {
			if out, err := tryGit(r.Root, nil, "show-ref", "--verify", n); err == nil {
				t.Errorf("git show-ref finds %s after a refused D/F update: %s", n, out)
			}
		}
		if out, err := tryGit(r.Root, nil, "for-each-ref"); err != nil {
			t.Errorf("git for-each-ref after refused D/F updates: %v\n%s", err, out)
		}
	}

	if h, err := repo.Head(); err != nil || h != c2 {
		t.Errorf("Head() = %s, %v; want %s", h, err, c2)
	}
}

// TestResolveRevisionAgainstGit: every revision form the API accepts resolves
// to what `git rev-parse` says.
func TestResolveRevisionAgainstGit(t *testing.T) {
	r := newRepo(t)
	for i := 0; i < 3; i++ {
		r.write("a", fmt.Sprintf("%d\n", i))
		r.commitAll(fmt.Sprintf("c%d", i))
	}
	repo := openRepo(t, r.Root)
	head := hash(t, r.git("rev-parse", "HEAD"))
	if err := repo.UpdateRef("refs/mulligan/manual/x", head, plumbing.ZeroHash); err != nil {
		t.Fatal(err)
	}
	full := head.String()
	tree := gitTreeOf(t, r.Root, "HEAD")
	for _, rev := range []string{
		"HEAD", "main", "refs/heads/main", "HEAD~1", "HEAD^", "HEAD~2", "main~1", full, full[:7], full[:4],
		"refs/mulligan/manual/x", "mulligan/manual/x", "mulligan/manual/x~1", "HEAD^{tree}", full + "^{tree}",
		tree, tree[:8], "HEAD~1^{tree}",
	} {
		gotTree, gotCommit, err := repo.ResolveRevision(rev)
		if err != nil {
			t.Errorf("ResolveRevision(%q): %v", rev, err)
			continue
		}
		if want := gitTreeOf(t, r.Root, rev); gotTree.String() != want {
			t.Errorf("ResolveRevision(%q) tree = %s, git says %s", rev, gotTree, want)
		}
		wantCommit := ""
		if c, err := tryGit(r.Root, nil, "rev-parse", "--verify", "-q", rev+"^{commit}"); err == nil {
			wantCommit = c
		}
		if wantCommit == "" && !gotCommit.IsZero() {
			t.Errorf("ResolveRevision(%q) commit = %s, want zero (a tree)", rev, gotCommit)
		}
		if wantCommit != "" && gotCommit.String() != wantCommit {
			t.Errorf("ResolveRevision(%q) commit = %s, git says %s", rev, gotCommit, wantCommit)
		}
	}
	for _, rev := range []string{"nope", "HEAD~9", full[:3], "refs/heads/none", "", "HEAD^{blob}x"} {
		if _, _, err := repo.ResolveRevision(rev); !errors.Is(err, snapshot.ErrBadRevision) {
			t.Errorf("ResolveRevision(%q) error = %v, want ErrBadRevision", rev, err)
		}
	}
}

type restoreCase struct {
	name  string
	needs string
	// setup builds the tree of the first snapshot and returns the directory to
	// open the engine on ("" for the root).
	setup func(r *testRepo) string
	// edit turns it into the tree of the second.
	edit func(r *testRepo)
}

// TestRestoreRoundTripAgainstGit: after S1, edits and S2, Restore(S1) writes exactly
// what git's checkout of S1 would (bytes, modes, symlinks, eol, smudge
// filters), leaves ignored files alone, lists the changes git's diff-tree
// lists, and its undo ref brings S2 back.
func TestRestoreRoundTripAgainstGit(t *testing.T) { restoreRoundTrip(t, false) }

// TestRestoreRoundTripWatched runs the restore matrix on a watched Repo: every snapshot after the
// first, undo snapshots included, re-reads only what the events name.
func TestRestoreRoundTripWatched(t *testing.T) { restoreRoundTrip(t, true) }

func restoreRoundTrip(t *testing.T, watched bool) {
	for _, c := range restoreCases() {
		t.Run(c.name, func(t *testing.T) {
			if c.needs != "" {
				if _, err := exec.LookPath(c.needs); err != nil {
					t.Skipf("%s is not on PATH; this case needs it", c.needs)
				}
			}
			r := newRepo(t)
			dir := c.setup(r)
			if dir == "" {
				dir = r.Root
			}
			repo := openRepo(t, dir)
			if watched {
				if err := repo.Watch(); err != nil {
					t.Fatalf("Watch: %v", err)
				}
			}
			s1 := snapshotMatchingGit(t, repo, dir, "refs/mulligan/manual/s1")
			c.edit(r)
			s2 := snapshotMatchingGit(t, repo, dir, "refs/mulligan/manual/s2")
			if s1.Tree == s2.Tree {
				t.Fatalf("setup: the edits did not change the tree")
			}

			restoreAndCheck(t, repo, dir, s1.Tree, s2.Tree, "refs/mulligan/undo/u1")
			if t.Failed() {
				return
			}
			undoTree := hash(t, gitTreeOf(t, dir, "refs/mulligan/undo/u1"))
			restoreAndCheck(t, repo, dir, undoTree, s1.Tree, "refs/mulligan/undo/u2")
			if t.Failed() {
				return
			}
			// Once more from a fresh engine, as the next process would.
			if testing.Short() {
				return
			}
			restoreAndCheck(t, openRepo(t, dir), dir, s1.Tree, s2.Tree, "refs/mulligan/undo/u3")
			gitFsck(t, dir)
		})
	}
}

// snapshotMatchingGit takes a Snapshot into ref and checks its tree is git's.
func snapshotMatchingGit(t testing.TB, repo *snapshot.Repo, dir, ref string) *snapshot.Result {
	t.Helper()
	res, err := repo.Snapshot(context.Background(), snapshot.SnapshotOptions{Ref: ref, Message: "test snapshot " + ref})
	if err != nil {
		t.Fatalf("Snapshot(%s): %v", ref, err)
	}
	if want := gitWriteTree(t, dir); res.Tree.String() != want {
		t.Fatalf("Snapshot(%s) tree = %s, git write-tree = %s\n%s", ref, res.Tree, want, describeTreeDiff(t, dir, want, res.Tree.String()))
	}
	return res
}

// restoreAndCheck restores target over a working tree whose snapshot is
// current: first as a dry run (nothing may change), then for real.
func restoreAndCheck(t testing.TB, repo *snapshot.Repo, dir string, target, current plumbing.Hash, undoRef string) {
	t.Helper()
	ctx := context.Background()
	root := gitRepoInfo(t, dir).Root

	before := captureState(t, dir)
	dry, err := repo.Restore(ctx, target, snapshot.RestoreOptions{UndoRef: undoRef + "-dry", DryRun: true})
	if err != nil {
		t.Fatalf("Restore(%s, DryRun): %v", target, err)
	}
	if d := before.diff(captureState(t, dir)); len(d) > 0 {
		t.Errorf("a dry-run Restore changed the repository:\n  %s", strings.Join(d, "\n  "))
	}
	if dry.Undo != nil {
		t.Errorf("dry-run Restore returned an undo snapshot %+v", dry.Undo)
	}
	if _, err := tryGit(dir, nil, "rev-parse", "--verify", "-q", undoRef+"-dry"); err == nil {
		t.Errorf("dry-run Restore wrote its undo ref")
	}
	if dry.UndoTree != current {
		t.Errorf("dry-run UndoTree = %s, want the current tree %s", dry.UndoTree, current)
	}
	assertChangesMatchGit(t, dir, dry.Changes, current, target)

	ignored := ignoredOnDisk(t, dir)
	emptyBefore := emptyDirs(t, root)
	res, err := repo.Restore(ctx, target, snapshot.RestoreOptions{UndoRef: undoRef, UndoMessage: "undo for " + undoRef + "\n"})
	if err != nil {
		t.Fatalf("Restore(%s): %v", target, err)
	}
	after := captureState(t, dir)
	if before.Refs != after.Refs || before.Config != after.Config || fmt.Sprint(before.HeadFiles) != fmt.Sprint(after.HeadFiles) {
		t.Errorf("Restore changed HEAD, refs outside refs/mulligan/ or config")
	}
	if res.Undo == nil {
		t.Fatalf("Restore returned no undo snapshot")
	}
	if res.Undo.Ref != undoRef || res.Undo.Tree != current || res.UndoTree != current {
		t.Errorf("undo snapshot: ref %q tree %s UndoTree %s; want ref %q tree %s", res.Undo.Ref, res.Undo.Tree, res.UndoTree, undoRef, current)
	}
	if got := gitTreeOf(t, dir, undoRef); got != current.String() {
		t.Errorf("git says the undo ref %s holds tree %s, want %s", undoRef, got, current)
	}
	assertChangesMatchGit(t, dir, res.Changes, current, target)

	got := assertTreeMatchesGit(t, repo, dir)
	if got.Tree != target {
		t.Errorf("after Restore(%s) the working tree snapshots as %s\n%s", target, got.Tree, describeTreeDiff(t, dir, target.String(), got.Tree.String()))
	}
	assertWorktreeLike(t, root, gitCheckout(t, dir, target.String()), contentChanged(t, dir, current, target))
	assertIgnoredSurvive(t, root, ignored)
	for _, d := range emptyDirs(t, root) {
		if !slicesContains(emptyBefore, d) {
			t.Errorf("Restore left the empty directory %s behind", d)
		}
	}
}

func slicesContains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// emptyDirs lists the empty directories of a working tree (not in .git).
func emptyDirs(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	for p, st := range worktreeFiles(t, root) {
		if !st.Mode.IsDir() || p == "." {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(p)))
		if err == nil && len(ents) == 0 {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// assertChangesMatchGit compares a change list with `git diff-tree -r from to`.
func assertChangesMatchGit(t testing.TB, dir string, changes []snapshot.Change, from, to plumbing.Hash) {
	t.Helper()
	want := gitDiffTree(t, dir, from.String(), to.String())
	var got []string
	for _, c := range changes {
		got = append(got, fmt.Sprintf("%s %06o %s %06o %s", c.Path, uint32(c.From.Mode), c.From.Hash, uint32(c.To.Mode), c.To.Hash))
		if want := expectedAction(c); c.Action != want {
			t.Errorf("change %s %06o→%06o: Action %v, want %v", c.Path, uint32(c.From.Mode), uint32(c.To.Mode), c.Action, want)
		}
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes %s → %s:\n  engine: %s\n  git:    %s", from, to, strings.Join(got, "\n          "), strings.Join(want, "\n          "))
	}
}

// expectedAction is what the API documents for a change's two sides.
func expectedAction(c snapshot.Change) snapshot.Action {
	kind := func(m uint32) uint32 { return m &^ 0o777 }
	switch {
	case c.From.Mode == 0:
		return snapshot.Add
	case c.To.Mode == 0:
		return snapshot.Delete
	case kind(uint32(c.From.Mode)) != kind(uint32(c.To.Mode)):
		return snapshot.TypeChange
	case c.From.Hash == c.To.Hash:
		return snapshot.ModeChange
	}
	return snapshot.Modify
}

// gitDiffTree lists `git diff-tree -r` as "path fromMode fromHash toMode toHash", sorted.
func gitDiffTree(t testing.TB, dir, from, to string) []string {
	t.Helper()
	out := runGit(t, dir, nil, "diff-tree", "-r", "-z", "--raw", "--no-renames", "--full-index", from, to)
	var lines []string
	recs := strings.Split(out, "\x00")
	for i := 0; i+1 < len(recs); i += 2 {
		// ":100644 100644 <from> <to> M" then the path
		f := strings.Fields(strings.TrimPrefix(recs[i], ":"))
		if len(f) < 5 {
			break
		}
		lines = append(lines, fmt.Sprintf("%s %s %s %s %s", recs[i+1], f[0], f[2], f[1], f[3]))
	}
	sort.Strings(lines)
	return lines
}

func restoreCases() []restoreCase {
	return []restoreCase{
		{
			name: "files-dirs-modes-symlinks",
			setup: func(r *testRepo) string {
				r.write(".gitignore", "*.log\nignored-dir/\n")
				r.write("a.txt", "a1\n")
				r.write("dir/b.txt", "b\n")
				r.write("dir/sub/c.txt", "c\n")
				r.writeMode("run.sh", "#!/bin/sh\n", 0o755)
				r.write("plain", "p\n")
				r.symlink("a.txt", "link")
				r.symlink("dir", "linkdir")
				r.symlink("/nonexistent/absolute", "dangling")
				r.write("willbedir", "a file first\n")
				r.write("willbefile/x", "x\n")
				r.write("gone-later/deep/er/f", "f\n")
				r.write("keep.log", "ignored, kept\n")
				r.write("dir/keep.log", "ignored, kept\n")
				r.write("ignored-dir/x", "ignored\n")
				r.commitAll("init")
				r.write("untracked.txt", "untracked, not ignored\n")
				return ""
			},
			edit: func(r *testRepo) {
				r.write("a.txt", "a2, longer\n")
				r.remove("dir/b.txt")
				r.write("new/dir/n.txt", "n\n")
				r.write("new/dir/ignored.log", "ignored inside a directory restore empties\n")
				r.write("new/only/n.txt", "n\n")
				r.chmod("run.sh", 0o644)
				r.chmod("plain", 0o755)
				r.remove("link")
				r.symlink("dir/sub/c.txt", "link")
				r.remove("linkdir")
				r.write("linkdir/real", "now a real directory\n")
				r.remove("dangling")
				r.write("dangling", "now a file\n")
				r.remove("willbedir")
				r.write("willbedir/inside", "now a directory\n")
				r.remove("willbefile")
				r.write("willbefile", "now a file\n")
				r.remove("gone-later")
				r.remove("untracked.txt")
				r.write("new.log", "ignored\n")
				r.write("keep.log", "ignored, changed: restore must not touch it\n")
			},
		},
		{
			name: "eol-attributes-from-the-target-tree",
			setup: func(r *testRepo) string {
				r.write(".gitattributes", "*.crlf eol=crlf\n*.auto text=auto\n*.bin -text\n*.txt text\n")
				r.write("a.crlf", "one\r\ntwo\r\n")
				r.write("b.crlf", "lf only\nhere\n")
				r.write("c.auto", "one\r\ntwo\r\n")
				r.write("d.bin", "raw\r\n\x00\n")
				r.write("e.txt", "mixed\r\nlines\n")
				return ""
			},
			edit: func(r *testRepo) {
				r.write(".gitattributes", "*.crlf -text\n")
				r.write("a.crlf", "changed\r\n")
				r.write("b.crlf", "changed\n")
				r.write("c.auto", "changed\r\n")
				r.write("d.bin", "changed\r\n")
				r.write("e.txt", "changed\r\n")
			},
		},
		{
			name: "autocrlf-true",
			setup: func(r *testRepo) string {
				r.git("config", "core.autocrlf", "true")
				r.write("a.txt", "one\ntwo\n")
				r.write("b.txt", "one\r\ntwo\r\n")
				r.write("c.bin", "bin\x00\n")
				return ""
			},
			edit: func(r *testRepo) {
				r.write("a.txt", "changed\n")
				r.write("b.txt", "changed\r\n")
				r.write("c.bin", "changed\x00\n")
			},
		},
		{
			name: "clean-and-smudge-filter",
			setup: func(r *testRepo) string {
				r.git("config", "filter.upper.clean", "tr a-z A-Z")
				r.git("config", "filter.upper.smudge", "tr A-Z a-z")
				r.write(".gitattributes", "*.up filter=upper\n")
				r.write("a.up", "hello\n")
				r.write("b.txt", "Not Filtered\n")
				return ""
			},
			edit: func(r *testRepo) {
				r.write("a.up", "changed\n")
				r.write("b.txt", "Changed\n")
			},
		},
		{
			name: "ident",
			setup: func(r *testRepo) string {
				r.write(".gitattributes", "*.id ident\n")
				r.write("a.id", "$Id$\n")
				return ""
			},
			edit: func(r *testRepo) { r.write("a.id", "$Id$ changed\n") },
		},
		{
			name:  "lfs",
			needs: "git-lfs",
			setup: func(r *testRepo) string {
				r.git("lfs", "install", "--local")
				r.git("lfs", "track", "*.bin")
				writeBigFile(r.t, r.path("big.bin"), 200<<10, 5)
				r.write("small.txt", "not lfs\n")
				r.commitAll("lfs")
				return ""
			},
			edit: func(r *testRepo) {
				writeBigFile(r.t, r.path("big.bin"), 100<<10, 6)
				writeBigFile(r.t, r.path("new.bin"), 10<<10, 7)
			},
		},
		{
			name: "unborn-head",
			setup: func(r *testRepo) string {
				r.write("a", "a\n")
				r.write("d/b", "b\n")
				return ""
			},
			edit: func(r *testRepo) {
				r.remove("d")
				r.write("a", "changed\n")
				r.write("e/f", "f\n")
			},
		},
		{
			name: "linked-worktree",
			setup: func(r *testRepo) string {
				r.write("a", "main\n")
				r.commitAll("init")
				wt := filepath.Join(filepath.Dir(r.Root), "wt")
				r.git("worktree", "add", "-q", "-b", "feature", wt)
				mustWrite(r.t, filepath.Join(wt, "b"), []byte("b in wt\n"), 0o644)
				r.Root = wt // the edits below happen in the linked worktree
				return wt
			},
			edit: func(r *testRepo) {
				r.write("a", "changed in wt\n")
				r.remove("b")
				r.write("c/d", "new\n")
			},
		},
		{
			name: "opened-from-a-subdirectory",
			setup: func(r *testRepo) string {
				r.write("top", "top\n")
				r.write("sub/x", "x\n")
				return r.path("sub")
			},
			edit: func(r *testRepo) {
				r.write("top", "changed\n")
				r.remove("sub/x")
				r.write("sub/y", "y\n")
			},
		},
	}
}

// TestRestoreReplacesEmptyDirectoryInTheWay: a directory holding no files at
// all (only empty directories) does not hold anything restore could lose, so
// restoring a file or symlink at its path replaces it, as git's checkout does.
func TestRestoreReplacesEmptyDirectoryInTheWay(t *testing.T) {
	for _, kind := range []string{"file", "symlink"} {
		t.Run(kind, func(t *testing.T) {
			r := newRepo(t)
			r.write("target", "t\n")
			if kind == "file" {
				r.write("d", "a file\n")
			} else {
				r.symlink("target", "d")
			}
			repo := openRepo(t, r.Root)
			s1 := snapshotMatchingGit(t, repo, r.Root, "refs/mulligan/manual/s1")
			r.remove("d")
			r.mkdir("d/empty/emptier")
			s2 := snapshotMatchingGit(t, repo, r.Root, "refs/mulligan/manual/s2")
			if _, err := repo.Restore(context.Background(), s1.Tree, snapshot.RestoreOptions{UndoRef: "refs/mulligan/undo/u"}); err != nil {
				t.Fatalf("Restore over a directory of empty directories: %v", err)
			}
			if got := assertTreeMatchesGit(t, repo, r.Root); got.Tree != s1.Tree {
				t.Errorf("after Restore the tree is %s, want %s", got.Tree, s1.Tree)
			}
			assertWorktreeLike(t, r.Root, gitCheckout(t, r.Root, s1.Tree.String()), contentChanged(t, r.Root, s2.Tree, s1.Tree))
		})
	}
}

// TestWriteTreeFailsCleanly: a corrupt user index (git refuses it too) and a
// cancelled context are errors, not panics, and leave the user's repository
// and the engine's directory as they were.
func TestWriteTreeFailsCleanly(t *testing.T) {
	r := newRepo(t)
	r.write("a", "a\n")
	r.commitAll("init")
	repo := openRepo(t, r.Root)
	writeTree(t, repo) // the private index exists from here on
	privDir := filepath.Join(repo.GitDir(), "mulligan")
	listPriv := func() string {
		ents, _ := os.ReadDir(privDir)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return strings.Join(names, " ")
	}
	privBefore := listPriv()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.write("a", "changed\n")
	if _, err := repo.WriteTree(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("WriteTree(cancelled context) error = %v, want context.Canceled", err)
	}
	if got := listPriv(); got != privBefore {
		t.Errorf("a cancelled WriteTree left %q in %s, had %q", got, privDir, privBefore)
	}

	if err := os.WriteFile(r.path(".git/index"), []byte("DIRC garbage, not an index"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tryGit(r.Root, nil, "status"); err == nil {
		t.Fatal("setup: git accepts the corrupt index")
	}
	before := captureState(t, r.Root)
	for _, e := range []*snapshot.Repo{repo, openRepo(t, r.Root)} {
		if _, err := e.WriteTree(context.Background()); err == nil {
			t.Errorf("WriteTree with a corrupt user index succeeded; git refuses such an index")
		}
	}
	if d := before.diff(captureState(t, r.Root)); len(d) > 0 {
		t.Errorf("a failed WriteTree changed the repository:\n  %s", strings.Join(d, "\n  "))
	}
	if got := listPriv(); got != privBefore {
		t.Errorf("a failed WriteTree left %q in %s, had %q", got, privDir, privBefore)
	}
}

// TestTrackedFileDeletedAndRecreated: a tracked file that is deleted, snapshotted, then created
// again is still tracked for `git add -A` (here: an ignored file added with -f, which an untracked
// file could not be), through a reopened engine and through a watched one.
func TestTrackedFileDeletedAndRecreated(t *testing.T) {
	for _, watched := range []bool{false, true} {
		t.Run(fmt.Sprintf("watched=%v", watched), func(t *testing.T) {
			r := newRepo(t)
			r.write(".gitignore", "*.log\nbuild/\n")
			r.write("a.txt", "a\n")
			r.write("keep.log", "tracked but ignored\n")
			r.write("build/out.log", "tracked in an ignored directory\n")
			r.git("add", "-f", "keep.log", "build/out.log")
			r.commitAll("c")
			repo := openRepo(t, r.Root)
			if watched {
				if err := repo.Watch(); err != nil {
					t.Fatalf("Watch: %v", err)
				}
			}
			assertTreeMatchesGit(t, repo, r.Root)
			r.remove("keep.log")
			if err := os.RemoveAll(r.path("build")); err != nil {
				t.Fatal(err)
			}
			assertTreeMatchesGit(t, repo, r.Root)
			r.write("keep.log", "back\n")
			r.write("build/out.log", "back too\n")
			assertTreeMatchesGit(t, repo, r.Root)
			assertTreeMatchesGit(t, openRepo(t, r.Root), r.Root)
		})
	}
}
