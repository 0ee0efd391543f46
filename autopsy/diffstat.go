package autopsy

import (
	"bytes"

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
	// changes are all the changed paths, for the checks that look past the first maxStatPaths.
	changes []snapshot.Change
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

func diffStat(repo *snapshot.Repo, pre, post snapshot.Hash) *DiffStat {
	if repo == nil {
		return nil
	}
	changes, err := repo.DiffTrees(pre, post)
	if err != nil {
		return nil
	}
	d := &DiffStat{Files: len(changes), Paths: []PathStat{}, changes: changes}
	for i, c := range changes {
		p := PathStat{Path: c.Path, Action: c.Action.String()}
		if i >= maxCountedPaths {
			d.Partial = true
			continue
		}
		from, fromBin := blobLines(repo, c.From)
		to, toBin := blobLines(repo, c.To)
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

// blobLines reads a regular file's blob as lines; binary is true for content that is not text or
// too large to read.
func blobLines(repo *snapshot.Repo, e snapshot.Entry) (lines []string, binary bool) {
	if e.Hash.IsZero() || !e.Mode.IsFile() {
		return nil, false
	}
	b, err := repo.ReadBlob(e.Hash, maxStatBlob)
	if err != nil || bytes.IndexByte(b, 0) >= 0 {
		return nil, true
	}
	return splitLines(b), false
}

// splitLines splits b as bufio.ScanLines does (a "\r\n" ends a line as "\n" does; a last line
// without one counts), in place: a Scanner's buffer is 64 KB of fresh memory per blob.
func splitLines(b []byte) []string {
	var lines []string
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		lines = append(lines, string(bytes.TrimSuffix(line, []byte{'\r'})))
	}
	return lines
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

// startHead is HEAD when the run started: the parent of its base snapshot's commit (a base
// taken on an unborn branch has none). It falls back to the current HEAD.
func (f *facts) startHead() snapshot.Hash {
	if f.repo == nil {
		return snapshot.ZeroHash
	}
	if f.run.BaseRef != "" {
		if c, err := f.repo.Ref(f.run.BaseRef); err == nil {
			if commit, err := f.repo.ReadCommit(c); err == nil {
				if len(commit.Parents) > 0 {
					return commit.Parents[0]
				}
				return snapshot.ZeroHash
			}
		}
	}
	h, err := f.repo.Head()
	if err != nil {
		return snapshot.ZeroHash
	}
	return h
}

// diffOf is what attempt a changed, read from the repository once per autopsy; nil when its
// trees are not known or cannot be read.
func (f *facts) diffOf(a storeAttempt) *DiffStat {
	if a.PreTree == "" || a.Tree == "" {
		return nil
	}
	k := key(a.TaskID, a.N)
	if d, ok := f.diffs[k]; ok {
		return d
	}
	d := diffStat(f.repo, snapshot.NewHash(a.PreTree), snapshot.NewHash(a.Tree))
	if f.diffs == nil {
		f.diffs = map[string]*DiffStat{}
	}
	f.diffs[k] = d
	return d
}
