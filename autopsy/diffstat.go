package autopsy

import (
	"bufio"
	"bytes"
	"io"
	"path/filepath"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/mulligan-dev/mulligan/snapshot"
)

// DiffStat is what one attempt changed, pre → post, like `git diff --stat`.
type DiffStat struct {
	Files   int        `json:"files"`
	Added   int        `json:"added"`
	Deleted int        `json:"deleted"`
	Paths   []PathStat `json:"paths"`
	// Partial: the change was too large to count every path's lines; Added and Deleted count
	// the first maxCountedPaths paths.
	Partial bool `json:"partial,omitempty"`
}

// PathStat is one changed path. Binary and large blobs count no lines.
type PathStat struct {
	Path    string `json:"path"`
	Action  string `json:"action"`
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
	Binary  bool   `json:"binary,omitempty"`
}

const (
	maxStatPaths = 20      // paths listed per attempt; Files counts them all
	maxStatBlob  = 1 << 20 // larger blobs are not read for line counts
	// maxCountedPaths bounds the blobs read per attempt: an attempt that rewrote a vendored
	// tree must not make the autopsy read all of it.
	maxCountedPaths = 200
)

// objects reads blobs and trees of the repository for line counts and path checks; it opens
// its own read-only object storage because the snapshot engine exposes trees, not blobs.
type objects struct{ st *filesystem.Storage }

func openObjects(repo *snapshot.Repo) *objects {
	if repo == nil {
		return nil
	}
	st := filesystem.NewStorageWithOptions(osfs.New(repo.CommonDir()), cache.NewObjectLRU(4*cache.MiByte),
		filesystem.Options{LargeObjectThreshold: 1 << 20, AlternatesFS: osfs.New("/")})
	return &objects{st: st}
}

func (o *objects) diffStat(repo *snapshot.Repo, pre, post plumbing.Hash) *DiffStat {
	if o == nil || repo == nil {
		return nil
	}
	changes, err := repo.DiffTrees(pre, post)
	if err != nil {
		return nil
	}
	d := &DiffStat{Files: len(changes), Paths: []PathStat{}}
	for i, c := range changes {
		p := PathStat{Path: c.Path, Action: c.Action.String()}
		if i >= maxCountedPaths {
			d.Partial = true
			continue
		}
		from, fromBin := o.lines(c.From)
		to, toBin := o.lines(c.To)
		p.Binary = fromBin || toBin
		if !p.Binary {
			p.Added, p.Deleted = lineDelta(from, to)
		}
		d.Added += p.Added
		d.Deleted += p.Deleted
		if i < maxStatPaths {
			d.Paths = append(d.Paths, p)
		}
	}
	return d
}

// lines reads a regular file's blob as lines; binary is true for content that is not text or
// too large to read.
func (o *objects) lines(e snapshot.Entry) (lines []string, binary bool) {
	if e.Hash.IsZero() || !e.Mode.IsFile() {
		return nil, false
	}
	obj, err := o.st.EncodedObject(plumbing.BlobObject, e.Hash)
	if err != nil || obj.Size() > maxStatBlob {
		return nil, true
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, true
	}
	defer rd.Close()
	b, err := io.ReadAll(rd)
	if err != nil || bytes.IndexByte(b, 0) >= 0 {
		return nil, true
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), maxStatBlob)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, false
}

// lineDelta counts added and deleted lines as a multiset difference: the same figures as a
// line diff for the usual edit, without its cost; moved lines count as unchanged.
func lineDelta(from, to []string) (added, deleted int) {
	count := make(map[string]int, len(from))
	for _, l := range from {
		count[l]++
	}
	for _, l := range to {
		if count[l] > 0 {
			count[l]--
		} else {
			added++
		}
	}
	for _, n := range count {
		deleted += n
	}
	return added, deleted
}

// hasPath reports whether tree holds path (a file or a directory).
func (o *objects) hasPath(tree plumbing.Hash, path string) (has, ok bool) {
	if o == nil || tree.IsZero() {
		return false, false
	}
	t, err := object.GetTree(o.st, tree)
	if err != nil {
		return false, false
	}
	_, err = t.FindEntry(filepath.ToSlash(filepath.Clean(path)))
	if err == nil {
		return true, true
	}
	if err == object.ErrEntryNotFound || err == object.ErrDirectoryNotFound {
		return false, true
	}
	return false, false
}

// startHead is HEAD when the run started: the parent of its base snapshot's commit (a base
// taken on an unborn branch has none). It falls back to the current HEAD.
func (f *facts) startHead() plumbing.Hash {
	if f.repo == nil {
		return plumbing.ZeroHash
	}
	if f.run.BaseRef != "" && f.objects != nil {
		if c, err := f.repo.Ref(f.run.BaseRef); err == nil {
			if commit, err := object.GetCommit(f.objects.st, c); err == nil {
				if len(commit.ParentHashes) > 0 {
					return commit.ParentHashes[0]
				}
				return plumbing.ZeroHash
			}
		}
	}
	h, err := f.repo.Head()
	if err != nil {
		return plumbing.ZeroHash
	}
	return h
}
