package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/mulligan-dev/mulligan/snapshot/internal/odb"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/snapshot/attr"
	"github.com/mulligan-dev/mulligan/snapshot/ignore"
)

// TreeResult is what WriteTree wrote.
type TreeResult struct {
	Tree   plumbing.Hash
	Files  int // blob, symlink and gitlink entries
	Hashed int // files read this time (the rest were trusted from their stat data)
}

// emptyTree is the id of the tree with no entries.
var emptyTree = plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")

// emptyBlob is the id of the empty blob.
var emptyBlob = plumbing.NewHash("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")

// WriteTree writes blobs and trees for the whole working tree, exactly as
// `cp .git/index tmp; GIT_INDEX_FILE=tmp git add -A; GIT_INDEX_FILE=tmp git write-tree` would,
// and returns the tree id. It never changes the user's index, HEAD, refs, config or worktree
// files; it keeps its own private index under <GitDir>/mulligan/ for speed.
func (r *Repo) WriteTree(ctx context.Context) (TreeResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws, err := r.walkTree(ctx)
	if err != nil {
		return TreeResult{}, err
	}
	if err := ws.save(); err != nil {
		return TreeResult{}, err
	}
	return ws.result, nil
}

// walkState is one finished walk: the tree written and the private index it implies.
type walkState struct {
	r         *Repo
	result    TreeResult
	root      *dirNode
	entries   []*entry // sorted by path
	dirs      []dirInfo
	user      userIndexStamp
	t0S, t0Ns uint32
	tmp       *os.File
	dirty     bool
	drift     int // entries that may differ from the private index on disk (liveState.drift)
	rootFP    uint64
	ignFP     uint64
	volatile  []string
	// The walk's old state, which reused subtrees are copied from.
	old      []*entry
	prevDirs []dirInfo
}

// fromDisk is the old state of a walk from p, the private index on disk (nil: none).
func (ws *walkState) fromDisk(p *privIndex) []*entry {
	if p == nil {
		ws.drift = mustSave // no private index on disk
		return nil
	}
	old := ptrs(p.entries)
	p.entries = nil
	forgetRacy(old, p.t0S, p.t0Ns)
	return old
}

func (ws *walkState) discard() {
	if ws.tmp != nil {
		ws.tmp.Close()
		os.Remove(ws.tmp.Name())
		ws.tmp = nil
	}
}

// live is the state the walk leaves for the next one.
func (ws *walkState) live() *liveState {
	return &liveState{t0S: ws.t0S, t0Ns: ws.t0Ns, user: ws.user, entries: ws.entries, dirs: ws.dirs,
		tree: ws.result.Tree, rootFP: ws.rootFP, ignFP: ws.ignFP, volatile: ws.volatile, drift: ws.drift}
}

// save keeps the walk's result: in memory while the Repo is watched, else in the private index
// on disk, when the walk changed anything (a clean snapshot writes nothing).
func (ws *walkState) save() error {
	r := ws.r
	if r.watch != nil {
		ws.discard()
		return r.keep(ws.live(), ws.dirty)
	}
	if !ws.dirty {
		ws.discard()
		return nil
	}
	p := &privIndex{t0S: ws.t0S, t0Ns: ws.t0Ns, user: ws.user, dirs: ws.dirs}
	tmp := ws.tmp
	ws.tmp = nil
	return savePrivIndex(tmp, privIndexPath(r.gitDir), p, ws.entries)
}

