package snapshot

import (
	"fmt"
	"github.com/mulligan-dev/mulligan/snapshot/internal/gittest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// The binary formats mulligan reads itself, each fuzzed and checked against what git reads from
// the same bytes: wherever git accepts the input, mulligan must read what git reads (it may refuse
// more than git, never read something else). The seed corpora run in `go test`; `go test -fuzz`
// explores further, one git process or two per input.

// canonMode is git's canon_mode: the mode a tree entry is read as.
func canonMode(m uint32) uint32 {
	switch m & 0o170000 {
	case 0o100000:
		if m&0o100 != 0 {
			return 0o100755
		}
		return 0o100644
	case 0o120000:
		return 0o120000
	case 0o040000:
		return 0o040000
	}
	return 0o160000
}

func FuzzTree(f *testing.F) {
	g := gittest.NewCommitted(f)
	tree := runGit(f, g.Dir, "rev-parse", "HEAD^{tree}")
	raw, err := g.Git(nil, nil, "cat-file", "tree", tree)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte{})
	f.Add(append([]byte("160000 sub\x00"), g.Commit[:]...))
	f.Add(append([]byte("100664 odd\x00"), g.Blob[:]...))
	f.Add(append([]byte("0100644 lead\x00"), g.Blob[:]...))
	f.Add(append([]byte("100644 \x00"), g.Blob[:]...))
	f.Add([]byte("100644 cut\x00abc"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ours, oerr := parseTree(data, plumbing.ZeroHash)
		id, err := g.Git(data, nil, "hash-object", "-t", "tree", "--literally", "-w", "--stdin")
		if err != nil {
			t.Fatal(err)
		}
		out, err := g.Git(nil, nil, "ls-tree", "-z", "--full-tree", strings.TrimSpace(string(id)))
		if err != nil {
			return // git refuses it
		}
		if oerr != nil {
			t.Fatalf("git reads the tree, mulligan refuses it: %v\n%s", oerr, out)
		}
		var theirs []string
		for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
			if rec == "" {
				continue
			}
			meta, name, _ := strings.Cut(rec, "\t")
			f := strings.Fields(meta)
			theirs = append(theirs, f[0]+" "+f[2]+" "+name)
		}
		var mine []string
		for _, e := range ours {
			mine = append(mine, fmt.Sprintf("%06o %s %s", canonMode(e.mode), e.hash, e.name))
		}
		if !slices.Equal(mine, theirs) {
			t.Fatalf("tree %q:\nmulligan %q\ngit      %q", data, mine, theirs)
		}
	})
}

func FuzzPackedRefs(f *testing.F) {
	g := gittest.NewCommitted(f)
	os.Remove(filepath.Join(g.GitDir, "refs", "heads", "main"))
	c := g.Commit.String()
	for _, seed := range []string{
		"# pack-refs with: peeled fully-peeled sorted \n" + c + " refs/heads/main\n",
		c + " refs/heads/main\n" + c + " refs/tags/v1\n^" + c + "\n",
		c + " refs/heads/no-newline",
		c + " refs/heads/cr\r\n",
		c + " refs/heads/bad..name\n" + c + " refs/heads/ok\n",
		c + "  refs/heads/two-spaces\n",
		c + " HEAD\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(g.GitDir, "packed-refs"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		ours := parsePackedRefs(data)
		out, err := g.Git(nil, nil, "for-each-ref", "--format=%(objectname) %(refname)")
		if err != nil {
			return
		}
		var theirs, mine []string
		// Compared: the refs under refs/ that point at the commit (git also lists names it
		// marks broken, with no object, and skips refs whose object is missing).
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.HasPrefix(l, g.Commit.String()+" refs/") {
				theirs = append(theirs, l)
			}
		}
		for name, h := range ours {
			if strings.HasPrefix(name, "refs/") && h == g.Commit {
				mine = append(mine, h.String()+" "+name)
			}
		}
		slices.Sort(mine)
		slices.Sort(theirs)
		if !slices.Equal(mine, theirs) {
			t.Fatalf("packed-refs %q:\nmulligan %q\ngit      %q", data, mine, theirs)
		}
	})
}

func FuzzIndex(f *testing.F) {
	g := gittest.NewCommitted(f)
	idx := filepath.Join(g.GitDir, "index")
	add := func(args ...string) {
		runGit(f, g.Dir, args...)
		data, err := os.ReadFile(idx)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	add("update-index", "--index-version", "2")
	add("update-index", "--index-version", "3", "--skip-worktree", "a.txt")
	add("update-index", "--index-version", "4")
	writeFile(f, filepath.Join(g.Dir, "new.txt"), "new\n")
	add("add", "-N", "new.txt")
	add("update-index", "--index-version", "2", "--untracked-cache")
	add("update-index", "--assume-unchanged", "dir/b.sh")
	add("-c", "index.threads=2", "-c", "index.recordOffsetTable=true", "-c", "index.recordEndOfIndexEntries=true", "update-index", "--index-version", "4", "--no-untracked-cache")
	add("update-index", "--split-index")
	add("update-index", "--no-split-index")
	add("sparse-checkout", "set", "--cone", "--sparse-index", "dir")
	add("sparse-checkout", "disable")
	tmp := filepath.Join(f.TempDir(), "index")
	f.Fuzz(func(t *testing.T, data []byte) {
		data = gittest.WithTrailer(data)
		ui, oerr := decodeIndexFile(data, g.GitDir) // a split index's shared index is there
		if oerr != nil && strings.Contains(oerr.Error(), "cannot fit") {
			return // (git would allocate for every entry the header claims)
		}
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := g.Git(nil, []string{"GIT_INDEX_FILE=" + tmp}, "ls-files", "-s", "-z")
		if err != nil {
			return
		}
		if oerr != nil {
			// git trusts an index whose checksum holds: entries or names that run past the end
			// of the file are read from beyond it, a name with a NUL inside is kept and used as
			// two different paths, and a first entry of version 4 that strips more of the
			// previous name than there is underflows (git 2.44 refuses it). mulligan refuses
			// those.
			for _, bound := range []string{"truncated", "unterminated", "NUL in the name", "bad name compression"} {
				if strings.Contains(oerr.Error(), bound) {
					return
				}
			}
			t.Fatalf("git reads the index, mulligan refuses it: %v", oerr)
		}
		var theirs, mine []string
		for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
			if rec != "" {
				theirs = append(theirs, rec)
			}
		}
		for _, e := range ui.entries {
			if e.mode == modeTree {
				return // a sparse index: git lists it expanded
			}
			mine = append(mine, fmt.Sprintf("%06o %s %d\t%s", e.mode, e.hash, e.stage, e.name))
		}
		if !slices.Equal(mine, theirs) {
			t.Fatalf("index:\nmulligan %q\ngit      %q", mine, theirs)
		}
	})
}
