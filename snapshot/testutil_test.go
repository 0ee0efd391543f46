package snapshot_test

// Shared helpers for the black-box snapshot tests (compat, property, benchcmp).
//
// Every helper that runs git does so with a hermetic environment set on the test
// process itself (t.Setenv), because the engine under test reads HOME,
// XDG_CONFIG_HOME and GIT_CONFIG_GLOBAL from the same process: the git child and
// the engine must see exactly the same configuration, or a differing tree id
// would say nothing about the engine.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/snapshot"
)

// testHome describes the hermetic user environment of one test.
type testHome struct {
	Home         string // $HOME
	GlobalConfig string // $GIT_CONFIG_GLOBAL
	XDG          string // $XDG_CONFIG_HOME ("" when unset)
}

// gitEnvVarsToClear would let the caller's environment leak into a test: a
// GIT_DIR or GIT_INDEX_FILE from an outer git hook would redirect every command.
var gitEnvVarsToClear = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES",
	"GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
	"GIT_CONFIG_COUNT", "GIT_NAMESPACE", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
	"GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
	"GIT_EXEC_PATH", "GIT_TRACE", "GIT_LFS_SKIP_SMUDGE", "EMAIL",
}

// hermeticHome points HOME, GIT_CONFIG_GLOBAL and XDG_CONFIG_HOME at fresh
// temporary places for the rest of the test. The global config holds what
// STYLE.md requires; extra lines are appended verbatim.
func hermeticHome(t testing.TB, extraGlobal string) *testHome {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git binary not on PATH")
	}
	home := t.TempDir()
	h := &testHome{
		Home:         home,
		GlobalConfig: filepath.Join(home, ".gitconfig"),
		XDG:          filepath.Join(home, "xdg-config"),
	}
	cfg := "[user]\n\tname = Test User\n\temail = test@example.com\n" +
		"[init]\n\tdefaultBranch = main\n" +
		"[commit]\n\tgpgSign = false\n" +
		"[tag]\n\tgpgSign = false\n" +
		"[maintenance]\n\tauto = false\n" +
		"[gc]\n\tauto = 0\n" +
		"[advice]\n\tdetachedHead = false\n\taddEmbeddedRepo = false\n" +
		extraGlobal
	mustWrite(t, h.GlobalConfig, []byte(cfg), 0o644)
	mustMkdir(t, h.XDG)
	t.Setenv("HOME", h.Home)
	t.Setenv("GIT_CONFIG_GLOBAL", h.GlobalConfig)
	t.Setenv("XDG_CONFIG_HOME", h.XDG)
	t.Setenv("XDG_DATA_HOME", filepath.Join(h.Home, "share")) // mulligan's worktrees
	t.Setenv("MULLIGAN_WORKTREES", "")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_ATTR_NOSYSTEM", "1")
	t.Setenv("GIT_TERMINAL_PROMPT", "0")
	t.Setenv("LC_ALL", "C")
	for _, k := range gitEnvVarsToClear {
		unsetenv(t, k)
	}
	return h
}

// unsetenv removes k for the rest of the test and restores it afterwards.
func unsetenv(t testing.TB, k string) {
	t.Helper()
	t.Setenv(k, "") // registers the restore
	os.Unsetenv(k)
}

// testRepo is a repository built with the git binary for one test.
type testRepo struct {
	t    testing.TB
	Root string // worktree root, symlinks resolved
	Home *testHome
}

// newRepo makes a hermetic environment and `git init`s an empty repository.
func newRepo(t testing.TB) *testRepo {
	t.Helper()
	h := hermeticHome(t, "")
	root := filepath.Join(resolvedTempDir(t), "repo")
	mustMkdir(t, root)
	r := &testRepo{t: t, Root: root, Home: h}
	r.git("init", "-q")
	return r
}

