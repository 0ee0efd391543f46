package snapshot_test

// The property test: random edit sequences, where after every step the
// engine's tree must be git's, and every few steps a Restore of an earlier
// snapshot must write what git's checkout writes, keep ignored files, and
// leave an undo ref holding the tree it replaced. Also the deterministic
// restore-safety cases: a path changed after the undo snapshot, and a
// directory replaced by a symlink that points out of the working tree.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/snapshot"
)

func TestPropertyRandomEdits(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("MULLIGAN_PROP_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("MULLIGAN_PROP_SEED=%q: %v", s, err)
		}
		seed = v
	}
	steps := 30
	if s := os.Getenv("MULLIGAN_PROP_STEPS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("MULLIGAN_PROP_STEPS=%q: want a positive integer", s)
		}
		steps = v
	}
	t.Logf("seed %d (replay: MULLIGAN_PROP_SEED=%d MULLIGAN_PROP_STEPS=%d go test -run TestPropertyRandomEdits ./snapshot/)", seed, seed, steps)

	r := newRepo(t)
	outside := resolvedTempDir(t)
	mustWrite(t, filepath.Join(outside, "o.txt"), []byte("outside\n"), 0o644)
	mustMkdir(t, filepath.Join(outside, "od"))
	mustWrite(t, filepath.Join(outside, "od", "x"), []byte("outside dir\n"), 0o644)
	outsideBefore := worktreeFiles(t, outside)

	// *.ign is always ignored (the first line of the root .gitignore is never
	// removed), so those files are the ones every restore must keep.
	r.write(".gitignore", "*.ign\n")
	r.write(".gitattributes", "*.txt text=auto\n*.crlf eol=crlf\n")
	r.write("d0/f0", "seed\n")
	r.commitAll("init")

	m := &propModel{t: t, r: r, rng: rand.New(rand.NewSource(seed)), outside: outside}
	repo := openRepo(t, r.Root)
	var snaps []plumbing.Hash
	for step := 1; step <= steps; step++ {
		desc := m.randomEdit()
		t.Logf("step %d: %s", step, desc)
		if step%7 == 0 {
			repo = openRepo(t, r.Root)
			t.Logf("step %d: reopened the engine", step)
		}
		res := assertTreeMatchesGit(t, repo, r.Root)
		if len(snaps) > 0 {
			prev := snaps[len(snaps)-1]
			changes, err := repo.DiffTrees(prev, res.Tree)
			if err != nil {
				t.Fatalf("DiffTrees: %v", err)
			}
			assertChangesMatchGit(t, r.Root, changes, prev, res.Tree)
		}
		if t.Failed() {
			t.Fatalf("step %d failed; replay with MULLIGAN_PROP_SEED=%d MULLIGAN_PROP_STEPS=%d", step, seed, step)
		}
		snaps = append(snaps, res.Tree)
		if step%4 == 0 && len(snaps) > 1 {
			if tree, ok := m.restoreEarlier(repo, snaps, step); ok {
				snaps = append(snaps, tree)
			}
			if t.Failed() {
				t.Fatalf("restore at step %d failed; replay with MULLIGAN_PROP_SEED=%d MULLIGAN_PROP_STEPS=%d", step, seed, step)
			}
		}
		if d := diffFiles(outsideBefore, worktreeFiles(t, outside)); len(d) > 0 {
			t.Fatalf("step %d: something wrote outside the working tree:\n  %s", step, strings.Join(d, "\n  "))
		}
	}
	gitFsck(t, r.Root)
}

// propModel makes random, always-valid edits to a working tree. It never
// writes through a symlink: the only way anything may reach the outside
// directory is through the engine.
type propModel struct {
	t       *testing.T
	r       *testRepo
	rng     *rand.Rand
	outside string
}

var (
	propDirs  = []string{"", "d0", "d1", "d0/e0", "d1/e1/g0"}
	propNames = []string{"f0", "f1", "f2.txt", "f3.txt", "f4.crlf", "run.sh", "f0", "f1", "f2.txt", "d0", "e0", "d1"}
	// Ignore rules never un-ignore *.ign.
	propRules = []string{"f1", "/f0", "d1/", "*.txt", "!f3.txt", "e0/", "**/f4.crlf", "run.sh", "g0/", "f2*", "!f1"}
)

func (m *propModel) pick(n int) int { return m.rng.Intn(n) }

