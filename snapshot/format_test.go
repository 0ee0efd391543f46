package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// gitDirState lists every file of a git directory with its size and modification time.
func gitDirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	state := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		state[p] = fi.ModTime().String() + " " + fi.Mode().String()
		if !d.IsDir() {
			state[p] += fmt.Sprint(" ", fi.Size())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// gitAccepts reports whether git opens the repository (git status succeeds).
func gitAccepts(dir string) bool {
	cmd := exec.Command("git", "status", "--porcelain")
	cmd.Dir = dir
	return cmd.Run() == nil
}

// A repository's format is read as git reads it: what git refuses (a SHA-256 repository, a
// version above 1, a version-1 extension it does not know, refs in a reftable) is refused by
// name before anything is written; what git accepts (an unknown extension in version 0, the
// extensions mulligan implements) opens.
func TestRepositoryFormat(t *testing.T) {
	hermeticGit(t)
	for _, c := range []struct {
		name   string
		init   []string   // git init arguments
		config [][]string // git config settings made after init
		refuse string     // what the error names; "" when the repository opens
		git    string     // "accepts" or "refuses" when git must agree with mulligan; "" when
		// git's version decides (refStorage is known from git 2.45) or git reads what mulligan
		// does not implement (SHA-256)
	}{
		{name: "sha256", init: []string{"--object-format=sha256"}, refuse: "extensions.objectformat=sha256"},
		{name: "reftable", config: [][]string{{"core.repositoryformatversion", "1"}, {"extensions.refStorage", "reftable"}}, refuse: "extensions.refstorage=reftable"},
		{name: "unknown v1", config: [][]string{{"core.repositoryformatversion", "1"}, {"extensions.fancyThing", "true"}}, refuse: "extensions.fancything", git: "refuses"},
		{name: "version 2", config: [][]string{{"core.repositoryformatversion", "2"}}, refuse: "core.repositoryformatversion is 2", git: "refuses"},
		{name: "unknown v0", config: [][]string{{"extensions.fancyThing", "true"}}, git: "accepts"},
		{name: "sha1 v1", config: [][]string{{"core.repositoryformatversion", "1"}, {"extensions.objectFormat", "sha1"}, {"extensions.noop-v1", "x"}}, git: "accepts"},
		{name: "files refs v1", config: [][]string{{"core.repositoryformatversion", "1"}, {"extensions.refStorage", "files"}}},
		{name: "implemented", config: [][]string{{"core.repositoryformatversion", "1"}, {"extensions.preciousObjects", "true"}, {"extensions.worktreeConfig", "true"}, {"extensions.partialClone", "origin"}}, git: "accepts"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "repo")
			runGit(t, t.TempDir(), append([]string{"init", "-q"}, append(c.init, dir)...)...)
			writeFile(t, filepath.Join(dir, "a.txt"), "one\n")
			runGit(t, dir, "add", "a.txt")
			runGit(t, dir, "commit", "-qm", "first")
			for _, kv := range c.config {
				runGit(t, dir, "config", kv[0], kv[1])
			}
			if c.git != "" && gitAccepts(dir) != (c.git == "accepts") {
				t.Fatalf("git does not agree: want git %s the repository", c.git)
			}
			gitDir := filepath.Join(dir, ".git")
			before := gitDirState(t, gitDir)
			r, err := Open(dir)
			if c.refuse == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				defer r.Close()
				if _, err := r.WriteTree(t.Context()); err != nil {
					t.Fatalf("snapshot: %v", err)
				}
				return
			}
			if err == nil {
				r.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, ErrUnsupportedFormat) || !strings.Contains(strings.ToLower(err.Error()), c.refuse) {
				t.Fatalf("Open: %v; want ErrUnsupportedFormat naming %q", err, c.refuse)
			}
			after := gitDirState(t, gitDir)
			for p, s := range after {
				if before[p] != s {
					t.Errorf("%s written by a refused Open", p)
				}
			}
		})
	}
}

// In a partial clone, a blob that was never fetched is named as such, with the git command that
// fetches it; once that ran, the blob reads.
func TestPartialCloneNamesWhatWasNeverFetched(t *testing.T) {
	hermeticGit(t)
	src := filepath.Join(t.TempDir(), "src")
	runGit(t, t.TempDir(), "init", "-q", src)
	writeFile(t, filepath.Join(src, "a.txt"), "never fetched\n")
	runGit(t, src, "add", "a.txt")
	runGit(t, src, "commit", "-qm", "first")
	runGit(t, src, "config", "uploadpack.allowFilter", "true")
	runGit(t, src, "config", "uploadpack.allowAnySHA1InWant", "true")
	dst := filepath.Join(t.TempDir(), "dst")
	runGit(t, t.TempDir(), "clone", "-q", "--filter=blob:none", "--no-checkout", "file://"+src, dst)
	blob := plumbing.NewHash(runGit(t, src, "rev-parse", "HEAD:a.txt"))

	r := openRepo(t, dst)
	_, err := r.encodedObject(plumbing.BlobObject, blob)
	var nf *NotFetchedError
	if !errors.As(err, &nf) || nf.ID != blob || nf.Remote != "origin" || !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Fatalf("reading a blob never fetched: %v; want a NotFetchedError naming %s and origin", err, blob)
	}
	args := strings.Fields(nf.FetchCommand())
	if args[0] != "git" {
		t.Fatalf("fetch command %q", nf.FetchCommand())
	}
	runGit(t, dst, args[1:]...)
	obj, err := r.encodedObject(plumbing.BlobObject, blob)
	if err != nil || obj.Size() != int64(len("never fetched\n")) {
		t.Fatalf("after %s: %v", nf.FetchCommand(), err)
	}
}