// resolvedTempDir is t.TempDir with symlinks resolved, so paths the engine
// reports (it calls filepath.Abs/EvalSymlinks or not) compare equal.
func resolvedTempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// git runs git in the repository root and returns its trimmed stdout.
func (r *testRepo) git(args ...string) string {
	r.t.Helper()
	return runGit(r.t, r.Root, nil, args...)
}

// gitIn runs git in dir.
func (r *testRepo) gitIn(dir string, args ...string) string {
	r.t.Helper()
	return runGit(r.t, dir, nil, args...)
}

// runGit runs git in dir with env added to the (hermetic) process environment
// and fails the test on a non-zero exit, showing stderr.
func runGit(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	out, err := tryGit(dir, env, args...)
	if err != nil {
		t.Fatalf("git %s (in %s): %v", strings.Join(args, " "), dir, err)
	}
	return out
}

// tryGit is runGit without the test: it returns stdout (trimmed of the final
// newline) and an error that carries stderr.
func tryGit(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSuffix(stdout.String(), "\n"), nil
}

func (r *testRepo) path(rel string) string { return filepath.Join(r.Root, filepath.FromSlash(rel)) }

// write creates rel (and its parents) with content, mode 0644.
func (r *testRepo) write(rel, content string) { r.writeMode(rel, content, 0o644) }

// writeMode creates rel with content and exactly perm (umask does not apply).
func (r *testRepo) writeMode(rel, content string, perm os.FileMode) {
	r.t.Helper()
	p := r.path(rel)
	mustMkdir(r.t, filepath.Dir(p))
	mustWrite(r.t, p, []byte(content), perm)
}

func (r *testRepo) symlink(target, rel string) {
	r.t.Helper()
	p := r.path(rel)
	mustMkdir(r.t, filepath.Dir(p))
	if err := os.Symlink(target, p); err != nil {
		r.t.Fatal(err)
	}
}

func (r *testRepo) remove(rel string) {
	r.t.Helper()
	if err := os.RemoveAll(r.path(rel)); err != nil {
		r.t.Fatal(err)
	}
}

func (r *testRepo) chmod(rel string, perm os.FileMode) {
	r.t.Helper()
	if err := os.Chmod(r.path(rel), perm); err != nil {
		r.t.Fatal(err)
	}
}

func (r *testRepo) mkdir(rel string) { r.t.Helper(); mustMkdir(r.t, r.path(rel)) }

