package snapshot

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// A watched Repo keeps the last walk's result in memory (liveState) and follows the working tree
// with a watcher, so that consecutive snapshots and restores cost what changed between them, not
// what the tree holds: the next walk re-reads only the directories an event named (and their
// ancestors) and takes every other subtree, tree id and entries, from the last walk. The private
// index on disk is written once, when watching ends; until then it is an older, still valid cache.

// liveState is a finished walk (or restore) kept for the next walk of a watched Repo.
type liveState struct {
	t0S, t0Ns uint32 // when its stat data was taken: entries with mtime >= t0 are racy
	user      userIndexStamp
	entries   []*entry // sorted by path
	dirs      []dirInfo
	tree      plumbing.Hash // its root tree (checked to exist before anything is reused)
	rootFP    uint64        // rootMatchers' fingerprint of the attributes and settings
	ignFP     uint64        // of the repository-wide ignore files
	volatile  []string      // directories holding submodules or nested repositories
	unsaved   bool          // differs from the private index on disk
	// drift bounds how many entries differ from the private index on disk: what the next
	// process's first walk would read again (their stat data no longer matches) if the index
	// were not written. mustSave when that walk would cost more than reading them (no index on
	// disk, or the user's index changed since it was written: a reseed).
	drift int
}

// mustSave is a drift that always writes the private index.
const mustSave = math.MaxInt32

func addDrift(a, b int) int { return int(min(int64(a)+int64(b), mustSave)) }

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// worthSaving reports whether the private index is worth writing when a watch ends: writing it
// costs in proportion to the whole tree (~80 bytes a path), once; leaving it costs every later
// process's first walk a read of each drifted file, until one writes it (the drift of the index
// on disk is counted again by each process that starts from it, so it is written once the drift
// adds up). A run whose attempts were reset leaves a handful: not worth 800 KB at 10k files.
func (live *liveState) worthSaving() bool {
	return live.unsaved && live.drift > max(16, len(live.entries)/1000)
}

// Watch starts following the working tree: from the next walk on, each snapshot and restore
// re-reads only what changed since the one before (see liveState). Where the tree cannot be
// watched (not Linux, inotify limits), it returns the reason and walks stay full; correctness
// never depends on it. Unwatch (or Close) ends it and writes the private index.
func (r *Repo) Watch() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watch != nil {
		return nil
	}
	w, err := newWatcher()
	if err != nil {
		return err
	}
	r.watch = w
	return nil
}

// TreeEvents counts the changes the watch has seen in the working tree's directories since it
// began (ok false when the tree is not watched): a change in the count between two calls is a
// write in the tree, for the heartbeat's signs of work. A directory created since the last walk
// is not watched yet: its writes show only as its creation.
func (r *Repo) TreeEvents() (n uint64, ok bool) {
	r.mu.Lock()
	w := r.watch
	r.mu.Unlock()
	if w == nil {
		return 0, false
	}
	return w.count(), true
}

// Unwatch ends Watch and writes what the last walk learnt to the private index on disk.
func (r *Repo) Unwatch() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unwatchLocked()
}

func (r *Repo) unwatchLocked() error {
	if r.watch != nil {
		r.watch.close()
		r.watch = nil
	}
	live := r.live
	r.live = nil
	if live == nil || !live.worthSaving() {
		return nil
	}
	return r.saveLive(live)
}

// WatchStats says what the last walk did, for tests and benchmarks: whether it was incremental
// and how many directories it read.
type WatchStats struct {
	Incremental bool
	Full        string // why the last walk was full ("" when incremental)
	DirsRead    int
}

// LastWalk reports on the last walk of this Repo.
func (r *Repo) LastWalk() WatchStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastWalk
}

func (r *Repo) saveLive(live *liveState) error {
	tmp, _, _, err := createPrivTemp(r.gitDir)
	if err != nil {
		return fmt.Errorf("snapshot: private index: %w", err)
	}
	p := &privIndex{t0S: live.t0S, t0Ns: live.t0Ns, user: live.user, dirs: live.dirs}
	return savePrivIndex(tmp, privIndexPath(r.gitDir), p, live.entries)
}

// keepLive records ws as the state the next walk starts from (watched Repos), or writes it to
// disk (the others). r.mu is held.
func (r *Repo) keep(live *liveState, dirty bool) error {
	if r.watch == nil {
		if !dirty {
			return nil
		}
		return r.saveLive(live)
	}
	live.unsaved = dirty || live.unsaved
	r.live = live
	return nil
}

