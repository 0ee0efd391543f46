package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The git operations in progress are part of the git state an attempt may not take (SPEC
// §2.1): a merge, cherry-pick, revert, rebase, am, sequence of picks or bisect keeps its state
// in files of the (per-worktree) git directory. An agent that commits a merge in progress, or
// runs `rebase --continue`, and fails gets them put back with HEAD, the refs and the index.

// opFiles, opDirs and opPrefix name the files of the operations in progress.
var (
	opFiles  = []string{"MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "MERGE_RR", "AUTO_MERGE", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD", "SQUASH_MSG"}
	opDirs   = []string{"rebase-merge", "rebase-apply", "sequencer"}
	opPrefix = "BISECT_"
)

// OpState identifies the git operations in progress.
type OpState struct {
	// Sum is the sha256 of every file of the operations in progress, with its path and mode (""
	// when none is); a copy of a recorded state is kept under <git-dir>/mulligan/git-ops/<Sum>.
	Sum string `json:"sum,omitempty"`
	// Ops names them: merge, cherry-pick, revert, rebase, am, sequencer, bisect.
	Ops []string `json:"ops,omitempty"`
}

type opFile struct {
	rel  string // slash-separated, relative to the git directory
	mode fs.FileMode
	data []byte
}

// readOps reads the files of the operations in progress, sorted by path.
func (r *Repo) readOps() ([]opFile, error) {
	var out []opFile
	add := func(rel string) error {
		p := filepath.Join(r.gitDir, filepath.FromSlash(rel))
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.IsDir() {
			files, err := readOpTree(r.gitDir, p)
			out = append(out, files...)
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, opFile{rel: rel, mode: fi.Mode().Perm(), data: data})
		return nil
	}
	names := slices.Clone(opFiles)
	names = append(names, opDirs...)
	ents, err := os.ReadDir(r.gitDir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), opPrefix) {
			names = append(names, e.Name())
		}
	}
	for _, n := range names {
		if err := add(n); err != nil {
			return nil, fmt.Errorf("read %s: %w", n, err)
		}
	}
	slices.SortFunc(out, func(a, b opFile) int { return strings.Compare(a.rel, b.rel) })
	return out, nil
}

// opState is the state of files, keeping a copy of them when keep is set.
func (r *Repo) opState(files []opFile, keep bool) (OpState, error) {
	if len(files) == 0 {
		return OpState{}, nil
	}
	h := sha256.New()
	seen := map[string]bool{}
	var st OpState
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%o\x00%d\x00", f.rel, f.mode, len(f.data))
		h.Write(f.data)
		if op := opName(f.rel); op != "" && !seen[op] {
			seen[op] = true
			st.Ops = append(st.Ops, op)
		}
	}
	st.Sum = hex.EncodeToString(h.Sum(nil))
	if !keep {
		return st, nil
	}
	dir := r.opsCopyPath(st.Sum)
	if _, err := os.Stat(dir); err == nil {
		now := time.Now()
		os.Chtimes(dir, now, now) // kept again now: gc leaves it alone for a while
		return st, nil            // kept already: content-addressed
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return st, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".tmp-")
	if err != nil {
		return st, err
	}
	if err := writeOps(tmp, files); err != nil {
		os.RemoveAll(tmp)
		return st, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if _, serr := os.Stat(dir); serr != nil { // not another process keeping the same copy
			return st, err
		}
	}
	return st, nil
}

// opName names the operation a file of the git directory says is in progress; "" for the files
// several operations write (MERGE_MSG, AUTO_MERGE…) and for REBASE_HEAD, which git leaves behind
// when a rebase ends.
func opName(rel string) string {
	first, _, _ := strings.Cut(rel, "/")
	switch {
	case first == "MERGE_HEAD":
		return "merge"
	case first == "CHERRY_PICK_HEAD":
		return "cherry-pick"
	case first == "REVERT_HEAD":
		return "revert"
	case first == "rebase-merge":
		return "rebase"
	case first == "rebase-apply":
		return "am or rebase"
	case first == "sequencer":
		return "sequencer"
	case strings.HasPrefix(first, opPrefix):
		return "bisect"
	}
	return ""
}

// readOpTree reads the regular files under dir, named relative to base.
func readOpTree(base, dir string) ([]opFile, error) {
	var out []opFile
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, path)
		out = append(out, opFile{rel: filepath.ToSlash(rel), mode: fi.Mode().Perm(), data: data})
		return nil
	})
	return out, err
}

func writeOps(dir string, files []opFile) error {
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, f.mode|0o200); err != nil {
			return err
		}
	}
	return nil
}

func (r *Repo) opsCopyPath(sum string) string {
	return filepath.Join(r.gitDir, "mulligan", "git-ops", sum)
}

// casOps puts the operations in progress of pre back, if the git directory still has those of
// post.
func (r *Repo) casOps(pre, post OpState) error {
	files, err := r.readOps()
	if err != nil {
		return err
	}
	now, err := r.opState(files, false)
	if err != nil {
		return err
	}
	switch now.Sum {
	case pre.Sum:
		return nil // already back
	case post.Sum:
	default:
		return errors.New("the git operations in progress changed again since the attempt ended")
	}
	var back []opFile
	if pre.Sum != "" {
		dir := r.opsCopyPath(pre.Sum)
		if back, err = readOpTree(dir, dir); err != nil {
			return fmt.Errorf("the copy of the git operations in progress is gone: %w", err)
		}
	}
	for _, f := range files {
		first, _, _ := strings.Cut(f.rel, "/")
		if err := os.RemoveAll(filepath.Join(r.gitDir, first)); err != nil {
			return err
		}
	}
	return writeOps(r.gitDir, back)
}

// readOpState records the operations in progress, keeping a copy of their files when keep is set.
func (r *Repo) readOpState(keep bool) (OpState, error) {
	files, err := r.readOps()
	if err != nil {
		return OpState{}, fmt.Errorf("read the git operations in progress: %w", err)
	}
	return r.opState(files, keep)
}

// opsChange says how the operations in progress changed from pre to post.
func opsChange(pre, post OpState) string {
	switch {
	case len(pre.Ops) == 0 && len(post.Ops) == 0:
		return "the state of git operations changed"
	case len(post.Ops) == 0:
		return "the " + strings.Join(pre.Ops, " and ") + " in progress ended"
	case len(pre.Ops) == 0:
		return "started a " + strings.Join(post.Ops, " and ")
	}
	return "the " + strings.Join(pre.Ops, " and ") + " in progress changed"
}

// OpsCopies lists the copies of git operations in progress kept for this worktree.
func (r *Repo) OpsCopies() ([]IndexCopy, error) {
	return keptCopies(filepath.Dir(r.opsCopyPath("x")), fs.DirEntry.IsDir)
}

// RemoveOpsCopy deletes the copy of git operations in progress named sum.
func (r *Repo) RemoveOpsCopy(sum string) error {
	if len(sum) != 64 || filepath.Base(sum) != sum {
		return errors.New("not a copy of git operations: " + sum)
	}
	return os.RemoveAll(r.opsCopyPath(sum))
}
