package snapshot

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/mulligan-dev/mulligan/snapshot/attr"
	"github.com/mulligan-dev/mulligan/snapshot/ignore"
)

// The walk visits every directory of the working tree once, in parallel, merging what readdir and
// lstat show with the private index (the old entries). A directory is a job; files whose stat
// data changed are read (hashed) inside the job or, when there are many, in batch jobs of their
// own. The result is a tree of dirNodes whose file kids point at old entries when nothing changed,
// so a clean walk allocates per directory, not per file.

// dirent types, independent of the platform's DT_* values.
const (
	dtUnknown uint8 = iota
	dtReg
	dtDir
	dtLink
	dtOther
)

type nameRef struct {
	off, n uint32
	typ    uint8
}

// scratch is one worker's reusable memory.
type scratch struct {
	dents   []byte
	arena   []byte // names, each followed by a NUL
	names   []nameRef
	oldKids []oldKid
	items   []hashItem
	cname   []byte
	buf     []byte
	st      unix.Stat_t
	slab    []entry
	kids    []kid // the directory being walked; copied out only when it changed
	// What the directory being walked showed KeepIgnored (ignoredSeen): its individually ignored
	// files and untracked nested repositories.
	ignored, nested []string
}

func newScratch() *scratch {
	return &scratch{dents: make([]byte, 64<<10), arena: make([]byte, 0, 16<<10)}
}

func (s *scratch) addName(name []byte, typ uint8) {
	off := len(s.arena)
	s.arena = append(s.arena, name...)
	s.arena = append(s.arena, 0)
	s.names = append(s.names, nameRef{off: uint32(off), n: uint32(len(name)), typ: typ})
}

func (s *scratch) name(r nameRef) []byte  { return s.arena[r.off : r.off+r.n] }
func (s *scratch) cName(r nameRef) []byte { return s.arena[r.off : r.off+r.n+1] }

// cString returns name NUL-terminated in reusable memory.
func (s *scratch) cString(name string) []byte {
	s.cname = append(append(s.cname[:0], name...), 0)
	return s.cname
}

// newEntry hands out entries from a slab, so changed files cost an allocation per 512 of them.
func (s *scratch) newEntry() *entry {
	if len(s.slab) == 0 {
		s.slab = make([]entry, 512)
	}
	e := &s.slab[0]
	s.slab = s.slab[1:]
	return e
}

// oldKid is a direct child of the directory being walked, as the old entries describe it.
type oldKid struct {
	name    string
	e       *entry // file-like child, or a sparse-index directory entry (isDir with e set)
	lo, hi  int    // directory child: its range of old entries
	tracked bool   // directory child: some of them are in the user's index
	isDir   bool
	matched bool
}

// sparse reports whether the kid is a sparse-index directory entry: kept whole, never walked.
func (k *oldKid) sparse() bool { return k.isDir && k.e != nil }

type kid struct {
	name string
	e    *entry // file-like kid (regular, symlink, gitlink, sparse tree); mode 0 = vanished while read
	old  *entry // the old entry e replaces (e == old when unchanged)
	d    *dirNode
}

func (k *kid) isDir() bool { return k.d != nil || k.e.mode == modeTree }

type dirNode struct {
	path, name   string
	kids         []kid
	info         *dirInfo // what the old index recorded for this directory
	fp           uint64
	hadOld       bool // the old index had entries below this directory
	unmatchedOld bool // some old child is gone
	tree         plumbing.Hash
	files        int
	// reused: the subtree is the old entries old[lo:hi] and the old tree info.tree (not read, or
	// read and found unchanged: leaf, a directory without subdirectories).
	reused, leaf bool
	lo, hi       int
	// volatile: holds a submodule or nested repository, whose HEAD moves without an event here.
	volatile bool
}

type dirJob struct {
	node    *dirNode
	lo, hi  int
	ign     *ignore.Matcher
	attrs   *attr.Matcher
	fp      uint64
	ignored bool // the directory is ignored: only tracked paths in it count
}

type hashItem struct {
	e      *entry
	typ    uint8
	verify *entry // user-index entry git considers unchanged: keep it if the content differs
}

type hashJob struct {
	node  *dirNode
	items []hashItem
	attrs *attr.Matcher
	fp    uint64
}

type job struct {
	dir  *dirJob
	hash *hashJob
}

type walker struct {
	r        *Repo
	ctx      context.Context
	fctx     context.Context // for clean filters: ctx, also ended by its filter bound
	root     string
	fileMode bool
	set      settings
	conv     *attr.Converter
	old      []*entry // the previous walk's entries, sorted by path
	dirs     []dirInfo
	uHints   map[string]plumbing.Hash
	// Watched walks (live.go): the watcher every directory read is added to, and the directories
	// this walk must read; a nil touched means all of them.
	watch   *watcher
	touched map[string]bool

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []job
	pending int
	err     error

	hashed     atomic.Int64
	newEntries atomic.Int64
	dirsRead   atomic.Int64

	// The individually ignored files and untracked nested repositories the walk met, for
	// KeepIgnored (ignoredSeen); seenPartial when the walk passed over a directory KeepIgnored's
	// own scan would have entered.
	seenMu      sync.Mutex
	seen        ignoredSeen
	seenPartial atomic.Bool
}