func (r *Repo) walkTree(ctx context.Context) (_ *walkState, err error) {
	tmp, t0S, t0Ns, err := createPrivTemp(r.gitDir)
	if err != nil {
		return nil, fmt.Errorf("snapshot: private index: %w", err)
	}
	ws := &walkState{r: r, tmp: tmp, t0S: t0S, t0Ns: t0Ns}
	defer func() {
		if err != nil {
			ws.discard()
		}
	}()
	cleanStaleTemps(r.gitDir, t0S)
	seen := r.ignSeen // still true after a quiet walk (below)
	r.ignSeen = nil

	// The old state: the last walk's, kept in memory with what changed since (watched), or the
	// private index on disk.
	stamp, err := stampUserIndex(r.indexFile)
	if err != nil {
		return nil, fmt.Errorf("snapshot: read index: %w", err)
	}
	live, touched, full, quiet := r.takeLive()
	var p *privIndex
	var old []*entry
	if live != nil {
		p = &privIndex{t0S: live.t0S, t0Ns: live.t0Ns, user: live.user, dirs: live.dirs}
		old = live.entries
		ws.dirty, ws.drift = live.unsaved, live.drift
	} else {
		if p, err = loadPrivIndex(privIndexPath(r.gitDir), &stamp); err != nil {
			return nil, fmt.Errorf("snapshot: private index: %w", err)
		}
		old = ws.fromDisk(p)
	}
	ws.user = stamp
	var hints map[string]plumbing.Hash
	if p == nil || p.user != stamp {
		if p, old, hints, err = r.reseedFromIndex(p, old, stamp); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		ws.dirty, ws.drift = true, mustSave // the next process would reseed again
		touched, full = nil, "the user's index changed"
	}
	ign, attrs, fp, ignFP, err := r.rootMatchers()
	if err != nil {
		return nil, err
	}
	ws.rootFP, ws.ignFP = fp, ignFP
	if touched != nil {
		switch {
		case live.rootFP != fp || live.ignFP != ignFP:
			touched, full = nil, "repository-wide ignore or attribute rules changed"
		case !r.objs.Has(live.tree):
			touched, full = nil, "the last tree is no longer in the object store"
		}
	}
	if touched != nil && quiet {
		ws.reuseLive(live)
		r.lastWalk = WatchStats{Incremental: true}
		r.ignSeen = seen // nothing happened since the walk that saw them
		return ws, nil
	}

	fctx, stopFilters := filterContext(ctx)
	defer stopFilters()
	w := &walker{
		r:        r,
		ctx:      ctx,
		fctx:     fctx,
		root:     r.root,
		fileMode: r.set.fileMode,
		set:      r.set,
		conv:     attr.NewConverter(r.set.conv, r.root),
		old:      old,
		dirs:     p.dirs,
		uHints:   hints,
		watch:    r.watch,
		touched:  touched,
	}
	defer w.conv.Close()
	w.cond = sync.NewCond(&w.mu)
	root := &dirNode{info: w.dirInfo(""), hadOld: true}
	w.push(job{dir: &dirJob{node: root, lo: 0, hi: len(w.old), ign: ign, attrs: attrs, fp: fp}})
	if err := w.run(runtime.GOMAXPROCS(0)); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}

	b := &treeBuilder{w: w}
	if _, err := b.build(root); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if root.files == 0 {
		if _, err := r.objs.WriteBytes(plumbing.TreeObject, nil); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		root.tree = emptyTree
	}
	ws.root = root
	ws.old, ws.prevDirs = w.old, w.dirs
	ws.entries = make([]*entry, 0, len(w.old)+int(w.newEntries.Load()))
	ws.dirs = make([]dirInfo, 0, len(w.dirs)+16) // grown by appends from nothing: 4 times its size in garbage
	ws.flatten(root)
	ws.old, ws.prevDirs = nil, nil
	sort.Slice(ws.dirs, func(i, j int) bool { return ws.dirs[i].path < ws.dirs[j].path })
	if b.dirty || w.newEntries.Load() > 0 || len(ws.entries) != len(w.old) || len(ws.dirs) != len(w.dirs) {
		ws.dirty = true
		ws.drift = addDrift(ws.drift, int(w.newEntries.Load())+abs(len(ws.entries)-len(w.old))+1)
	}
	files := 0
	for _, e := range ws.entries {
		switch e.mode {
		case 0: // a tracked path missing from disk
		case modeTree:
			files += int(e.st.size) // sparse-index directory: its file count, cached at reseed
		default:
			files++
		}
	}
	ws.result = TreeResult{Tree: root.tree, Files: files, Hashed: int(w.hashed.Load())}
	r.lastWalk = WatchStats{Incremental: touched != nil, Full: full, DirsRead: int(w.dirsRead.Load())}
	r.ignSeen = nil
	if touched == nil && !w.seenPartial.Load() {
		r.ignSeen = &w.seen // every directory KeepIgnored would read was read
	}
	return ws, nil
}