func (m *propModel) randomPath() string {
	d := propDirs[m.pick(len(propDirs))]
	n := propNames[m.pick(len(propNames))]
	return filepath.ToSlash(filepath.Join(d, n))
}

// ensureParent makes every ancestor of rel a real directory, removing files
// and symlinks in the way.
func (m *propModel) ensureParent(rel string) {
	parts := strings.Split(rel, "/")
	cur := m.r.Root
	for _, p := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, p)
		fi, err := os.Lstat(cur)
		if err == nil && !fi.IsDir() {
			if err := os.Remove(cur); err != nil {
				m.t.Fatal(err)
			}
		}
	}
	mustMkdir(m.t, filepath.Dir(m.r.path(rel)))
}

// clear removes whatever is at rel (file, symlink or directory).
func (m *propModel) clear(rel string) {
	if err := os.RemoveAll(m.r.path(rel)); err != nil {
		m.t.Fatal(err)
	}
}

// entries lists the paths of the working tree (not .git, not the root
// .gitignore/.gitattributes, which the model keeps).
func (m *propModel) entries(keep func(fs.FileMode) bool) []string {
	var out []string
	for p, st := range worktreeFiles(m.t, m.r.Root) {
		if p == "." || p == ".gitignore" || p == ".gitattributes" {
			continue
		}
		if keep == nil || keep(st.Mode) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func (m *propModel) content() string {
	lines := 1 + m.pick(4)
	eol := []string{"\n", "\r\n", "\n", "\r"}[m.pick(4)]
	var b strings.Builder
	for i := 0; i < lines; i++ {
		fmt.Fprintf(&b, "line %d %x%s", i, m.rng.Uint32(), eol)
	}
	switch m.pick(6) {
	case 0:
		return ""
	case 1:
		return b.String() + "\x00binary"
	}
	return b.String()
}

// randomEdit applies one random edit and describes it.
func (m *propModel) randomEdit() string {
	r := m.r
	switch k := m.pick(100); {
	case k < 28: // create or rewrite a file
		p := m.randomPath()
		m.ensureParent(p)
		if fi, err := os.Lstat(r.path(p)); err == nil && !fi.Mode().IsRegular() {
			m.clear(p)
		}
		c := m.content()
		r.write(p, c)
		return fmt.Sprintf("write %s %q", p, c)
	case k < 31: // only the mtime moves (content and size stay)
		files := m.entries(func(md fs.FileMode) bool { return md.IsRegular() })
		if len(files) == 0 {
			return "touch: no file"
		}
		p := files[m.pick(len(files))]
		mt := time.Now().Add(time.Duration(m.pick(7200)-3600) * time.Second)
		r.setMtime(p, mt)
		return fmt.Sprintf("touch %s to %s", p, mt.Format(time.TimeOnly))
	case k < 34: // same size, same second: the racy case
		files := m.entries(func(md fs.FileMode) bool { return md.IsRegular() })
		for _, p := range files {
			b, _ := os.ReadFile(r.path(p))
			if len(b) > 0 && !strings.HasSuffix(p, ".ign") {
				b[0] ^= 0x01
				mustWrite(m.t, r.path(p), b, 0o644|m.perm(p))
				return fmt.Sprintf("flip a byte of %s keeping its size", p)
			}
		}
		return "flip: no file to flip"
	case k < 46: // delete a file, symlink or directory
		all := m.entries(nil)
		if len(all) == 0 {
			return "delete: nothing to delete"
		}
		p := all[m.pick(len(all))]
		m.clear(p)
		return "delete " + p
	case k < 54: // exec bit
		files := m.entries(func(md fs.FileMode) bool { return md.IsRegular() })
		if len(files) == 0 {
			return "chmod: no file"
		}
		p := files[m.pick(len(files))]
		perm := m.perm(p) ^ 0o111
		r.chmod(p, 0o644|perm)
		return fmt.Sprintf("chmod %s %o", p, 0o644|perm)
	case k < 62: // symlink
		p := m.randomPath()
		m.ensureParent(p)
		m.clear(p)
		targets := []string{"f0", "../f0", "d0", "nowhere", filepath.Join(m.outside, "o.txt"), filepath.Join(m.outside, "od"), "../../../../etc"}
		tg := targets[m.pick(len(targets))]
		r.symlink(tg, p)
		return fmt.Sprintf("symlink %s -> %s", p, tg)
	case k < 68: // an ignore rule
		d := propDirs[m.pick(len(propDirs))]
		gi := filepath.ToSlash(filepath.Join(d, ".gitignore"))
		m.ensureParent(gi)
		rule := propRules[m.pick(len(propRules))]
		if fi, err := os.Lstat(r.path(gi)); err == nil && !fi.Mode().IsRegular() {
			m.clear(gi)
		}
		appendFile(m.t, r.path(gi), rule+"\n")
		return fmt.Sprintf("ignore %q in %s", rule, gi)
	case k < 76: // an ignored file
		d := propDirs[m.pick(len(propDirs))]
		name := []string{"cache.ign", "x.ign", "tmp.ign/inner"}[m.pick(3)]
		p := filepath.ToSlash(filepath.Join(d, name))
		m.ensureParent(p)
		if fi, err := os.Lstat(r.path(p)); err == nil && !fi.Mode().IsRegular() {
			m.clear(p)
		}
		r.write(p, fmt.Sprintf("ignored %x\n", m.rng.Uint32()))
		return "ignored file " + p
	case k < 88: // git add some paths
		var ps []string
		for i := 0; i <= m.pick(3); i++ {
			ps = append(ps, m.randomPath())
		}
		_, err := tryGit(r.Root, nil, append([]string{"add", "-A", "--"}, ps...)...)
		return fmt.Sprintf("git add -A -- %v (err: %v)", ps, err)
	case k < 93: // git rm --cached
		p := m.randomPath()
		_, err := tryGit(r.Root, nil, "rm", "-q", "-r", "--cached", "--ignore-unmatch", "--", p)
		return fmt.Sprintf("git rm --cached %s (err: %v)", p, err)
	default: // commit what is staged
		_, err := tryGit(r.Root, nil, "commit", "-q", "--allow-empty", "-m", "prop")
		return fmt.Sprintf("git commit (err: %v)", err)
	}
}

func (m *propModel) perm(rel string) fs.FileMode {
	fi, err := os.Lstat(m.r.path(rel))
	if err != nil {
		return 0
	}
	return fi.Mode().Perm() & 0o111
}

// restoreEarlier restores a random earlier snapshot that no ignored file on
// disk collides with (an ignored file at, above or below a path of the
// target: whether restore may replace it is not specified) and checks it.
// It returns the tree of the working tree afterwards.
func (m *propModel) restoreEarlier(repo *snapshot.Repo, snaps []plumbing.Hash, step int) (plumbing.Hash, bool) {
	t, r := m.t, m.r
	cur := snaps[len(snaps)-1]
	ignored := ignoredOnDisk(t, r.Root)
	var target plumbing.Hash
	for _, i := range m.rng.Perm(len(snaps) - 1) {
		if snaps[i] != cur && !collides(t, r.Root, snaps[i], ignored) {
			target = snaps[i]
			break
		}
	}
	if target.IsZero() {
		t.Logf("step %d: no earlier snapshot to restore without touching an ignored file", step)
		return plumbing.ZeroHash, false
	}
	t.Logf("step %d: restore %s over %s", step, target, cur)
	undoRef := fmt.Sprintf("refs/mulligan/undo/prop-%d", step)
	res, err := repo.Restore(context.Background(), target, snapshot.RestoreOptions{UndoRef: undoRef, UndoMessage: "prop undo\n"})
	if err != nil {
		t.Errorf("Restore(%s): %v", target, err)
		return plumbing.ZeroHash, false
	}
	if res.UndoTree != cur {
		t.Errorf("UndoTree = %s, want the tree before the restore %s", res.UndoTree, cur)
	}
	if got := gitTreeOf(t, r.Root, undoRef); got != cur.String() {
		t.Errorf("undo ref %s holds %s, want the tree before the restore %s", undoRef, got, cur)
	}
	// The differences restore left alone because either tree's rules ignore the file on disk (SPEC §2)
	// are differences it found all the same: with them, its diff is git's.
	assertChangesMatchGit(t, r.Root, append(append([]snapshot.Change{}, res.Changes...), res.Spared...), cur, target)
	assertWorktreeLike(t, r.Root, gitCheckout(t, r.Root, target.String()), contentChanged(t, r.Root, cur, target))
	assertIgnoredSurvive(t, r.Root, ignored)
	after := assertTreeMatchesGit(t, repo, r.Root)
	if after.Tree != target {
		// Only files ignored before or after the restore may differ: an
		// ignored file kept that the target's rules do not ignore, or a
		// restored file the index no longer tracks and the rules ignore.
		ignoredAfter := ignoredOnDisk(t, r.Root)
		for _, line := range gitDiffTree(t, r.Root, target.String(), after.Tree.String()) {
			p := strings.Fields(line)[0]
			_, pre := ignored[p]
			_, post := ignoredAfter[p]
			if !pre && !post {
				t.Errorf("after Restore(%s) the tree differs at %s, which is not an ignored file\n%s", target, p, describeTreeDiff(t, r.Root, target.String(), after.Tree.String()))
			}
		}
		t.Logf("step %d: restored tree snapshots as %s (differs from the target only in ignored files)", step, after.Tree)
	}
	return after.Tree, true
}

// collides reports whether an ignored path is at, above or below an entry of tree.
func collides(t testing.TB, dir string, tree plumbing.Hash, ignored map[string]string) bool {
	t.Helper()
	if len(ignored) == 0 {
		return false
	}
	entries := map[string]bool{}
	out := runGit(t, dir, nil, "ls-tree", "-r", "-t", "-z", "--full-tree", "--name-only", tree.String())
	for _, p := range strings.Split(out, "\x00") {
		entries[p] = true
	}
	for p := range ignored {
		if entries[p] {
			return true
		}
		for i := range p {
			if p[i] == '/' && entries[p[:i]] {
				// a file or symlink of the tree where the ignored file needs a
				// directory (a tree entry there is fine: -t lists trees too)
				if kind := runGit(t, dir, nil, "cat-file", "-t", tree.String()+":"+p[:i]); kind != "tree" {
					return true
				}
			}
		}
		for e := range entries {
			if strings.HasPrefix(e, p+"/") {
				return true
			}
		}
	}
	return false
}

// raceFilter configures a clean filter for the paths in attrs that passes
// content through unchanged and, the first time it runs after arm is called,
// writes "concurrent edit" to a path: a deterministic way to change a file
// after the undo snapshot has read it and before Restore writes it, without a
// test hook in the engine.
type raceFilter struct {
	trigger string
}

func newRaceFilter(r *testRepo) *raceFilter {
	f := &raceFilter{trigger: filepath.Join(r.Home.Home, "race-trigger")}
	script := filepath.Join(r.Home.Home, "race-filter.sh")
	mustWrite(r.t, script, []byte(`#!/bin/sh
cat
if [ -e "`+f.trigger+`" ]; then
	what=$(cat "`+f.trigger+`")
	rm -f "`+f.trigger+`"
	eval "$what"
fi
`), 0o755)
	r.git("config", "filter.race.clean", "sh "+script)
	return f
}

// arm makes the next run of the filter execute the shell command cmd.
func (f *raceFilter) arm(t testing.TB, cmd string) {
	t.Helper()
	mustWrite(t, f.trigger, []byte(cmd), 0o644)
}

func (f *raceFilter) fired() bool {
	_, err := os.Stat(f.trigger)
	return errors.Is(err, fs.ErrNotExist)
}

// TestRestoreRefusesPathChangedAfterUndoSnapshot: a file that changes on disk
// between the undo snapshot and the moment restore would overwrite, delete or
// create it is left alone; Restore returns *ConflictError naming it, the user's
// edit survives, and a second Restore completes the job (its undo ref holding
// the concurrent edit).
func TestRestoreRefusesPathChangedAfterUndoSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name   string
		victim string // the path changed concurrently
	}{
		{"overwrite", "race.txt"},
		{"delete", "del.txt"},
		{"create", "add.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := newRepo(t)
			f := newRaceFilter(r)
			r.write(".gitattributes", "race.txt filter=race\n")
			r.write("race.txt", "v1\n")
			r.write("add.txt", "in the target\n")
			r.write("other.txt", "o1\n")
			r.write("zz/later.txt", "z1\n")
			r.commitAll("init")
			repo := openRepo(t, r.Root)
			s1 := snapshotMatchingGit(t, repo, r.Root, "refs/mulligan/manual/s1")

			r.remove("add.txt")
			r.write("del.txt", "not in the target\n")
			r.write("other.txt", "o2\n")
			r.write("zz/later.txt", "z2\n")
			r.write("race.txt", "v2\n")
			s2 := snapshotMatchingGit(t, repo, r.Root, "refs/mulligan/manual/s2")
			r.write("race.txt", "v3\n") // so the undo snapshot runs the filter again
			f.arm(t, fmt.Sprintf("printf 'concurrent edit\\n' > '%s'", r.path(tc.victim)))

			_, err := repo.Restore(ctx, s1.Tree, snapshot.RestoreOptions{UndoRef: "refs/mulligan/undo/race1"})
			if !f.fired() {
				t.Fatalf("setup: the undo snapshot did not run the clean filter on race.txt (it changed since the last snapshot)")
			}
			undo1 := gitTreeOf(t, r.Root, "refs/mulligan/undo/race1")
			if got := catFile(t, r.Root, undo1+":race.txt"); got != "v3\n" {
				t.Errorf("the undo snapshot holds race.txt = %q, want %q (what the filter read)", got, "v3\n")
			}
			if c, err := tryGit(r.Root, nil, "cat-file", "-p", undo1+":"+tc.victim); err == nil && c+"\n" == "concurrent edit\n" {
				// The engine read the victim after the filter changed it: the edit
				// is in the undo snapshot, nothing was changed after it, and
				// restore may overwrite (the edit is safe in the undo ref).
				t.Logf("the undo snapshot read %s after the concurrent edit; no conflict to detect", tc.victim)
				if err != nil {
					t.Errorf("Restore: %v", err)
				}
				if got := assertTreeMatchesGit(t, repo, r.Root); got.Tree != s1.Tree {
					t.Errorf("after Restore the tree is %s, want %s", got.Tree, s1.Tree)
				}
				return
			}
			var ce *snapshot.ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("Restore after a concurrent change to %s: error %v, want *ConflictError", tc.victim, err)
			}
			if ce.Path != tc.victim {
				t.Errorf("ConflictError.Path = %q, want %q", ce.Path, tc.victim)
			}
			if got := r.read(tc.victim); got != "concurrent edit\n" {
				t.Errorf("Restore overwrote the concurrent edit of %s: now %q", tc.victim, got)
			}
			// Consistent: every path is at its undo version or its target version.
			for _, p := range []string{"other.txt", "zz/later.txt", "race.txt", "del.txt", "add.txt"} {
				if p == tc.victim {
					continue
				}
				onDisk, err := os.ReadFile(r.path(p))
				present := err == nil
				var ok bool
				for _, tree := range []string{undo1, s1.Tree.String()} {
					want, err := tryGit(r.Root, nil, "cat-file", "-p", tree+":"+p)
					if (err == nil) == present && (!present || string(onDisk) == want+"\n") {
						ok = true
					}
				}
				if !ok {
					t.Errorf("after the refused restore %s is neither its undo nor its target version: %q (present %v)", p, onDisk, present)
				}
			}
			if s2.Commit.String() != r.git("rev-parse", "refs/mulligan/manual/s2") {
				t.Errorf("the refused restore moved refs/mulligan/manual/s2")
			}

			res, err := repo.Restore(ctx, s1.Tree, snapshot.RestoreOptions{UndoRef: "refs/mulligan/undo/race2"})
			if err != nil {
				t.Fatalf("second Restore: %v", err)
			}
			// The user's concurrent edit is not lost: the second undo ref keeps it.
			if got := catFile(t, r.Root, res.UndoTree.String()+":"+tc.victim); got != "concurrent edit\n" {
				t.Errorf("second undo snapshot holds %s = %q, want the concurrent edit", tc.victim, got)
			}
			if got := assertTreeMatchesGit(t, repo, r.Root); got.Tree != s1.Tree {
				t.Errorf("after the second Restore the tree is %s, want %s", got.Tree, s1.Tree)
			}
			assertWorktreeLike(t, r.Root, gitCheckout(t, r.Root, s1.Tree.String()), nil)
		})
	}
}