func (r *testRepo) read(rel string) string {
	r.t.Helper()
	b, err := os.ReadFile(r.path(rel))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

// setMtime sets the modification time of rel (without following a symlink's target
// is not possible portably, so only regular files are meant).
func (r *testRepo) setMtime(rel string, mt time.Time) {
	r.t.Helper()
	if err := os.Chtimes(r.path(rel), mt, mt); err != nil {
		r.t.Fatal(err)
	}
}

// commitAll stages everything and commits, allowing an empty commit.
func (r *testRepo) commitAll(msg string) {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", msg)
}

func mustWrite(t testing.TB, p string, b []byte, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, b, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
}

func mustMkdir(t testing.TB, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

// repoInfo is where git says the repository containing a directory lives.
type repoInfo struct {
	Root, GitDir, CommonDir string
}

var (
	repoInfoMu    sync.Mutex
	repoInfoCache = map[string]repoInfo{}
)

// gitRepoInfo asks git once per directory (test temp directories are never
// reused, and a repository does not move during a test).
func gitRepoInfo(t testing.TB, dir string) repoInfo {
	t.Helper()
	repoInfoMu.Lock()
	defer repoInfoMu.Unlock()
	if ri, ok := repoInfoCache[dir]; ok {
		return ri
	}
	out := runGit(t, dir, nil, "rev-parse", "--path-format=absolute", "--show-toplevel", "--absolute-git-dir", "--git-common-dir")
	lines := strings.Split(out, "\n")
	if len(lines) != 3 {
		t.Fatalf("git rev-parse in %s: %q", dir, out)
	}
	ri := repoInfo{Root: lines[0], GitDir: lines[1], CommonDir: filepath.Clean(lines[2])}
	repoInfoCache[dir] = ri
	return ri
}

// gitWriteTree is the reference: the tree id of
//
//	cp <index> T; GIT_INDEX_FILE=T git add -A; GIT_INDEX_FILE=T git write-tree
//
// run at the worktree root of dir. An unborn repository without an index
// starts from no index. The copy keeps the index's mtime, because git decides
// which entries are racily clean by comparing them with it.
func gitWriteTree(t testing.TB, dir string) string {
	t.Helper()
	ri := gitRepoInfo(t, dir)
	root := ri.Root
	tmp := filepath.Join(t.TempDir(), "index")
	copyIndex(t, filepath.Join(ri.GitDir, "index"), tmp)
	env := []string{"GIT_INDEX_FILE=" + tmp}
	runGit(t, root, env, "add", "-A")
	return runGit(t, root, env, "write-tree")
}

// copyIndex copies an index file preserving its mtime; a missing source means
// no copy (git then starts from an empty index).
func copyIndex(t testing.TB, src, dst string) {
	t.Helper()
	fi, err := os.Stat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, dst, b, 0o644)
	if err := os.Chtimes(dst, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// openRepo opens the engine on dir and closes it when the test ends.
func openRepo(t testing.TB, dir string) *snapshot.Repo {
	t.Helper()
	repo, err := snapshot.Open(dir)
	if err != nil {
		t.Fatalf("snapshot.Open(%s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := repo.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return repo
}

func writeTree(t testing.TB, repo *snapshot.Repo) snapshot.TreeResult {
	t.Helper()
	res, err := repo.WriteTree(context.Background())
	if err != nil {
		t.Fatalf("WriteTree: %v", err)
	}
	return res
}

// assertTreeMatchesGit takes a snapshot with the engine opened on dir and
// checks, in this order, that it changed nothing of the user's, that every
// object it names is in the object store, that its file count is right, and
// that its tree id is git's. It returns the tree.
func assertTreeMatchesGit(t testing.TB, repo *snapshot.Repo, dir string) snapshot.TreeResult {
	t.Helper()
	before := captureState(t, dir)
	res := writeTree(t, repo)
	after := captureState(t, dir)
	if d := before.diff(after); len(d) > 0 {
		t.Errorf("WriteTree changed the user's repository:\n  %s", strings.Join(d, "\n  "))
	}
	// Before git's own `add -A` writes the same blobs, so a missing object is the engine's.
	if n := countTreeFiles(t, dir, res.Tree.String()); n != res.Files {
		t.Errorf("WriteTree Files = %d, git ls-tree -r counts %d", res.Files, n)
	}
	want := gitWriteTree(t, dir)
	if got := res.Tree.String(); got != want {
		t.Errorf("WriteTree tree = %s, git write-tree = %s\n%s", got, want, describeTreeDiff(t, dir, want, got))
	}
	return res
}

// countTreeFiles lists tree recursively with git and checks that every blob it
// names exists; it returns the number of non-tree entries.
func countTreeFiles(t testing.TB, dir, tree string) int {
	t.Helper()
	out, err := tryGit(dir, nil, "ls-tree", "-r", "-z", "--full-tree", tree)
	if err != nil {
		t.Fatalf("the engine's tree %s is not readable by git: %v", tree, err)
	}
	n := 0
	var blobs []string
	for _, rec := range strings.Split(out, "\x00") {
		if rec == "" {
			continue
		}
		n++
		f := strings.Fields(rec)
		if len(f) >= 3 && f[1] == "blob" {
			blobs = append(blobs, f[2])
		}
	}
	if len(blobs) > 0 {
		cmd := exec.Command("git", "cat-file", "--batch-check")
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(strings.Join(blobs, "\n") + "\n")
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("git cat-file --batch-check: %v", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasSuffix(line, " missing") {
				t.Errorf("the engine's tree %s names a blob that is not in the object store: %s", tree, line)
			}
		}
	}
	return n
}

// describeTreeDiff shows the entries where two trees differ, with the
// engine's blob contents when they are short, so a failure says why.
func describeTreeDiff(t testing.TB, dir, want, got string) string {
	t.Helper()
	out, err := tryGit(dir, nil, "diff-tree", "-r", "--raw", "--no-renames", want, got)
	if err != nil {
		return fmt.Sprintf("(git diff-tree %s %s failed: %v)", want, got, err)
	}
	var b strings.Builder
	b.WriteString("git diff-tree -r (git's tree → engine's tree):\n")
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		if i == 40 {
			fmt.Fprintf(&b, "  ... %d more\n", len(lines)-i)
			break
		}
		b.WriteString("  " + line + "\n")
		// ":100644 100644 aaaa bbbb M\tpath"
		f := strings.Fields(line)
		if len(f) >= 4 {
			for _, h := range []string{f[2], f[3]} {
				if strings.Trim(h, "0") == "" {
					continue
				}
				c, err := tryGit(dir, nil, "cat-file", "-p", h)
				if err == nil && len(c) <= 200 {
					fmt.Fprintf(&b, "      %s: %q\n", h[:10], c)
				}
			}
		}
	}
	return b.String()
}

// fileState is what the user could observe of one path in the working tree.
type fileState struct {
	Mode    fs.FileMode
	Size    int64
	MtimeNs int64
	Inode   uint64
	Sum     string // sha256 of a regular file, target of a symlink
}

// repoState is everything a snapshot promises not to change.
type repoState struct {
	Index      []byte // nil when there is no index
	HeadFiles  map[string]string
	Refs       string // `git for-each-ref` without refs/mulligan/
	PackedRefs string
	Config     string
	Files      map[string]fileState
}

// captureState records the user-visible state of the repository containing dir.
func captureState(t testing.TB, dir string) *repoState {
	t.Helper()
	ri := gitRepoInfo(t, dir)
	root, gitDir, common := ri.Root, ri.GitDir, ri.CommonDir
	s := &repoState{HeadFiles: map[string]string{}, Files: map[string]fileState{}}
	if b, err := os.ReadFile(filepath.Join(gitDir, "index")); err == nil {
		s.Index = b
	}
	for _, d := range []string{gitDir, common} {
		b, _ := os.ReadFile(filepath.Join(d, "HEAD"))
		s.HeadFiles[d] = string(b)
	}
	// Loose refs read from disk (a git process per capture is too slow on a
	// loaded machine); packed refs below.
	var refs []string
	for i, d := range []string{common, gitDir} {
		if i == 1 && d == common {
			break
		}
		base := filepath.Join(d, "refs")
		filepath.WalkDir(base, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(d, p)
			rel = filepath.ToSlash(rel)
			if e.IsDir() {
				if rel == "refs/mulligan" {
					return filepath.SkipDir
				}
				return nil
			}
			b, _ := os.ReadFile(p)
			refs = append(refs, rel+" "+strings.TrimSpace(string(b)))
			return nil
		})
	}
	sort.Strings(refs)
	s.Refs = strings.Join(refs, "\n")
	if b, err := os.ReadFile(filepath.Join(common, "packed-refs")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, " refs/mulligan/") {
				s.PackedRefs += line + "\n"
			}
		}
	}
	cfg, _ := os.ReadFile(filepath.Join(common, "config"))
	s.Config = string(cfg)
	s.Files = worktreeFiles(t, root)
	return s
}

// worktreeFiles walks root, skipping only the top-level .git directory, and
// records every file, directory and symlink.
func worktreeFiles(t testing.TB, root string) map[string]fileState {
	t.Helper()
	files := map[string]fileState{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == ".git" && d.IsDir() {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fileState{Mode: fi.Mode(), Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano()}
		if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
			st.Inode = sys.Ino
		}
		switch {
		case fi.Mode().IsRegular():
			st.Sum = fileSum(t, p)
		case fi.Mode()&fs.ModeSymlink != 0:
			st.Sum, _ = os.Readlink(p)
		case fi.IsDir():
			st.Size = 0 // a directory's size is filesystem noise; its mtime is not
		}
		files[rel] = st
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", root, err)
	}
	return files
}

func fileSum(t testing.TB, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// diff lists what changed between two states, ignoring the engine's own
// directory (<git-dir>/mulligan is inside .git and so never walked).
func (s *repoState) diff(o *repoState) []string {
	var d []string
	switch {
	case (s.Index == nil) != (o.Index == nil):
		d = append(d, fmt.Sprintf("index existence changed: before %v, after %v", s.Index != nil, o.Index != nil))
	case !bytes.Equal(s.Index, o.Index):
		d = append(d, "index bytes changed")
	}
	for k, v := range s.HeadFiles {
		if o.HeadFiles[k] != v {
			d = append(d, fmt.Sprintf("HEAD in %s changed: %q → %q", k, v, o.HeadFiles[k]))
		}
	}
	if s.Refs != o.Refs {
		d = append(d, fmt.Sprintf("refs changed:\n%s\n→\n%s", s.Refs, o.Refs))
	}
	if s.PackedRefs != o.PackedRefs {
		d = append(d, "packed-refs changed (outside refs/mulligan/)")
	}
	if s.Config != o.Config {
		d = append(d, fmt.Sprintf("config changed:\n%s\n→\n%s", s.Config, o.Config))
	}
	d = append(d, diffFiles(s.Files, o.Files)...)
	return d
}

func diffFiles(a, b map[string]fileState) []string {
	var d []string
	for p, x := range a {
		y, ok := b[p]
		switch {
		case !ok:
			d = append(d, "removed "+p)
		case x != y:
			d = append(d, fmt.Sprintf("changed %s: %+v → %+v", p, x, y))
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			d = append(d, "created "+p)
		}
	}
	sort.Strings(d)
	return d
}

// gitCheckout writes tree into a fresh directory the way git's checkout does
// (`GIT_INDEX_FILE=T git --work-tree=D read-tree --reset -u TREE` in the
// repository of dir: same config, same attributes from the tree, same smudge
// filters) and returns the directory.
func gitCheckout(t testing.TB, dir, tree string) string {
	t.Helper()
	gitDir := gitRepoInfo(t, dir).GitDir
	out := filepath.Join(resolvedTempDir(t), "checkout")
	mustMkdir(t, out)
	env := []string{
		"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index"),
		"GIT_DIR=" + gitDir,
		"GIT_WORK_TREE=" + out,
	}
	runGit(t, out, env, "read-tree", "--reset", "-u", tree)
	return out
}

// assertWorktreeLike checks that every file, symlink and exec bit git's
// checkout wrote into want exists under root, with the same bytes when the
// path is in written (nil: every path). A path restore had no reason to write
// (same blob, or only its mode changed) keeps the user's bytes, which need
// only clean to the same blob: WriteTree == tree checks that, and so the paths
// that are only under root too. Directories git left empty (submodules) only
// need to exist.
func assertWorktreeLike(t testing.TB, root, want string, written map[string]bool) {
	t.Helper()
	wantFiles := worktreeFiles(t, want)
	for p, w := range wantFiles {
		if p == "." {
			continue
		}
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			t.Errorf("restore: %s missing: %v", p, err)
			continue
		}
		switch {
		case w.Mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(filepath.Join(root, filepath.FromSlash(p)))
			if fi.Mode()&fs.ModeSymlink == 0 || err != nil || target != w.Sum {
				t.Errorf("restore: %s should be a symlink to %q, is %v %q", p, w.Sum, fi.Mode(), target)
			}
		case w.Mode.IsDir():
			if !fi.IsDir() {
				t.Errorf("restore: %s should be a directory, is %v", p, fi.Mode())
			}
		case w.Mode.IsRegular():
			if !fi.Mode().IsRegular() {
				t.Errorf("restore: %s should be a regular file, is %v", p, fi.Mode())
				continue
			}
			if (w.Mode&0o100 != 0) != (fi.Mode()&0o100 != 0) {
				t.Errorf("restore: %s exec bit: git checkout %v, restore %v", p, w.Mode.Perm(), fi.Mode().Perm())
			}
			if written != nil && !written[p] {
				continue
			}
			if got := fileSum(t, filepath.Join(root, filepath.FromSlash(p))); got != w.Sum {
				gb, _ := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
				wb, _ := os.ReadFile(filepath.Join(want, filepath.FromSlash(p)))
				t.Errorf("restore: %s bytes differ from git checkout's:\n  restore: %s\n  git:     %s", p, shortQuote(gb), shortQuote(wb))
			}
		}
	}
}