func (ws *walkState) flatten(n *dirNode) {
	if n.reused {
		ws.flattenReused(n)
		return
	}
	if n.volatile {
		ws.volatile = append(ws.volatile, n.path)
	}
	ws.dirs = append(ws.dirs, dirInfo{path: n.path, tree: n.tree, fp: n.fp, valid: true})
	for i := range n.kids {
		k := &n.kids[i]
		switch {
		case k.d != nil:
			ws.flatten(k.d)
		case k.e.mode != 0:
			ws.entries = append(ws.entries, k.e)
		case k.e.flags&fTracked != 0:
			// A tracked file that vanished while it was read: absent, like one readdir missed.
			if k.e.st != (statData{}) || !k.e.blob.IsZero() {
				k.e.st, k.e.blob = statData{}, plumbing.ZeroHash
				k.e.flags &^= fHashed | fCRCalled | fCRValue
			}
			ws.entries = append(ws.entries, k.e)
		}
	}
}

// rootMatchers reads the repository-wide ignore and attribute sources and fingerprints everything
// that changes how a file's content becomes a blob (fp), and the ignore sources (ignFP).
func (r *Repo) rootMatchers() (*ignore.Matcher, *attr.Matcher, uint64, uint64, error) {
	read := func(path string) ([]byte, error) {
		if path == "" {
			return nil, nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return nil, nil
			}
			return nil, fmt.Errorf("snapshot: read %s: %w", path, err)
		}
		return data, nil
	}
	excl, err := read(r.set.excludesFile)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	info, err := read(filepath.Join(r.commonDir, "info", "exclude"))
	if err != nil {
		return nil, nil, 0, 0, err
	}
	gattr, err := read(r.set.attributesFile)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	iattr, err := read(filepath.Join(r.commonDir, "info", "attributes"))
	if err != nil {
		return nil, nil, 0, 0, err
	}
	if r.set.ignoreCase {
		excl, info = bytes.ToLower(excl), bytes.ToLower(info)
	}
	ign := ignore.NewMatcher(ignore.Parse(excl, ""), ignore.Parse(info, ""))
	attrs := attr.NewMatcher(attr.Parse(gattr, ""), attr.Parse(iattr, ""))
	fp := mixFP(0, []byte(r.set.fingerprint()))
	fp = mixFP(fp, gattr)
	fp = mixFP(fp, []byte{0})
	fp = mixFP(fp, iattr)
	ignFP := mixFP(mixFP(mixFP(0, excl), []byte{0}), info)
	return ign, attrs, fp, ignFP, nil
}

// fingerprint is every setting that changes which mode or blob a file gets.
func (s settings) fingerprint() string {
	var b strings.Builder
	fmt.Fprintf(&b, "v1 filemode=%t symlinks=%t autocrlf=%s eol=%s", s.fileMode, s.symlinks, s.conv.AutoCRLF, s.conv.EOL)
	names := make([]string, 0, len(s.conv.Filters))
	for n := range s.conv.Filters {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		f := s.conv.Filters[n]
		fmt.Fprintf(&b, "\x00filter %q clean=%q process=%q required=%t", n, f.Clean, f.Process, f.Required)
	}
	return b.String()
}

