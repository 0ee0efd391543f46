package snapshot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// KeepIgnored right after a full walk of a watched tree takes the ignored files and nested
// repositories the walk met instead of scanning the tree again; what it keeps must be exactly
// what its own scan keeps: the same tree, files, sizes, files too large (the total limit cut at
// the same place) and nested repositories. Then, with something changed since the walk, it
// scans again (and still agrees).
func TestKeepIgnoredFromWalkMatchesScan(t *testing.T) {
	for _, ignoreCase := range []bool{false, true} {
		t.Run(fmt.Sprintf("ignorecase=%v", ignoreCase), func(t *testing.T) {
			dir := newGitRepo(t)
			if ignoreCase {
				runGit(t, dir, "config", "core.ignoreCase", "true")
			}
			writeFile(t, filepath.Join(dir, ".gitignore"), ".env\n*.log\n*.bin\nbuild/\n!keep.log\nforced.log\nTMP*\n")
			writeFile(t, filepath.Join(dir, "app.py"), "print(1)\n")
			writeFile(t, filepath.Join(dir, "forced.log"), "tracked although ignored\n")
			writeFile(t, filepath.Join(dir, "build/tracked.txt"), "tracked in an ignored directory\n")
			writeFile(t, filepath.Join(dir, "replaced"), "a tracked file, replaced below by a repository\n")
			writeFile(t, filepath.Join(dir, "sub/.gitignore"), "local.txt\n")
			writeFile(t, filepath.Join(dir, "sub/code.go"), "package sub\n")
			runGit(t, dir, "add", ".")
			runGit(t, dir, "add", "-f", "forced.log", "build/tracked.txt")
			runGit(t, dir, "commit", "-qm", "init")

			writeFile(t, filepath.Join(dir, ".env"), "SECRET=1\n")
			os.Chmod(filepath.Join(dir, ".env"), 0o600)
			writeFile(t, filepath.Join(dir, "keep.log"), "not ignored (negated)\n")
			writeFile(t, filepath.Join(dir, "build/out.log"), "inside an ignored directory: not kept\n")
			writeFile(t, filepath.Join(dir, "sub/local.txt"), "ignored by sub/.gitignore\n")
			writeFile(t, filepath.Join(dir, "sub/deep/x.log"), "x\n")
			writeFile(t, filepath.Join(dir, "Tmp-upper"), "matched only when case is ignored\n")
			if err := os.Symlink("app.py", filepath.Join(dir, "link.log")); err != nil {
				t.Fatal(err)
			}
			// Over the total: which files are kept depends on the order they are met ("a/x"
			// before "a-b"), so the two ways must meet them in the same order.
			chunk := strings.Repeat("z", 900<<10)
			for i := 0; i < 7; i++ {
				writeFile(t, filepath.Join(dir, fmt.Sprintf("a/%d.bin", i)), chunk+fmt.Sprint(i))
				writeFile(t, filepath.Join(dir, fmt.Sprintf("a-b/%d.bin", i)), chunk+fmt.Sprint(i))
				writeFile(t, filepath.Join(dir, fmt.Sprintf("a.c/%d.bin", i)), chunk+fmt.Sprint(i))
			}
			writeFile(t, filepath.Join(dir, "huge.bin"), strings.Repeat("h", KeepIgnoredFileMax+1))
			// Nested repositories: one with a commit, one unborn, one in an ignored directory, one
			// where a tracked file was.
			for _, nested := range []string{"vendor/x", "unborn", "build/inner", "replaced"} {
				p := filepath.Join(dir, nested)
				os.Remove(p)
				writeFile(t, filepath.Join(p, "README"), "nested\n")
				writeFile(t, filepath.Join(p, "secret.log"), "inside a nested repository: not kept\n")
				runGit(t, p, "init", "-q")
				if nested != "unborn" {
					runGit(t, p, "add", "README")
					runGit(t, p, "commit", "-qm", "nested")
				}
			}

			scanned := keepIgnoredT(t, openRepo(t, dir), "refs/mulligan-local/scan", false)
			if scanned.kept.Files == 0 || len(scanned.kept.TooLarge) < 2 || len(scanned.kept.Nested) != 3 {
				t.Fatalf("the scan kept %+v: the tree does not exercise what it should", scanned.kept)
			}

			r := openRepo(t, dir)
			if err := r.Watch(); err != nil {
				t.Skipf("cannot watch here: %v", err)
			}
			fromWalk := keepIgnoredT(t, r, "refs/mulligan-local/walk", true)
			if fromWalk.String() != scanned.String() {
				t.Errorf("from the walk:\n%s\nscanned:\n%s", fromWalk, scanned)
			}

			// An incremental walk notes nothing (it did not read every directory).
			writeTree(t, r)
			if r.ignSeen != nil {
				t.Fatal("an incremental walk noted the ignored files")
			}
			// Changed since the walk: the walk's list is stale, KeepIgnored scans.
			r = openRepo(t, dir)
			if err := r.Watch(); err != nil {
				t.Fatal(err)
			}
			writeTree(t, r)
			writeFile(t, filepath.Join(dir, "sub/new.log"), "new\n")
			if r.ignSeen == nil {
				t.Fatal("a full walk noted nothing for KeepIgnored")
			}
			after := keepIgnoredT(t, r, "refs/mulligan-local/after", false)
			want := keepIgnoredT(t, openRepo(t, dir), "refs/mulligan-local/after-scan", false)
			if after.String() != want.String() || !strings.Contains(after.tree, "sub/new.log") {
				t.Errorf("after a change:\n%s\nscanned:\n%s", after, want)
			}
		})
	}
}

type keptT struct {
	kept *KeptIgnored
	tree string
}

func (k keptT) String() string {
	return fmt.Sprintf("files %d bytes %d\ntoo large %v\nnested %v\n%s", k.kept.Files, k.kept.Bytes, k.kept.TooLarge, k.kept.Nested, k.tree)
}

// keepIgnoredT runs KeepIgnored (after a walk when fromWalk, checking that the walk's list is
// the one used) and lists what it kept.
func keepIgnoredT(t *testing.T, r *Repo, ref string, fromWalk bool) keptT {
	t.Helper()
	if fromWalk {
		writeTree(t, r)
		if r.ignSeen == nil || !r.watch.quiet() {
			t.Fatalf("after a full watched walk: noted %v, quiet %v", r.ignSeen != nil, r.watch.quiet())
		}
	}
	kept, err := r.KeepIgnored(context.Background(), ref, "kept\n")
	if err != nil {
		t.Fatal(err)
	}
	if r.ignSeen != nil {
		t.Error("KeepIgnored left the walk's list for another call")
	}
	out := keptT{kept: kept}
	if kept.Ref != "" {
		tree, perms, err := r.keptCommit(kept.Commit)
		if err != nil {
			t.Fatal(err)
		}
		out.tree = runGit(t, r.Root(), "ls-tree", "-r", "--long", tree.String()) + fmt.Sprintf("\nperms %v", perms)
	}
	return out
}
