package snapshot

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// What an agent can change besides the working tree: HEAD, the refs, the stash and the index.
// GitState records them, DiffGitState names what changed between two records and PutBackGit
// puts the earlier record back by compare-and-swap. None of it runs git: refs, HEAD and the
// index are read and written with git's own file formats and lock-file protocol, so a git
// command running at the same time is excluded exactly as another git command would be.

// mulliganNamespaces are the ref namespaces that are mulligan's own, never the user's.
var mulliganNamespaces = []string{RefRoot, LocalRoot}

const stashRef = "refs/stash"

// maxStashLog bounds the stash reflog kept with a state; a longer one is compared by its hash
// and not put back.
const maxStashLog = 1 << 20

// GitState is HEAD, every ref outside refs/mulligan/ and refs/mulligan-local/ (refs/stash
// included), the stash's reflog (which holds the stash list) and the user's index.
type GitState struct {
	Head HeadState `json:"head"`
	// Refs maps a ref name to its object id, or to "ref: TARGET" for a symbolic ref. In a
	// Partial state (see Delta) only the refs that changed are listed, "" meaning deleted.
	Refs    map[string]string `json:"refs"`
	Partial bool              `json:"partial,omitempty"`
	// StashLog is logs/refs/stash ("" when absent); StashLogSum its sha256, set even when the
	// log is longer than maxStashLog and not kept.
	StashLog    string     `json:"stash_log,omitempty"`
	StashLogSum string     `json:"stash_log_sum,omitempty"`
	Index       IndexState `json:"index"`
	Ops         OpState    `json:"ops"` // the operations in progress (gitstate_ops.go)
}

// HeadState is HEAD: its symbolic target (empty when detached) and the commit it resolves to
// (empty when unborn).
type HeadState struct {
	Target string `json:"target,omitempty"`
	Commit string `json:"commit,omitempty"`
}

// raw is HEAD as its file says it: "ref: TARGET" or the detached commit.
func (h HeadState) raw() string {
	if h.Target != "" {
		return "ref: " + h.Target
	}
	return h.Commit
}

// IndexState identifies the user's index file.
type IndexState struct {
	// Sum is the sha256 of the file ("" when there is no index); a copy of a recorded index is
	// kept under <git-dir>/mulligan/user-index/<Sum>.
	Sum string `json:"sum,omitempty"`
	// Entries is the sha256 of its entries without their stat data: `git status` refreshing
	// stat data rewrites the file but changes nothing a user cares about.
	Entries string `json:"entries,omitempty"`
}

// ReadGitState records HEAD, the refs, the stash and the index. With keepIndex, a copy of the
// index is kept (content-addressed, so an unchanged index costs nothing the second time) for
// PutBackGit to put back.
func (r *Repo) ReadGitState(keepIndex bool) (*GitState, error) {
	st := &GitState{Refs: map[string]string{}}
	h, target, found, err := r.rawRef("HEAD")
	if err != nil {
		return nil, fmt.Errorf("read HEAD: %w", err)
	}
	if found {
		if target != "" {
			st.Head.Target = target
			if c, ok, err := r.resolveRef(target); err != nil {
				return nil, fmt.Errorf("read HEAD: %w", err)
			} else if ok {
				st.Head.Commit = c.String()
			}
		} else {
			st.Head.Commit = h.String()
		}
	}
	if err := r.userRefs(st.Refs); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(r.commonDir, "logs", stashRef))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read the stash log: %w", err)
	}
	if len(data) > 0 {
		st.StashLogSum = sha(data)
		if len(data) <= maxStashLog {
			st.StashLog = string(data)
		}
	}
	if st.Ops, err = r.readOpState(keepIndex); err != nil {
		return nil, err
	}
	idx, err := r.currentIndexState(keepIndex)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the index: %w", err)
	}
	st.Index = idx
	return st, nil
}

// currentIndexState is the user's index's state, with a copy of the index kept when keepIndex. An
// index whose stat data and checksum trailer are the ones last read is that file again: its
// state is not computed a second time (every attempt reads it twice).
func (r *Repo) currentIndexState(keepIndex bool) (IndexState, error) {
	stamp, err := stampUserIndex(r.indexFile)
	if err != nil {
		return IndexState{}, err
	}
	r.idxMu.Lock()
	cached, hit := r.idxState, stamp.present && !stamp.sum.IsZero() && stamp == r.idxStamp
	r.idxMu.Unlock()
	if !hit && stamp.present && !stamp.sum.IsZero() {
		cached, hit = r.loadIndexState(stamp)
	}
	if hit {
		if _, err := os.Stat(r.indexCopyPath(cached.Sum)); !keepIndex || err == nil {
			return cached, nil
		}
	}
	idx, err := r.readIndexState(keepIndex)
	if err != nil {
		return IndexState{}, err
	}
	r.idxMu.Lock()
	r.idxStamp, r.idxState = stamp, idx
	r.idxMu.Unlock()
	if again, err := stampUserIndex(r.indexFile); err == nil && again == stamp && !stamp.sum.IsZero() {
		r.saveIndexState(stamp, idx) // the file read is the one stamped
	}
	return idx, nil
}