// reseed rebuilds the private index entries from a changed user index, keeping content mulligan
// read itself where the user's index cannot vouch for the file.
func (r *Repo) reseed(p *privIndex, old []*entry, ui *userIndex, stamp userIndexStamp) (*privIndex, []*entry) {
	var u []userEntry
	if ui != nil {
		u = ui.entries
	}
	m := r.newReseeder(p, old, stamp, len(u))
	for k := 0; k < len(u); {
		g := k + 1
		for g < len(u) && u[g].name == u[k].name {
			g++
		}
		m.group(u[k:g])
		k = g
	}
	return m.finish()
}

// reseedFromIndex is reseed from the user's index on disk as it streams in: its entries go
// straight into the new ones, never all decoded beside them (at 100k files that was 10 MB of
// fresh memory). It also returns the index's valid cache-tree ids. A split index, whose entries
// are only known merged with its shared index, is decoded whole first (readIndexFile).
func (r *Repo) reseedFromIndex(p *privIndex, old []*entry, stamp userIndexStamp) (*privIndex, []*entry, map[string]plumbing.Hash, error) {
	if !stamp.present {
		np, out := r.reseed(p, old, nil, stamp)
		return np, out, nil, nil
	}
	f, err := os.Open(r.indexFile)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, nil, err
	}
	size := fi.Size()
	br := bufio.NewReaderSize(f, indexReadBuf)
	version, count, err := readIndexHeader(br, size)
	if err != nil {
		return nil, nil, nil, err
	}
	m := r.newReseeder(p, old, stamp, count)
	// Names go into one arena, each a view of it: sized to the file, which holds them whole in
	// versions 2 and 3; when it grows (version 4 compresses them), the views keep the old array,
	// which nothing writes again.
	arena := make([]byte, 0, size)
	var group []userEntry // the stages of one path
	off, err := scanIndexEntries(br, version, count, size, func(_ int, u *userEntry, name []byte) {
		if len(group) > 0 && group[0].name != string(name) {
			m.group(group)
			group = group[:0]
		}
		e := *u
		if len(group) > 0 {
			e.name = group[0].name
		} else {
			at := len(arena)
			arena = append(arena, name...)
			e.name = arenaString(arena[at:])
		}
		group = append(group, e)
	})
	if err != nil {
		return nil, nil, nil, err
	}
	if len(group) > 0 {
		m.group(group)
	}
	var hints map[string]plumbing.Hash
	split := false
	err = scanIndexExtensions(br, off, size, func(sig []byte, n int) error {
		link, err := readIndexExtension(br, sig, n, &hints)
		split = split || link != nil
		return err
	})
	if err != nil {
		return nil, nil, nil, err
	}
	if split {
		// The file just streamed, decoded whole from its start (not whatever replaced it since).
		ui, err := decodeIndex(bufio.NewReaderSize(io.NewSectionReader(f, 0, size), indexReadBuf), size, r.gitDir)
		if err != nil {
			return nil, nil, nil, err
		}
		np, out := r.reseed(p, old, ui, stamp)
		return np, out, ui.trees, nil
	}
	np, out := m.finish()
	return np, out, hints, nil
}

// reseeder merges the user's index, a path's stages at a time in path order, with the old
// entries (sorted by path).
type reseeder struct {
	r      *Repo
	np     *privIndex
	stamp  userIndexStamp
	w      *walker
	counts map[plumbing.Hash]int
	old    []*entry
	i      int // old[:i] are merged
	out    []entry
	ubs    []plumbing.Hash // out[i]'s user blob, pointed at once out stops moving
}

func (r *Repo) newReseeder(p *privIndex, old []*entry, stamp userIndexStamp, tracked int) *reseeder {
	np := &privIndex{user: stamp}
	if p != nil {
		np.dirs = p.dirs
		for i := range np.dirs {
			np.dirs[i].valid = false // their ids stay useful as "known to exist"
		}
	}
	n := tracked + len(old)/8
	m := &reseeder{r: r, np: np, stamp: stamp, w: &walker{set: r.set}, counts: map[plumbing.Hash]int{}, old: old,
		out: make([]entry, 0, n), ubs: make([]plumbing.Hash, 0, n)}
	return m
}

