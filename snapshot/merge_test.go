package snapshot

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// A user's edit of line 3 and an agent's of line 30 of one file merge; the same lines conflict.
func TestMergeTreesByHunks(t *testing.T) {
	dir := newGitRepo(t)
	r := openRepo(t, dir)
	set := treeSetter(t, dir, r)
	var lines []string
	for i := 1; i <= 40; i++ {
		lines = append(lines, fmt.Sprintf("line %d\n", i))
	}
	text := func(edit map[int]string) string {
		out := slices.Clone(lines)
		for i, s := range edit {
			out[i-1] = s + "\n"
		}
		return strings.Join(out, "")
	}
	base := set(map[string]string{"a.txt": text(nil)})
	ours := set(map[string]string{"a.txt": text(map[int]string{3: "user"})})
	theirs := set(map[string]string{"a.txt": text(map[int]string{30: "agent"})})
	m, err := r.MergeTrees(base, theirs, ours, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := set(map[string]string{"a.txt": text(map[int]string{3: "user", 30: "agent"})}); m.Tree != want || len(m.Conflicts) != 0 {
		t.Fatalf("merged %s %v, want %s", m.Tree, m.Conflicts, want)
	}
	theirs = set(map[string]string{"a.txt": text(map[int]string{3: "agent"})})
	m, err = r.MergeTrees(base, theirs, ours, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Tree != ours || len(m.Conflicts) != 1 || m.Conflicts[0].Marked {
		t.Fatalf("conflict: %s %v, want ours %s kept", m.Tree, m.Conflicts, ours)
	}
	m, err = r.MergeTrees(base, theirs, ours, MergeOptions{Markers: true})
	if err != nil {
		t.Fatal(err)
	}
	marked := text(map[int]string{3: "<<<<<<<\nuser\n=======\nagent\n>>>>>>>"})
	if want := set(map[string]string{"a.txt": marked}); m.Tree != want || !m.Conflicts[0].Marked {
		t.Fatalf("markers: %s %v, want %s", m.Tree, m.Conflicts, want)
	}
}

// 15,000 new files in one directory: each tree is written once (a graft per path rewrote the
// directory's tree 15,000 times).
func TestMergeTreesManyNewFiles(t *testing.T) {
	dir := newGitRepo(t)
	r := openRepo(t, dir)
	base := writeTree(t, r).Tree
	n := 15000
	if testing.Short() {
		n = 2000
	}
	var edits []treeEdit
	blob, err := r.objs.WriteBytes(plumbing.BlobObject, []byte("x\n"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		edits = append(edits, treeEdit{path: fmt.Sprintf("gen/f%05d.txt", i), entry: &treeEntry{mode: modeRegular, hash: blob}})
	}
	theirs, err := r.editTree(base, edits)
	if err != nil {
		t.Fatal(err)
	}
	before := countObjects(t, dir)
	m, err := r.MergeTrees(base, theirs, base, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Tree != theirs {
		t.Fatalf("merged %s, want %s", m.Tree, theirs)
	}
	if got := countObjects(t, dir) - before; got > 2 {
		t.Errorf("the merge wrote %d objects, want at most 2 (gen/ and the root)", got)
	}
}

// treeSetter makes the working tree of dir hold exactly files (a nil map: empty) and returns
// its tree. A value starting with "x:" is an executable file, "l:" a symlink.
func treeSetter(t *testing.T, dir string, r *Repo) func(map[string]string) plumbing.Hash {
	return func(files map[string]string) plumbing.Hash {
		t.Helper()
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.Name() != ".git" {
				os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
		for p, c := range files {
			full := filepath.Join(dir, p)
			switch {
			case strings.HasPrefix(c, "x:"):
				writeFile(t, full, c[2:])
				os.Chmod(full, 0o755)
			case strings.HasPrefix(c, "l:"):
				os.MkdirAll(filepath.Dir(full), 0o755)
				if err := os.Symlink(c[2:], full); err != nil {
					t.Fatal(err)
				}
			default:
				writeFile(t, full, c)
			}
		}
		return writeTree(t, r).Tree
	}
}

// TestMergeTreesAgainstGit merges random changes of one tree by a user and an agent with
// MergeTrees and with git (read-tree -m, then merge-file for each path both changed, as git's
// merge-one-file does): where both merge, the trees are equal; where git conflicts, so does
// MergeTrees, and a conflict keeps ours' version of the path.
func TestMergeTreesAgainstGit(t *testing.T) {
	dir := newGitRepo(t)
	r := openRepo(t, dir)
	set := treeSetter(t, dir, r)
	rnd := rand.New(rand.NewPCG(3, 4))
	n := 60
	if testing.Short() {
		n = 15
	}
	var clean, conflicted int
	for i := 0; i < n; i++ {
		base := randomTree(rnd)
		oursFiles, theirsFiles := changeTree(rnd, base), changeTree(rnd, base)
		b, o, th := set(base), set(oursFiles), set(theirsFiles)
		m, err := r.MergeTrees(b, th, o, MergeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want, gitConflicts := gitMergeTrees(t, dir, b, o, th)
		switch {
		case len(m.Conflicts) == 0 && len(gitConflicts) == 0:
			clean++
			if m.Tree.String() != want {
				t.Fatalf("case %d: merged %s, git %s\n%s", i, m.Tree, want, describeCase(base, oursFiles, theirsFiles))
			}
		case len(m.Conflicts) > 0 && len(gitConflicts) > 0:
			conflicted++
		default:
			t.Errorf("case %d: conflicts %v, git's %v\n%s", i, m.Conflicts, gitConflicts, describeCase(base, oursFiles, theirsFiles))
		}
		for _, c := range m.Conflicts {
			if got, want := lookupHash(t, r, m.Tree, c.Path), lookupHash(t, r, o, c.Path); got != want {
				t.Errorf("case %d: conflicting %s is %s in the result, ours has %s", i, c.Path, got, want)
			}
		}
	}
	t.Logf("%d clean merges equal to git's, %d conflicting on both", clean, conflicted)
}

func lookupHash(t *testing.T, r *Repo, tree plumbing.Hash, p string) string {
	e, err := r.lookupEntry(tree, strings.Split(p, "/"))
	if err != nil {
		t.Fatal(err)
	}
	if e == nil {
		return "absent"
	}
	return fmt.Sprintf("%o %s", e.mode, e.hash)
}

func describeCase(base, ours, theirs map[string]string) string {
	return fmt.Sprintf("base %q\nours %q\ntheirs %q", base, ours, theirs)
}

func randomTree(rnd *rand.Rand) map[string]string {
	files := map[string]string{}
	for k := 1 + rnd.IntN(6); k > 0; k-- {
		files[randomPath(rnd)] = randomLines(rnd, 2+rnd.IntN(12))
	}
	return files
}

func randomPath(rnd *rand.Rand) string {
	dirs := []string{"", "d/", "d/e/", "f/"}
	return dirs[rnd.IntN(len(dirs))] + fmt.Sprintf("p%d.txt", rnd.IntN(8))
}

func randomLines(rnd *rand.Rand, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "w%d\n", rnd.IntN(50))
	}
	return b.String()
}

// changeTree is base with a few random changes: lines edited, files added, deleted, made
// executable or binary.
func changeTree(rnd *rand.Rand, base map[string]string) map[string]string {
	out := map[string]string{}
	for p, c := range base {
		out[p] = c
	}
	paths := func() []string {
		var ps []string
		for p := range out {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		return ps
	}
	for k := 1 + rnd.IntN(3); k > 0; k-- {
		ps := paths()
		switch op := rnd.IntN(10); {
		case op < 5 && len(ps) > 0:
			p := ps[rnd.IntN(len(ps))]
			content := strings.TrimPrefix(out[p], "x:")
			ls := strings.SplitAfter(content, "\n")
			at := rnd.IntN(len(ls))
			ls[at] = fmt.Sprintf("w%d\n", rnd.IntN(50))
			exec := ""
			if strings.HasPrefix(out[p], "x:") {
				exec = "x:"
			}
			out[p] = exec + strings.Join(ls, "")
		case op < 7:
			out[randomPath(rnd)] = randomLines(rnd, 1+rnd.IntN(5))
		case op < 8 && len(ps) > 0:
			delete(out, ps[rnd.IntN(len(ps))])
		case op < 9 && len(ps) > 0:
			p := ps[rnd.IntN(len(ps))]
			if !strings.HasPrefix(out[p], "x:") {
				out[p] = "x:" + out[p]
			}
		case len(ps) > 0:
			out[ps[rnd.IntN(len(ps))]] = "bin\x00" + randomLines(rnd, 2)
		}
	}
	// A file and a directory of one name cannot both be: drop the file.
	for p := range out {
		for q := range out {
			if strings.HasPrefix(q, p+"/") {
				delete(out, p)
			}
		}
	}
	return out
}

// gitMergeTrees merges with git: read-tree -m into a temporary index, then each path left
// unmerged with three regular stages through merge-file. It returns the tree, or the paths
// that conflict.
func gitMergeTrees(t *testing.T, dir string, base, ours, theirs plumbing.Hash) (string, []string) {
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
	runGitEnv(t, dir, env, "read-tree", "-m", "-i", "--aggressive", base.String(), ours.String(), theirs.String())
	type stage struct{ mode, hash string }
	unmerged := map[string]map[int]stage{}
	for _, l := range strings.Split(runGitEnv(t, dir, env, "ls-files", "-u"), "\n") {
		if l == "" {
			continue
		}
		meta, p, _ := strings.Cut(l, "\t")
		f := strings.Fields(meta)
		if unmerged[p] == nil {
			unmerged[p] = map[int]stage{}
		}
		unmerged[p][int(f[2][0]-'0')] = stage{f[0], f[1]}
	}
	var conflicts []string
	for p, st := range unmerged {
		b, ok1 := st[1]
		o, ok2 := st[2]
		th, ok3 := st[3]
		if !ok1 || !ok2 || !ok3 || !strings.HasPrefix(b.mode, "100") || !strings.HasPrefix(o.mode, "100") || !strings.HasPrefix(th.mode, "100") {
			conflicts = append(conflicts, p)
			continue
		}
		mode := o.mode
		switch {
		case o.mode == th.mode || th.mode == b.mode:
		case o.mode == b.mode:
			mode = th.mode
		default:
			conflicts = append(conflicts, p)
			continue
		}
		tmp := t.TempDir()
		for name, h := range map[string]string{"b": b.hash, "o": o.hash, "t": th.hash} {
			out, err := exec.Command("git", "-C", dir, "cat-file", "blob", h).Output()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tmp, name), out, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if exec.Command("git", "merge-file", filepath.Join(tmp, "o"), filepath.Join(tmp, "b"), filepath.Join(tmp, "t")).Run() != nil {
			conflicts = append(conflicts, p)
			continue
		}
		h := runGit(t, dir, "hash-object", "-w", filepath.Join(tmp, "o"))
		info := exec.Command("git", "update-index", "--index-info")
		info.Dir, info.Env = dir, append(os.Environ(), env...)
		info.Stdin = strings.NewReader(fmt.Sprintf("0 %s\t%s\n%s %s 0\t%s\n", strings.Repeat("0", 40), p, mode, h, p))
		if out, err := info.CombinedOutput(); err != nil {
			t.Fatalf("update-index: %v\n%s", err, out)
		}
	}
	if len(conflicts) > 0 {
		slices.Sort(conflicts)
		return "", conflicts
	}
	return runGitEnv(t, dir, env, "write-tree"), nil
}