func shortQuote(b []byte) string {
	if len(b) > 120 {
		return fmt.Sprintf("%q... (%d bytes)", b[:120], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// contentChanged lists the paths whose blob (or kind) differs between two
// trees: the ones a restore from one to the other has to write.
func contentChanged(t testing.TB, dir string, from, to plumbing.Hash) map[string]bool {
	t.Helper()
	out := runGit(t, dir, nil, "diff-tree", "-r", "-z", "--raw", "--no-renames", "--full-index", from.String(), to.String())
	paths := map[string]bool{}
	recs := strings.Split(out, "\x00")
	for i := 0; i+1 < len(recs); i += 2 {
		f := strings.Fields(strings.TrimPrefix(recs[i], ":"))
		if len(f) >= 5 && (f[2] != f[3] || f[0][:2] != f[1][:2]) {
			paths[recs[i+1]] = true
		}
	}
	return paths
}

// gitTreeOf returns the tree of a commit or ref with git.
func gitTreeOf(t testing.TB, dir, rev string) string {
	t.Helper()
	return runGit(t, dir, nil, "rev-parse", rev+"^{tree}")
}

// hash parses a hex object id.
func hash(t testing.TB, s string) plumbing.Hash {
	t.Helper()
	if !plumbing.IsHash(s) {
		t.Fatalf("not an object id: %q", s)
	}
	return plumbing.NewHash(s)
}

// ignoredOnDisk lists the untracked files git considers ignored in the
// repository of dir, against a copy of its index.
func ignoredOnDisk(t testing.TB, dir string) map[string]string {
	t.Helper()
	ri := gitRepoInfo(t, dir)
	root := ri.Root
	tmp := filepath.Join(t.TempDir(), "index")
	copyIndex(t, filepath.Join(ri.GitDir, "index"), tmp)
	out := runGit(t, root, []string{"GIT_INDEX_FILE=" + tmp}, "ls-files", "-z", "--others", "--ignored", "--exclude-standard")
	files := map[string]string{}
	for _, p := range strings.Split(out, "\x00") {
		if p == "" {
			continue
		}
		fi, err := os.Lstat(filepath.Join(root, p))
		if err != nil {
			continue
		}
		if fi.Mode().IsRegular() {
			files[p] = fileSum(t, filepath.Join(root, p))
		} else if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(filepath.Join(root, p))
			files[p] = "symlink:" + target
		}
	}
	return files
}

// assertIgnoredSurvive checks that each ignored file recorded before a restore
// is still there with the same content.
func assertIgnoredSurvive(t testing.TB, root string, before map[string]string) {
	t.Helper()
	for p, sum := range before {
		full := filepath.Join(root, p)
		fi, err := os.Lstat(full)
		if err != nil {
			t.Errorf("restore removed ignored file %s: %v", p, err)
			continue
		}
		var now string
		if fi.Mode().IsRegular() {
			now = fileSum(t, full)
		} else if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(full)
			now = "symlink:" + target
		}
		if now != sum {
			t.Errorf("restore changed ignored file %s", p)
		}
	}
}
