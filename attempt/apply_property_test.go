package attempt

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mulligan-dev/mulligan/snapshot"
)

// TestApplyProperty applies random agent changes onto random user edits of the same working
// tree: an apply either writes exactly the three-way merge (snapshot.MergeTrees, itself checked
// against git in package snapshot) or refuses, and a refused apply leaves every file of the
// user's tree byte for byte, mode for mode, as it was.
func TestApplyProperty(t *testing.T) {
	n := 20
	if testing.Short() {
		n = 6
	}
	rnd := rand.New(rand.NewPCG(7, 8))
	var applied, refused int
	for i := 0; i < n; i++ {
		f := newApplyFixture(t)
		base := map[string]string{}
		for k := 1 + rnd.IntN(5); k > 0; k-- {
			base[propPath(rnd)] = propLines(rnd, 2+rnd.IntN(10))
		}
		setFiles(t, f.dir, base)
		a := f.attempt(1, func() { setFiles(t, f.dir, propChange(rnd, base)) })
		setFiles(t, f.dir, propChange(rnd, base))
		user := f.tree()
		before := diskState(t, f.dir)
		want, err := f.repo.MergeTrees(snapshot.NewHash(a.PreTree), snapshot.NewHash(a.Tree), user, snapshot.MergeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.apply(a, ApplyOptions{})
		var no *ApplyConflictError
		switch {
		case err == nil:
			applied++
			if len(want.Conflicts) > 0 {
				t.Fatalf("case %d: applied over conflicts %v", i, want.Conflicts)
			}
			if got := f.tree(); got != want.Tree {
				t.Fatalf("case %d: the working tree is %s after the apply, the merge is %s", i, got, want.Tree)
			}
		case errors.As(err, &no):
			refused++
			if after := diskState(t, f.dir); !slices.Equal(before, after) {
				t.Fatalf("case %d: a refused apply changed the tree:\nbefore %v\nafter  %v", i, before, after)
			}
		default:
			t.Fatalf("case %d: %v", i, err)
		}
	}
	t.Logf("%d applied, %d refused", applied, refused)
}

func propPath(rnd *rand.Rand) string {
	return []string{"", "d/", "d/e/"}[rnd.IntN(3)] + fmt.Sprintf("p%d.txt", rnd.IntN(6))
}

func propLines(rnd *rand.Rand, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "w%d\n", rnd.IntN(40))
	}
	return b.String()
}

// propChange is base with a few random changes ("x:" marks an executable file).
func propChange(rnd *rand.Rand, base map[string]string) map[string]string {
	out := map[string]string{}
	for p, c := range base {
		out[p] = c
	}
	for k := 1 + rnd.IntN(3); k > 0; k-- {
		var ps []string
		for p := range out {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		switch op := rnd.IntN(8); {
		case op < 4 && len(ps) > 0:
			p := ps[rnd.IntN(len(ps))]
			ls := strings.SplitAfter(out[p], "\n")
			ls[rnd.IntN(len(ls))] = fmt.Sprintf("w%d\n", rnd.IntN(40))
			out[p] = strings.Join(ls, "")
		case op < 6:
			out[propPath(rnd)] = propLines(rnd, 1+rnd.IntN(4))
		case op < 7 && len(ps) > 0:
			delete(out, ps[rnd.IntN(len(ps))])
		case len(ps) > 0:
			p := ps[rnd.IntN(len(ps))]
			if !strings.HasPrefix(out[p], "x:") {
				out[p] = "x:" + out[p]
			}
		}
	}
	return out
}

// setFiles makes dir's files (outside .git) exactly files.
func setFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != ".git" {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if s, ok := strings.CutPrefix(c, "x:"); ok {
			c, mode = s, 0o755
		}
		if err := os.WriteFile(full, []byte(c), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// diskState lists every file of dir outside .git with its mode and content hash.
func diskState(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		entry := fmt.Sprintf("%s %v", rel, fi.Mode())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			entry += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		out = append(out, entry)
		return nil
	})
	return out
}