// group merges one path's entries in the user's index (its stages), and the old entries before it.
func (m *reseeder) group(group []userEntry) {
	name := group[0].name
	for m.i < len(m.old) && m.old[m.i].path < name {
		m.untracked(m.old[m.i])
		m.i++
	}
	var pe *entry
	if m.i < len(m.old) && m.old[m.i].path == name {
		pe = m.old[m.i]
		m.i++
	}
	ownContent := pe != nil && pe.ownContent()
	e, ub := entryFromUser(group, m.stamp)
	if e.mode == modeTree {
		e.st.size = uint32(m.r.countFiles(e.blob, m.counts))
	}
	if ownContent && e.flags&(fSkipWT|fAssumeValid) == 0 && uint32(e.umode) != modeGitlink &&
		(e.mode == 0 || pe.st != e.st) &&
		(pe.flags&fCRCalled == 0 || pe.userBlob() == ub) {
		// The file changed after the user's index recorded it, and mulligan read it since.
		e.st, e.blob = pe.st, pe.blob
		e.flags |= fHashed | pe.flags&(fCRCalled|fCRValue)
		if pe.mode == modeSymlink {
			e.mode = modeSymlink
		} else {
			e.mode = m.w.fileModeFor(pe.st.mode, &e)
		}
	}
	m.out = append(m.out, e)
	m.ubs = append(m.ubs, ub)
}

// untracked keeps an old entry the user's index does not (or no longer) have: only what
// mulligan read itself survives.
func (m *reseeder) untracked(pe *entry) {
	if !pe.ownContent() {
		return
	}
	e := *pe
	e.flags &^= fTracked | fSkipWT | fAssumeValid | fITA | fConflict | fCRCalled | fCRValue
	e.umode, e.ub = 0, nil
	if e.mode != modeSymlink {
		e.mode = m.w.fileModeFor(e.st.mode, &e)
	}
	m.out = append(m.out, e)
	m.ubs = append(m.ubs, plumbing.ZeroHash)
}

// finish merges the old entries after the user's last and returns the new index and entries.
func (m *reseeder) finish() (*privIndex, []*entry) {
	for ; m.i < len(m.old); m.i++ {
		m.untracked(m.old[m.i])
	}
	setUserBlobs(m.out, m.ubs)
	return m.np, ptrs(m.out)
}

// countFiles is the number of non-tree entries below tree h (what `git ls-tree -r` lists).
func (r *Repo) countFiles(h plumbing.Hash, memo map[plumbing.Hash]int) int {
	if n, ok := memo[h]; ok {
		return n
	}
	ents, err := r.readTree(h)
	if err != nil {
		return 0
	}
	n := 0
	for i := range ents {
		if ents[i].isDir() {
			n += r.countFiles(ents[i].hash, memo)
		} else {
			n++
		}
	}
	memo[h] = n
	return n
}

// entryFromUser is the entry of a path the user's index tracks (group: its stages), and the
// blob the user's index has for it (for reseed's setUserBlobs).
func entryFromUser(group []userEntry, stamp userIndexStamp) (e entry, ublob plumbing.Hash) {
	g := group[0]
	e = entry{path: g.name, flags: fTracked}
	if len(group) == 1 && g.stage == 0 {
		e.flags |= g.flags
		e.umode, ublob = uint16(g.mode), g.hash
		switch {
		case g.flags&fITA != 0:
			// intent-to-add: no content yet
		case g.mode == modeGitlink || g.mode == modeTree || g.flags&(fSkipWT|fAssumeValid) != 0:
			e.mode, e.blob = g.mode, g.hash
		case g.st.mtimeS >= stamp.st.mtimeS:
			// racily clean in the user's index (git compares whole seconds): read it again
		default:
			e.mode, e.blob, e.st = g.mode, g.hash, g.st
		}
		return e, ublob
	}
	// Unmerged: `git add` takes the file as it is now; its mode (core.fileMode=false) comes from
	// stage 2, else 1, else 3, and the CRLF rule looks at stage 2 (git's read_blob_data_from_index).
	e.flags |= fConflict
	pick := func(stage uint8) *userEntry {
		for i := range group {
			if group[i].stage == stage {
				return &group[i]
			}
		}
		return nil
	}
	for _, st := range []uint8{2, 1, 3, 0} {
		if x := pick(st); x != nil {
			e.umode = uint16(x.mode)
			break
		}
	}
	if x := pick(2); x != nil {
		ublob = x.hash
	}
	return e, ublob
}