// The user's index state is also kept on disk (<git-dir>/mulligan/index-state), with the index
// file's path, stat data and checksum trailer: the next process (the next run) finds the same
// index by its stamp and does not read and hash megabytes again. git rewrites the index through
// a new file (new inode, new ctime) and its trailer is a hash of the content, so a stamp that
// matches names the same content; an index without a trailer (index.skipHash) is never cached.

func (r *Repo) indexStatePath() string { return filepath.Join(r.gitDir, "mulligan", "index-state") }

const indexStateVersion = "mulligan index-state 1"

func formatIndexStamp(path string, s userIndexStamp) string {
	st := s.st
	return fmt.Sprintf("%s\n%s\n%d %d %d %d %d %d %d %d %d %d %s\n", indexStateVersion, strconv.Quote(path),
		st.ctimeS, st.ctimeNs, st.mtimeS, st.mtimeNs, st.dev, st.ino, st.uid, st.gid, st.size, st.mode, s.sum)
}

func (r *Repo) loadIndexState(stamp userIndexStamp) (IndexState, bool) {
	data, err := os.ReadFile(r.indexStatePath())
	if err != nil {
		return IndexState{}, false
	}
	head := formatIndexStamp(r.indexFile, stamp)
	rest, ok := strings.CutPrefix(string(data), head)
	if !ok {
		return IndexState{}, false
	}
	f := strings.Fields(rest)
	if len(f) != 2 || len(f[0]) != 64 || len(f[1]) != 64 {
		return IndexState{}, false
	}
	return IndexState{Sum: f[0], Entries: f[1]}, true
}

// saveIndexState records the state of the index with this stamp; a failure only costs the next
// process a read.
func (r *Repo) saveIndexState(stamp userIndexStamp, st IndexState) {
	if len(st.Sum) != 64 || len(st.Entries) != 64 {
		return
	}
	path := r.indexStatePath()
	content := formatIndexStamp(r.indexFile, stamp) + st.Sum + " " + st.Entries + "\n"
	if old, err := os.ReadFile(path); err == nil && string(old) == content {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(path), "index-state-*")
	if err != nil {
		return
	}
	_, werr := f.WriteString(content)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		os.Remove(f.Name())
	}
}

// readIndexState computes the state of the user's index as the file streams in (it is megabytes
// for a big tree, read once per run: neither a copy in the heap nor a mapping, which counts in the
// process's resident memory as much), with keepIndex writing the copy PutBackGit needs on the way.
func (r *Repo) readIndexState(keepIndex bool) (IndexState, error) {
	f, err := os.Open(r.indexFile)
	if err != nil {
		return IndexState{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return IndexState{}, err
	}
	var rd io.Reader = f
	var tmp *os.File
	if keepIndex {
		dir := filepath.Dir(r.indexCopyPath("x"))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return IndexState{}, fmt.Errorf("keep a copy of the index: %w", err)
		}
		if tmp, err = os.CreateTemp(dir, "tmp-*"); err != nil {
			return IndexState{}, fmt.Errorf("keep a copy of the index: %w", err)
		}
		defer func() {
			if tmp != nil {
				tmp.Close()
				os.Remove(tmp.Name())
			}
		}()
		rd = io.TeeReader(f, tmp)
	}
	st, split, err := hashIndex(rd, fi.Size())
	if err != nil {
		return IndexState{}, err
	}
	if split {
		data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<62))
		if err != nil {
			return IndexState{}, err
		}
		st = r.splitIndexState(st, data)
	}
	if tmp != nil {
		err := r.keepIndexCopy(st.Sum, tmp)
		tmp = nil
		if err != nil {
			return IndexState{}, err
		}
	}
	return st, nil
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// indexState is the state of the index whose content is data.
func (r *Repo) indexState(data []byte) IndexState {
	st, split, err := hashIndex(bytes.NewReader(data), int64(len(data)))
	if err == nil && split {
		st = r.splitIndexState(st, data)
	}
	return st
}

// hashIndex reads an index of size bytes from rd to its end: Sum is the hash of all of it, Entries
// the hash of its entries as they stream by (Sum when it cannot be decoded: such an index is
// compared byte for byte). A split index's entries are only known merged with its shared index
// (split, for splitIndexState).
func hashIndex(rd io.Reader, size int64) (st IndexState, split bool, err error) {
	sum := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(rd, sum), indexReadBuf)
	h := sha256.New()
	decoded := false
	if version, count, err := readIndexHeader(br, size); err == nil {
		if off, err := scanIndexEntries(br, version, count, size, indexEntryHasher(h)); err == nil {
			decoded = scanIndexExtensions(br, off, size, func(sig []byte, n int) error {
				split = split || string(sig) == "link"
				_, err := br.Discard(n)
				return err
			}) == nil
		}
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return IndexState{}, false, err
	}
	st.Sum = hex.EncodeToString(sum.Sum(nil))
	st.Entries = st.Sum
	if decoded && !split {
		st.Entries = hex.EncodeToString(h.Sum(nil))
	}
	return st, split, nil
}