// TestRestoreNeverWritesThroughSymlinkOut: a directory of the target that is a
// symlink out of the working tree on disk is replaced, never written through.
func TestRestoreNeverWritesThroughSymlinkOut(t *testing.T) {
	for _, tc := range []struct {
		name string
		link func(outside, root string) string // the symlink's target
	}{
		{"absolute", func(outside, _ string) string { return outside }},
		{"relative", func(outside, root string) string {
			rel, _ := filepath.Rel(filepath.Join(root, "dir", ".."), outside)
			return rel
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t)
			outside := resolvedTempDir(t)
			mustWrite(t, filepath.Join(outside, "a.txt"), []byte("OUTSIDE\n"), 0o644)
			mustWrite(t, filepath.Join(outside, "keep"), []byte("keep\n"), 0o644)
			r.write("dir/a.txt", "inside\n")
			r.write("dir/sub/b.txt", "b\n")
			r.write("top/deep/c.txt", "c\n")
			repo := openRepo(t, r.Root)
			s1 := snapshotMatchingGit(t, repo, r.Root, "refs/mulligan/manual/s1")

			r.remove("dir")
			r.symlink(tc.link(outside, r.Root), "dir")
			r.remove("top/deep")
			r.symlink(outside, "top/deep")
			s2 := snapshotMatchingGit(t, repo, r.Root, "refs/mulligan/manual/s2")
			before := worktreeFiles(t, outside)

			res, err := repo.Restore(context.Background(), s1.Tree, snapshot.RestoreOptions{UndoRef: "refs/mulligan/undo/u"})
			if d := diffFiles(before, worktreeFiles(t, outside)); len(d) > 0 {
				t.Errorf("Restore wrote outside the working tree through a symlink:\n  %s", strings.Join(d, "\n  "))
			}
			if err != nil {
				t.Fatalf("Restore: %v", err)
			}
			if res.UndoTree != s2.Tree {
				t.Errorf("UndoTree = %s, want %s", res.UndoTree, s2.Tree)
			}
			for _, p := range []string{"dir", "top/deep"} {
				if fi, err := os.Lstat(r.path(p)); err != nil || !fi.IsDir() {
					t.Errorf("%s after restore: %v, %v; want a real directory", p, fi, err)
				}
			}
			if got := assertTreeMatchesGit(t, repo, r.Root); got.Tree != s1.Tree {
				t.Errorf("after Restore the tree is %s, want %s", got.Tree, s1.Tree)
			}
			assertWorktreeLike(t, r.Root, gitCheckout(t, r.Root, s1.Tree.String()), nil)
		})
	}

	// The symlink appears after the undo snapshot read the directory: the
	// engine must notice (ConflictError), not write into the symlink's target.
	t.Run("swapped-after-undo-snapshot", func(t *testing.T) {
		r := newRepo(t)
		f := newRaceFilter(r)
		outside := resolvedTempDir(t)
		mustWrite(t, filepath.Join(outside, "a.txt"), []byte("OUTSIDE\n"), 0o644)
		r.write(".gitattributes", "z.txt filter=race\n")
		r.write("dir/a.txt", "v1\n")
		r.write("z.txt", "z1\n")
		repo := openRepo(t, r.Root)
		s1 := snapshotMatchingGit(t, repo, r.Root, "refs/mulligan/manual/s1")
		r.write("dir/a.txt", "v2\n")
		snapshotMatchingGit(t, repo, r.Root, "refs/mulligan/manual/s2")
		r.write("z.txt", "z2\n")
		f.arm(t, fmt.Sprintf("rm -rf '%s' && ln -s '%s' '%s'", r.path("dir"), outside, r.path("dir")))
		before := worktreeFiles(t, outside)

		_, err := repo.Restore(context.Background(), s1.Tree, snapshot.RestoreOptions{UndoRef: "refs/mulligan/undo/u"})
		if !f.fired() {
			t.Fatalf("setup: the undo snapshot did not run the clean filter on z.txt")
		}
		if d := diffFiles(before, worktreeFiles(t, outside)); len(d) > 0 {
			t.Errorf("Restore wrote outside the working tree through a symlink that appeared after the undo snapshot:\n  %s", strings.Join(d, "\n  "))
		}
		undo := gitTreeOf(t, r.Root, "refs/mulligan/undo/u")
		if kind, _ := tryGit(r.Root, nil, "cat-file", "-t", undo+":dir"); kind != "tree" {
			t.Fatalf("setup: the undo snapshot saw dir as %q, not the directory it was when walked (the filter ran too early)", kind)
		}
		var ce *snapshot.ConflictError
		if !errors.As(err, &ce) {
			t.Fatalf("Restore over a directory swapped for a symlink after the undo snapshot: error %v, want *ConflictError", err)
		}
		if ce.Path != "dir" && !strings.HasPrefix(ce.Path, "dir/") {
			t.Errorf("ConflictError.Path = %q, want dir or a path under it", ce.Path)
		}
		if target, err := os.Readlink(r.path("dir")); err != nil || target != outside {
			t.Errorf("the user's symlink dir was replaced: %q, %v", target, err)
		}
	})
}