// takeLive hands the last walk's state to the walk about to start, with what changed since: the
// directories that walk must read (touched: the dirty ones and all their ancestors). A nil touched
// means a full walk, for the reason given; quiet means nothing at all happened since (no event, no
// submodule whose HEAD moves unseen, no entry whose stat data cannot vouch for it). The state is
// taken away: a walk that fails leaves none, so the next one starts from disk.
func (r *Repo) takeLive() (live *liveState, touched map[string]bool, full string, quiet bool) {
	live, r.live = r.live, nil
	if r.watch == nil {
		return nil, nil, "not watched", false
	}
	ch, err := r.watch.take()
	if err != nil {
		// Watching cannot go on: this walk and every later one are full, and the private index
		// is written to disk again after each.
		r.watch.close()
		r.watch = nil
		if live != nil {
			live.unsaved = true
			forgetRacy(live.entries, live.t0S, live.t0Ns)
		}
		return live, nil, "watching ended: " + err.Error(), false
	}
	switch {
	case live == nil:
		return nil, nil, "first walk", false
	}
	forgetRacy(live.entries, live.t0S, live.t0Ns)
	switch {
	case ch.full != "":
		return live, nil, ch.full, false
	}
	touched = map[string]bool{"": true}
	quiet = len(ch.dirty) == 0 && len(live.volatile) == 0
	mark := func(p string) {
		for !touched[p] {
			touched[p] = true
			i := strings.LastIndexByte(p, '/')
			if i < 0 {
				p = ""
			} else {
				p = p[:i]
			}
		}
	}
	for p := range ch.dirty {
		mark(p)
	}
	for _, p := range live.volatile {
		mark(p) // a submodule's HEAD moves without an event in the tree
	}
	// Entries whose stat data cannot vouch for their content are read again: the racy ones
	// (forgotten by forgetRacy) and those a restore left without stat data.
	for _, e := range live.entries {
		if e.st == (statData{}) && e.mode != 0 && e.mode != modeGitlink && e.mode != modeTree &&
			e.flags&(fSkipWT|fAssumeValid) == 0 {
			dir, _ := splitPath(e.path)
			mark(dir)
			quiet = false
		}
	}
	return live, touched, "", quiet
}

// forgetRacy drops the stat data of entries whose mtime is not before t0, the time their stat
// data was taken (racy git: a change in the same clock tick after the read leaves the same stat
// data), so the walk reads them again.
func forgetRacy(entries []*entry, t0S, t0Ns uint32) {
	for _, e := range entries {
		if e.st != (statData{}) && !e.st.mtimeBefore(t0S, t0Ns) {
			e.st = statData{}
		}
	}
}

// reusable reports whether the walk may take directory path's subtree whole from the last walk:
// nothing happened in or below it, it was watched all along, its last tree id is known, and the
// attributes that apply to it did not change (parentFPSame).
func (w *walker) reusable(path string, info *dirInfo, parentFPSame bool) bool {
	return w.touched != nil && parentFPSame && info != nil && info.valid && !w.touched[path] && w.watch.watched(path)
}

// countFiles is the number of files the entries old[lo:hi] put in a tree.
func (w *walker) countFiles(lo, hi int) int {
	n := 0
	for _, e := range w.old[lo:hi] {
		switch e.mode {
		case 0:
		case modeTree:
			n += int(e.st.size)
		default:
			n++
		}
	}
	return n
}

// flattenReused appends a reused subtree's entries and directories, as the last walk left them.
func (ws *walkState) flattenReused(n *dirNode) {
	ws.dirs = append(ws.dirs, dirInfo{path: n.path, tree: n.info.tree, fp: n.info.fp, valid: true})
	ws.entries = append(ws.entries, ws.old[n.lo:n.hi]...)
	if n.leaf {
		return
	}
	pfx := n.path + "/"
	i, _ := slices.BinarySearchFunc(ws.prevDirs, pfx, func(d dirInfo, p string) int { return strings.Compare(d.path, p) })
	for ; i < len(ws.prevDirs) && strings.HasPrefix(ws.prevDirs[i].path, pfx); i++ {
		ws.dirs = append(ws.dirs, ws.prevDirs[i])
	}
}

// reuseLive makes ws the last walk's result as it stands: nothing happened in the tree since it
// (takeLive's quiet), so reading the root directory again and copying the entry and directory
// lists would give the same, at the cost of a second copy of those lists (a run's undo snapshot
// right after an attempt's post snapshot, say).
func (ws *walkState) reuseLive(live *liveState) {
	ws.entries, ws.dirs, ws.volatile = live.entries, live.dirs, live.volatile
	files := 0
	for _, e := range ws.entries {
		switch e.mode {
		case 0:
		case modeTree:
			files += int(e.st.size)
		default:
			files++
		}
	}
	ws.result = TreeResult{Tree: live.tree, Files: files}
}

// ptrs points at each entry of es.
func ptrs(es []entry) []*entry {
	out := make([]*entry, len(es))
	for i := range es {
		out[i] = &es[i]
	}
	return out
}

// dropLive forgets the in-memory state (after a failure): the next walk starts from disk.
func (r *Repo) dropLive() { r.live = nil }
