package snapshot

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// What `mulligan gc` cleans besides the superproject's refs: the copies of the user's index kept
// with the attempts' git states, and the refs kept in submodules' own repositories.

// IndexCopy is a copy of the user's index kept by ReadGitState(keepIndex), named by its sum.
type IndexCopy struct {
	Sum  string
	Kept time.Time // when it was last kept (written, or found already there)
}

// IndexCopies lists the index copies kept for this worktree.
func (r *Repo) IndexCopies() ([]IndexCopy, error) {
	return keptCopies(filepath.Dir(r.indexCopyPath("x")), func(e fs.DirEntry) bool { return e.Type().IsRegular() })
}

// keptCopies lists the content-addressed copies in dir (entries named by a sha256 that kind
// accepts; anything else is a temporary of a writer, or not ours), sorted by sum.
func keptCopies(dir string, kind func(fs.DirEntry) bool) ([]IndexCopy, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []IndexCopy
	for _, e := range ents {
		if !kind(e) || len(e.Name()) != 64 {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, IndexCopy{Sum: e.Name(), Kept: fi.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Sum < out[j].Sum })
	return out, nil
}

// RemoveIndexCopy deletes the index copy named sum.
func (r *Repo) RemoveIndexCopy(sum string) error {
	if len(sum) != 64 || filepath.Base(sum) != sum {
		return errors.New("not an index copy: " + sum)
	}
	err := os.Remove(r.indexCopyPath(sum))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// ModuleRepos opens the repositories of the submodules kept under the superproject's modules/
// (whether or not a submodule is checked out now): gc prunes the refs mulligan wrote in them with
// the superproject's. The caller closes them.
func (r *Repo) ModuleRepos() map[string]*Repo {
	root := filepath.Join(r.commonDir, "modules")
	out := map[string]*Repo{}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || path == root {
			return nil
		}
		if !isGitDir(path) || commonDirOf(path) != path {
			return nil
		}
		if sub, err := openAt(path, path, path, false); err == nil {
			rel, _ := filepath.Rel(root, path)
			out[filepath.ToSlash(rel)] = sub
		}
		return filepath.SkipDir // a submodule's own modules/ is its business
	})
	return out
}