// indexEntryHasher writes each entry to h in the format runs recorded: "%o %s %d %d %s\x00" of
// mode, hash, stage, flags and name, without fmt's allocations.
func indexEntryHasher(h hash.Hash) func(int, *userEntry, []byte) {
	var b []byte
	return func(_ int, e *userEntry, name []byte) {
		b = strconv.AppendUint(b[:0], uint64(e.mode), 8)
		b = append(b, ' ')
		b = hex.AppendEncode(b, e.hash[:])
		b = append(b, ' ')
		b = strconv.AppendUint(b, uint64(e.stage), 10)
		b = append(b, ' ')
		b = strconv.AppendUint(b, uint64(e.flags), 10)
		b = append(b, ' ')
		b = append(b, name...)
		b = append(b, 0)
		h.Write(b)
	}
}

// splitIndexState hashes the entries of a split index (data) merged with its shared index.
func (r *Repo) splitIndexState(st IndexState, data []byte) IndexState {
	st.Entries = st.Sum
	ui, err := decodeIndexFile(data, r.gitDir)
	if err != nil {
		return st // an index mulligan cannot decode is compared byte for byte
	}
	h := sha256.New()
	add := indexEntryHasher(h)
	for i := range ui.entries {
		add(i, &ui.entries[i], []byte(ui.entries[i].name))
	}
	st.Entries = hex.EncodeToString(h.Sum(nil))
	return st
}

func (r *Repo) indexCopyPath(sum string) string {
	return filepath.Join(r.gitDir, "mulligan", "user-index", sum)
}

// keepIndexCopy moves tmp, a complete copy of the index whose Sum is sum, to its place, or
// removes it when that copy is already kept.
func (r *Repo) keepIndexCopy(sum string, tmp *os.File) error {
	path := r.indexCopyPath(sum)
	err := tmp.Close()
	if _, serr := os.Stat(path); serr == nil {
		os.Remove(tmp.Name())
		// Kept again: gc, which removes copies no run refers to, leaves a fresh one alone.
		now := time.Now()
		_ = os.Chtimes(path, now, now)
		return nil
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("keep a copy of the index: %w", err)
	}
	return nil
}

// seenRef is a loose ref's value as last read, with the stat data of the file it was read from.
type seenRef struct {
	st    statData
	value string
}

// refTrustAfter is how old a ref file's change must be for its stat data to vouch for what was
// read: a rewrite within the same tick of the clock could keep every field (git renames a new
// file into place, so the inode alone changes, but an inode can be reused).
var refTrustAfter = 2 * time.Second

// looseRefValue is the loose ref at path, as the state records it ("ref: <target>" or the hash),
// read again only when its file's stat data changed since the last read: an attempt's git state
// is read before and after it, and a repository's loose refs can be hundreds of files (a read is
// four system calls, a stat one).
func (r *Repo) looseRefValue(path, name string) (string, bool) {
	var ust unix.Stat_t
	if unix.Stat(path, &ust) != nil {
		return "", false
	}
	st := statFromUnix(&ust)
	r.refMu.Lock()
	s, ok := r.refSeen[path]
	r.refMu.Unlock()
	if ok && s.st == st {
		return s.value, true
	}
	h, target, found, err := r.rawRef(name)
	if err != nil || !found {
		return "", false
	}
	v := h.String()
	if target != "" {
		v = "ref: " + target
	}
	if settled := time.Now().Add(-refTrustAfter).Unix(); int64(st.ctimeS) < settled && int64(st.mtimeS) < settled {
		r.refMu.Lock()
		if r.refSeen == nil {
			r.refSeen = map[string]seenRef{}
		}
		r.refSeen[path] = seenRef{st: st, value: v}
		r.refMu.Unlock()
	}
	return v, true
}

// userRefs lists every ref outside mulligan's namespaces: packed, then loose (which win),
// in the common directory and, for a linked worktree, its own per-worktree refs.
func (r *Repo) userRefs(out map[string]string) error {
	packed, err := r.packedRefs()
	if err != nil {
		return err
	}
	for n, h := range packed {
		if !mulliganRef(n) {
			out[n] = h.String()
		}
	}
	dirs := []string{r.commonDir}
	if r.gitDir != r.commonDir {
		dirs = append(dirs, r.gitDir)
	}
	for _, base := range dirs {
		err := filepath.WalkDir(filepath.Join(base, "refs"), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			rel, rerr := filepath.Rel(base, p)
			if rerr != nil {
				return rerr
			}
			name := filepath.ToSlash(rel)
			if d.IsDir() {
				if mulliganRef(name + "/") {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(name, ".lock") || (base == r.gitDir && base != r.commonDir && !perWorktreeRef(name)) {
				return nil
			}
			if v, ok := r.looseRefValue(p, name); ok {
				out[name] = v
			}
			return nil // a broken loose ref is not the attempt's to judge
		})
		if err != nil {
			return fmt.Errorf("list refs: %w", err)
		}
	}
	return nil
}

func mulliganRef(name string) bool {
	for _, ns := range mulliganNamespaces {
		if strings.HasPrefix(name, ns) {
			return true
		}
	}
	return false
}