func (w *walker) push(j job) {
	w.mu.Lock()
	w.queue = append(w.queue, j)
	w.pending++
	w.mu.Unlock()
	w.cond.Signal()
}

func (w *walker) next() (job, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.queue) == 0 && w.pending > 0 && w.err == nil {
		w.cond.Wait()
	}
	if w.err != nil || len(w.queue) == 0 {
		return job{}, false
	}
	j := w.queue[len(w.queue)-1]
	w.queue = w.queue[:len(w.queue)-1]
	return j, true
}

func (w *walker) finish(err error) {
	w.mu.Lock()
	w.pending--
	if err != nil && w.err == nil {
		w.err = err
	}
	wake := w.pending == 0 || w.err != nil
	w.mu.Unlock()
	if wake {
		w.cond.Broadcast()
	}
}

func (w *walker) run(workers int) error {
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newScratch()
			for {
				j, ok := w.next()
				if !ok {
					return
				}
				var err error
				if j.dir != nil {
					err = w.doDir(s, j.dir)
				} else {
					err = w.doHashJob(s, j.hash)
				}
				w.finish(err)
			}
		}()
	}
	wg.Wait()
	return w.err
}

func (w *walker) dirInfo(path string) *dirInfo {
	i, ok := slices.BinarySearchFunc(w.dirs, path, func(d dirInfo, p string) int { return strings.Compare(d.path, p) })
	if !ok {
		return nil
	}
	return &w.dirs[i]
}

// collectOldKids groups old[lo:hi] (all below the same directory) into its direct children.
func (w *walker) collectOldKids(kids []oldKid, lo, hi, prefixLen int) []oldKid {
	for i := lo; i < hi; {
		p := w.old[i].path[prefixLen:]
		slash := strings.IndexByte(p, '/')
		if slash < 0 {
			kids = append(kids, oldKid{name: p, e: w.old[i]})
			i++
			continue
		}
		if slash == len(p)-1 {
			// A sparse-index directory entry ("dir/", a whole tree kept as it is).
			kids = append(kids, oldKid{name: p[:slash], e: w.old[i], isDir: true, tracked: true})
			i++
			continue
		}
		pfx := w.old[i].path[:prefixLen+slash+1]
		// The entries below pfx are contiguous from i: binary search for their end.
		a, b := i+1, hi
		for a < b {
			m := int(uint(a+b) >> 1)
			if strings.HasPrefix(w.old[m].path, pfx) {
				a = m + 1
			} else {
				b = m
			}
		}
		kids = append(kids, oldKid{name: p[:slash], isDir: true, lo: i, hi: a, tracked: w.anyTracked(i, a)})
		i = a
	}
	return kids
}

// anyTracked reports whether one of old[lo:hi] is in the user's index. It stops at the first: in
// a tracked directory that is the first entry or close to it, and an untracked directory is
// scanned once per level above its files (no table of counts per entry is kept for it: a run
// would hold 4 bytes per file for each walk).
func (w *walker) anyTracked(lo, hi int) bool {
	for _, e := range w.old[lo:hi] {
		if e.flags&fTracked != 0 {
			return true
		}
	}
	return false
}

// treeCompare orders names as git orders tree entries: a directory sorts as if its name ended in '/'.
func treeCompare(a string, aDir bool, b string, bDir bool) int {
	n := min(len(a), len(b))
	if c := strings.Compare(a[:n], b[:n]); c != 0 {
		return c
	}
	var ca, cb byte
	if len(a) > n {
		ca = a[n]
	} else if aDir {
		ca = '/'
	}
	if len(b) > n {
		cb = b[n]
	} else if bDir {
		cb = '/'
	}
	return int(ca) - int(cb)
}

// findOldKid binary-searches the old kids (in tree order) without allocating: it runs once or
// twice for every name on disk.
func findOldKid(kids []oldKid, name []byte, isDir bool) int {
	if len(name) == 0 {
		return -1
	}
	n := unsafe.String(&name[0], len(name)) // read-only view, not kept
	lo, hi := 0, len(kids)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		c := treeCompare(kids[m].name, kids[m].isDir, n, isDir)
		if c == 0 {
			return m
		}
		if c < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return -1
}

func joinPath(dir string, name []byte) string {
	if dir == "" {
		return string(name)
	}
	return dir + "/" + string(name)
}

func (w *walker) abs(rel string) string {
	if rel == "" {
		return w.root
	}
	return w.root + "/" + rel
}