// treeBuilder computes tree ids bottom-up, serialising only directories whose content may have
// changed and writing only trees the object store lacks.
type treeBuilder struct {
	w     *walker
	buf   []byte
	dirty bool
}

// build returns whether n's entry in its parent tree changed (appeared, vanished or got a new id).
func (b *treeBuilder) build(n *dirNode) (bool, error) {
	if n.reused {
		n.tree, n.files = n.info.tree, b.w.countFiles(n.lo, n.hi)
		return false, nil
	}
	info := n.info
	changed := n.unmatchedOld || info == nil || !info.valid || info.fp != n.fp
	files := 0
	for i := range n.kids {
		k := &n.kids[i]
		if k.d != nil {
			c, err := b.build(k.d)
			if err != nil {
				return false, err
			}
			if c {
				changed = true
			}
			files += k.d.files
			continue
		}
		if k.e.mode == 0 {
			if k.old != nil && k.old.mode != 0 {
				changed = true
			}
			continue
		}
		files++
		if k.old == nil || k.e != k.old && (k.e.mode != k.old.mode || k.e.blob != k.old.blob) {
			changed = true
		}
	}
	n.files = files
	if !changed {
		n.tree = info.tree
		return false, nil
	}
	b.dirty = true
	if files > 0 {
		b.buf = serializeTree(b.buf[:0], n)
		id := odb.ObjectID(plumbing.TreeObject, b.buf)
		known := info != nil && info.tree == id
		if !known && b.w.uHints != nil {
			known = b.w.uHints[n.path] == id
		}
		if !known {
			if _, err := b.w.r.objs.WriteBytes(plumbing.TreeObject, b.buf); err != nil {
				return false, fmt.Errorf("write tree %s: %w", n.path, err)
			}
		}
		n.tree = id
	} else {
		n.tree = plumbing.ZeroHash
	}
	switch {
	case !n.hadOld:
		return files > 0, nil
	case files == 0:
		return true, nil
	default:
		return info == nil || !info.valid || n.tree != info.tree, nil
	}
}

func serializeTree(buf []byte, n *dirNode) []byte {
	for i := range n.kids {
		k := &n.kids[i]
		if k.d != nil {
			if k.d.files == 0 {
				continue
			}
			buf = append(buf, "40000 "...)
			buf = append(buf, k.name...)
			buf = append(buf, 0)
			buf = append(buf, k.d.tree[:]...)
			continue
		}
		if k.e.mode == 0 {
			continue
		}
		buf = appendMode(buf, k.e.mode)
		buf = append(buf, ' ')
		buf = append(buf, k.name...)
		buf = append(buf, 0)
		buf = append(buf, k.e.blob[:]...)
	}
	return buf
}

func appendMode(buf []byte, mode uint32) []byte {
	switch mode {
	case modeRegular:
		return append(buf, "100644"...)
	case modeExec:
		return append(buf, "100755"...)
	case modeSymlink:
		return append(buf, "120000"...)
	case modeGitlink:
		return append(buf, "160000"...)
	}
	return append(buf, fmt.Sprintf("%o", mode)...)
}
