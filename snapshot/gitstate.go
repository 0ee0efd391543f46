package snapshot

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
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
	r.idxMu.Lock()
	warming := r.idxWarm
	r.idxMu.Unlock()
	if warming != nil {
		<-warming // WarmIndexState is reading it: its result is this call's if the index stays
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

// WarmIndexState reads the user's index's state, with its copy kept (what ReadGitState(true)
// reads), in the background: for a ReadGitState to come that would otherwise read, copy and hash
// the whole index on its own path (after git rewrote it: some 3 ms at 10k files). A run starts it
// once its base is taken, when its second core is idle until the agent. ReadGitState waits for
// it rather than do the work twice, and takes its result only under the index's stamp as it is
// then (currentIndexState).
func (r *Repo) WarmIndexState() {
	r.idxMu.Lock()
	defer r.idxMu.Unlock()
	if r.idxWarm != nil {
		return
	}
	done := make(chan struct{})
	r.idxWarm = done
	go func() {
		r.currentIndexState(true) // an error is ReadGitState's to meet and report
		r.idxMu.Lock()
		r.idxWarm = nil
		r.idxMu.Unlock()
		close(done)
	}()
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

// Delta returns s reduced to what differs from pre (Partial): the refs that changed, and the
// stash log only when it changed. It is what a caller keeps of an attempt's end state.
func (s *GitState) Delta(pre *GitState) *GitState {
	d := *s
	d.Partial = true
	d.Refs = map[string]string{}
	for _, n := range changedRefs(pre, s) {
		d.Refs[n] = s.Refs[n]
	}
	if d.StashLogSum == pre.StashLogSum {
		d.StashLog = ""
	}
	return &d
}

// changedRefs lists the refs whose value differs between pre (complete) and post (complete or
// Partial), sorted.
func changedRefs(pre, post *GitState) []string {
	var names []string
	if post.Partial {
		for n, v := range post.Refs {
			if pre.Refs[n] != v {
				names = append(names, n)
			}
		}
	} else {
		for n, v := range post.Refs {
			if pre.Refs[n] != v {
				names = append(names, n)
			}
		}
		for n := range pre.Refs {
			if _, ok := post.Refs[n]; !ok {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
}

// GitChange is one thing an attempt changed outside the working tree. Its JSON is one of
// {"ref": NAME, "from": V, "to": V} (HEAD's from/to are its symbolic target or commit; a
// created ref has from null, a deleted one to null), {"index": "changed"} and
// {"stash": "pushed"|"dropped"|"changed", "from": V, "to": V}.
type GitChange struct {
	Ref   string // a ref, "HEAD" included
	Index bool
	Stash string
	From  string // "" absent
	To    string
}

func (c GitChange) String() string {
	switch {
	case c.Index:
		return "the index changed"
	case c.Stash != "":
		return "stash " + c.Stash
	case c.From == "":
		return c.Ref + " created at " + short(c.To)
	case c.To == "":
		return c.Ref + " deleted (was " + short(c.From) + ")"
	}
	return c.Ref + " " + short(c.From) + " → " + short(c.To)
}

// short abbreviates an object id as git does; a ref name stays whole.
func short(v string) string {
	if _, ok := parseHash(v); ok {
		return v[:7]
	}
	return v
}

func nullStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// MarshalJSON writes the change in the shape of `show -o json`'s git_changes.
func (c GitChange) MarshalJSON() ([]byte, error) {
	switch {
	case c.Index:
		return []byte(`{"index":"changed"}`), nil
	case c.Stash != "":
		return json.Marshal(struct {
			Stash string  `json:"stash"`
			From  *string `json:"from"`
			To    *string `json:"to"`
		}{c.Stash, nullStr(c.From), nullStr(c.To)})
	}
	return json.Marshal(struct {
		Ref  string  `json:"ref"`
		From *string `json:"from"`
		To   *string `json:"to"`
	}{c.Ref, nullStr(c.From), nullStr(c.To)})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (c *GitChange) UnmarshalJSON(b []byte) error {
	var j struct {
		Ref   string  `json:"ref"`
		Index string  `json:"index"`
		Stash string  `json:"stash"`
		From  *string `json:"from"`
		To    *string `json:"to"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*c = GitChange{Ref: j.Ref, Index: j.Index != "", Stash: j.Stash}
	if j.From != nil {
		c.From = *j.From
	}
	if j.To != nil {
		c.To = *j.To
	}
	return nil
}

// DiffGitState lists what changed from pre to post (post may be Partial): HEAD first, then the
// refs by name, the stash, the index.
func DiffGitState(pre, post *GitState) []GitChange {
	var out []GitChange
	if pre.Head.Target != post.Head.Target || (pre.Head.Target == "" && pre.Head.Commit != post.Head.Commit) {
		out = append(out, GitChange{Ref: "HEAD", From: headValue(pre.Head), To: headValue(post.Head)})
	}
	for _, n := range changedRefs(pre, post) {
		if n == stashRef {
			continue
		}
		out = append(out, GitChange{Ref: n, From: pre.Refs[n], To: post.Refs[n]})
	}
	if to := post.ref(pre, stashRef); pre.Refs[stashRef] != to || pre.StashLogSum != post.StashLogSum {
		c := GitChange{Stash: "changed", From: pre.Refs[stashRef], To: to}
		pn, qn := logLines(pre), logLines(post)
		switch {
		case pn >= 0 && qn > pn:
			c.Stash = "pushed"
		case qn >= 0 && pn > qn:
			c.Stash = "dropped"
		}
		out = append(out, c)
	}
	if pre.Index.Entries != post.Index.Entries {
		out = append(out, GitChange{Index: true, From: pre.Index.Sum, To: post.Index.Sum})
	}
	return out
}

// ref is the value of ref name in s, read from pre when s is Partial and does not list it.
func (s *GitState) ref(pre *GitState, name string) string {
	if v, ok := s.Refs[name]; ok || !s.Partial {
		return v
	}
	return pre.Refs[name]
}

// headValue is HEAD as a change shows it: its symbolic target, or the detached commit.
func headValue(h HeadState) string {
	if h.Target != "" {
		return h.Target
	}
	return h.Commit
}

// logLines counts the entries of a state's stash log, -1 when unknown (too long to keep).
func logLines(s *GitState) int {
	if s.StashLogSum != "" && s.StashLog == "" {
		return -1
	}
	return strings.Count(s.StashLog, "\n")
}

// GitSkip is a change PutBackGit left as it found it, and why.
type GitSkip struct {
	Change GitChange
	Reason string
}

// GitPutBack is what PutBackGit did.
type GitPutBack struct {
	Restored []GitChange
	Skipped  []GitSkip
}

// PutBackGit puts back what changed from pre to post, each thing by compare-and-swap: a ref,
// HEAD, the stash or the index is set to its pre value only while it still holds its post value;
// anything that changed again since post (someone else's work) is left alone and reported in
// Skipped. message goes into the reflogs git keeps for the refs it moves.
func (r *Repo) PutBackGit(pre, post *GitState, message string) (*GitPutBack, error) {
	res := &GitPutBack{}
	skip := func(c GitChange, format string, args ...any) {
		res.Skipped = append(res.Skipped, GitSkip{Change: c, Reason: fmt.Sprintf(format, args...)})
	}
	for _, c := range DiffGitState(pre, post) {
		switch {
		case c.Ref == "HEAD":
			err := r.casHead(post.Head, pre.Head, message)
			if err != nil {
				skip(c, "%v", err)
				continue
			}
		case c.Index:
			if err := r.casIndex(pre.Index, post.Index); err != nil {
				skip(c, "%v", err)
				continue
			}
		case c.Stash != "":
			if err := r.casStash(pre, post, message); err != nil {
				skip(c, "%v", err)
				continue
			}
		default:
			if err := r.casRef(c.Ref, c.To, c.From, message); err != nil {
				skip(c, "%v", err)
				continue
			}
		}
		res.Restored = append(res.Restored, c)
	}
	return res, nil
}

// errMovedOn says a thing holds neither the value the attempt left nor the one it had before.
func movedOn(what, now string) error {
	if now == "" {
		return fmt.Errorf("%s was deleted since the attempt ended", what)
	}
	return fmt.Errorf("%s changed again since the attempt ended (now %s)", what, short(now))
}

// casRef sets ref name from cur to want ("" meaning absent), if it is still at cur.
func (r *Repo) casRef(name, cur, want, message string) error {
	if strings.HasPrefix(cur, "ref: ") || strings.HasPrefix(want, "ref: ") {
		return fmt.Errorf("%s is a symbolic ref: not changed", name)
	}
	h, target, found, err := r.rawRef(name)
	if err != nil {
		return err
	}
	now := ""
	if found {
		now = h.String()
		if target != "" {
			now = "ref: " + target
		}
	}
	if now == want {
		return nil // already back (someone put it back by hand)
	}
	if now != cur {
		return movedOn(name, now)
	}
	if want == "" {
		err = r.DeleteRef(name, plumbing.NewHash(cur))
	} else {
		var old plumbing.Hash
		if cur != "" {
			old = plumbing.NewHash(cur)
		}
		err = r.UpdateRef(name, plumbing.NewHash(want), old)
	}
	if err != nil {
		return err
	}
	r.appendReflog(name, cur, want, message)
	return nil
}

// casHead sets HEAD from cur to want, if HEAD still says cur.
func (r *Repo) casHead(cur, want HeadState, message string) error {
	path := filepath.Join(r.gitDir, "HEAD")
	lock, err := acquireLock(path)
	if err != nil {
		return err
	}
	h, target, _, err := r.rawRef("HEAD")
	if err != nil {
		lock.rollback()
		return err
	}
	now := HeadState{Target: target}
	if target == "" {
		now.Commit = h.String()
	}
	wantRaw := want.raw()
	if now.raw() == wantRaw {
		lock.rollback()
		return nil
	}
	if now.raw() != cur.raw() {
		lock.rollback()
		return movedOn("HEAD", headValue(now))
	}
	if wantRaw == "" {
		lock.rollback()
		return errors.New("HEAD had no value to put back")
	}
	if err := lock.commit([]byte(wantRaw + "\n")); err != nil {
		return err
	}
	if cur.Commit != want.Commit {
		r.appendReflog("HEAD", cur.Commit, want.Commit, message)
	}
	return nil
}

// casIndex puts the pre index back, if the index still has the entries post recorded.
func (r *Repo) casIndex(pre, post IndexState) error {
	var data []byte
	if pre.Sum != "" {
		var err error
		data, err = os.ReadFile(r.indexCopyPath(pre.Sum))
		if err != nil {
			return fmt.Errorf("the copy of the index is gone: %w", err)
		}
	}
	lock, err := acquireLock(r.indexFile)
	if err != nil {
		return err
	}
	cur, err := os.ReadFile(r.indexFile)
	var now IndexState
	switch {
	case err == nil:
		now = r.indexState(cur)
	case errors.Is(err, fs.ErrNotExist):
	default:
		lock.rollback()
		return err
	}
	if now.Entries == pre.Entries {
		lock.rollback()
		return nil
	}
	if now.Entries != post.Entries {
		lock.rollback()
		if now.Sum == "" {
			return errors.New("the index was deleted since the attempt ended")
		}
		return errors.New("the index changed again since the attempt ended")
	}
	if pre.Sum == "" {
		lock.rollback()
		if err := os.Remove(r.indexFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return lock.commit(data)
}

// casStash puts refs/stash and its reflog (the stash list) back, if both are as post left them.
func (r *Repo) casStash(pre, post *GitState, message string) error {
	logPath := filepath.Join(r.commonDir, "logs", stashRef)
	if pre.StashLogSum != post.StashLogSum && pre.StashLog == "" && pre.StashLogSum != "" {
		return errors.New("the stash list was too long to keep: not put back")
	}
	data, err := os.ReadFile(logPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	curSum := ""
	if len(data) > 0 {
		curSum = sha(data)
	}
	if curSum != post.StashLogSum && curSum != pre.StashLogSum {
		return errors.New("the stash list changed again since the attempt ended")
	}
	if err := r.casRef(stashRef, post.ref(pre, stashRef), pre.Refs[stashRef], ""); err != nil {
		return err
	}
	if curSum == pre.StashLogSum {
		return nil
	}
	if pre.StashLog == "" {
		if err := os.Remove(logPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	lock, err := acquireLock(logPath)
	if err != nil {
		return err
	}
	return lock.commit([]byte(pre.StashLog))
}

// appendReflog adds a line to the reflog git keeps for name, when it keeps one (core.logAllRefUpdates
// created the file), so `git reflog` shows the move with its reason. A failure is not an error:
// the ref itself is what matters.
func (r *Repo) appendReflog(name, from, to, message string) {
	if message == "" {
		return
	}
	path := filepath.Join(r.commonDir, "logs", filepath.FromSlash(name))
	if perWorktreeRef(name) {
		path = filepath.Join(r.gitDir, "logs", filepath.FromSlash(name))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	defer f.Close()
	z := plumbing.ZeroHash.String()
	if from == "" {
		from = z
	}
	if to == "" {
		to = z
	}
	t := time.Now()
	_, off := t.Zone()
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	line := fmt.Sprintf("%s %s mulligan <mulligan@localhost> %d %c%02d%02d\t%s\n", from, to, t.Unix(), sign, off/3600, off/60%60,
		strings.ReplaceAll(message, "\n", " "))
	f.Write([]byte(line))
}

// IndexCopyExists reports whether the copy of an index recorded with sum is still kept.
func (r *Repo) IndexCopyExists(sum string) bool {
	_, err := os.Stat(r.indexCopyPath(sum))
	return err == nil
}
