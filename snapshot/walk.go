package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// readSpecial reads a .gitignore or .gitattributes next to the walk; like git (2.32+) it does not
// follow a symbolic link there.
func readSpecial(dirfd int, name string) ([]byte, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT || err == unix.ELOOP || err == unix.ENOTDIR {
			return nil, nil
		}
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, nil
	}
	buf := make([]byte, 0, st.Size+1)
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil || n == 0 {
			break
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 4096)
		}
	}
	return buf, nil
}

func (w *walker) doDir(s *scratch, j *dirJob) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	n := j.node
	prefixLen := 0
	if n.path != "" {
		prefixLen = len(n.path) + 1
	}
	s.oldKids = w.collectOldKids(s.oldKids[:0], j.lo, j.hi, prefixLen)
	fd, err := unix.Open(w.abs(n.path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT || err == unix.ENOTDIR || err == unix.ELOOP {
			// Gone (or replaced) since its parent was read: only skip-worktree and absent
			// tracked entries survive.
			w.keepAbsent(s, n, s.oldKids)
			return nil
		}
		return fmt.Errorf("open directory %s: %w", w.abs(n.path), err)
	}
	defer unix.Close(fd)
	w.dirsRead.Add(1)
	if w.watch != nil {
		w.watch.add(fd, n.path) // before reading: a change after this point raises an event
	}

	attrs, fp := j.attrs, j.fp
	if j.ignored {
		data, err := readSpecial(fd, ".gitattributes")
		if err != nil {
			return fmt.Errorf("read %s: %w", filepath.Join(w.abs(n.path), ".gitattributes"), err)
		}
		if data != nil {
			attrs, fp = attrs.Child(n.path, data), mixFP(fp, data)
		}
		n.fp = fp
		return w.doIgnoredDir(s, j, fd, attrs, fp)
	}

	s.arena, s.names = s.arena[:0], s.names[:0]
	if err := readDirents(fd, s); err != nil {
		return fmt.Errorf("read directory %s: %w", w.abs(n.path), err)
	}
	ign := j.ign
	for _, nr := range s.names {
		name := s.name(nr)
		if nr.typ != dtReg && nr.typ != dtUnknown {
			continue
		}
		switch string(name) {
		case ".gitignore":
			data, err := readSpecial(fd, ".gitignore")
			if err != nil {
				return fmt.Errorf("read %s: %w", filepath.Join(w.abs(n.path), ".gitignore"), err)
			}
			if data != nil {
				ign = ign.Child(w.fold(n.path), w.foldBytes(data))
			}
		case ".gitattributes":
			data, err := readSpecial(fd, ".gitattributes")
			if err != nil {
				return fmt.Errorf("read %s: %w", filepath.Join(w.abs(n.path), ".gitattributes"), err)
			}
			if data != nil {
				attrs, fp = attrs.Child(n.path, data), mixFP(fp, data)
			}
		}
	}
	n.fp = fp
	fpSame := n.info != nil && n.info.fp == fp

	kids := s.kids[:0]
	s.items = s.items[:0]
	for _, nr := range s.names {
		name := s.name(nr)
		if len(name) == 4 && string(name) == ".git" {
			continue
		}
		typ := nr.typ
		if typ == dtReg || typ == dtLink || typ == dtUnknown {
			if err := fstatat(fd, s.cName(nr), &s.st); err != nil {
				if err == unix.ENOENT {
					continue // deleted since readdir
				}
				return fmt.Errorf("lstat %s: %w", w.abs(joinPath(n.path, name)), err)
			}
			typ = typeOfMode(uint32(s.st.Mode))
		}
		switch typ {
		case dtReg, dtLink:
			fk := findOldKid(s.oldKids, name, false)
			var e *entry
			if fk >= 0 {
				e = s.oldKids[fk].e
			}
			if (e == nil || e.flags&fTracked == 0) && isRestoreTemp(name) {
				continue // a restore killed half-way left it: never part of a snapshot
			}
			var path string
			if e != nil {
				if e.flags&fTracked == 0 && ign.Ignored(w.fold(e.path), false) {
					s.ignored = append(s.ignored, e.path)
					continue // was untracked, now ignored: drops out
				}
				path = e.path
			} else {
				path = joinPath(n.path, name)
				if ign.Ignored(w.fold(path), false) {
					s.ignored = append(s.ignored, path)
					continue
				}
			}
			if fk >= 0 {
				s.oldKids[fk].matched = true
			}
			kids = append(kids, w.fileKid(s, path, len(name), e, typ, fpSame))
		case dtDir:
			k, ok, err := w.dirKid(s, j, n, ign, attrs, fp, fpSame, name)
			if err != nil {
				return err
			}
			if ok {
				kids = append(kids, k)
			}
		}
	}
	w.noteSeen(s)
	return w.finishDir(s, n, kids, j.lo, j.hi, fd, attrs, fp)
}

// noteSeen hands over what the directory just read showed KeepIgnored.
func (w *walker) noteSeen(s *scratch) {
	if len(s.ignored) == 0 && len(s.nested) == 0 {
		return
	}
	w.seenMu.Lock()
	if len(w.seen.files)+len(s.ignored) > maxIgnoredSeen {
		w.seenPartial.Store(true) // that many: KeepIgnored's own scan names them
	} else {
		w.seen.files = append(w.seen.files, s.ignored...)
		w.seen.nested = append(w.seen.nested, s.nested...)
	}
	w.seenMu.Unlock()
	s.ignored, s.nested = s.ignored[:0], s.nested[:0]
}

// dirKid decides what a directory found on disk is: a gitlink (submodule or nested repository),
// a directory to walk, or nothing (ignored, or an unborn nested repository).
func (w *walker) dirKid(s *scratch, j *dirJob, n *dirNode, ign *ignore.Matcher, attrs *attr.Matcher, fp uint64, fpSame bool, name []byte) (kid, bool, error) {
	fk := findOldKid(s.oldKids, name, false)
	dk := findOldKid(s.oldKids, name, true)
	if dk >= 0 && s.oldKids[dk].sparse() {
		w.seenPartial.Store(true) // KeepIgnored's scan enters it: the walk does not
		ok := &s.oldKids[dk]
		ok.matched = true
		return kid{name: ok.name, e: ok.e, old: ok.e}, true, nil
	}
	var fe *entry
	if fk >= 0 {
		fe = s.oldKids[fk].e
	}
	var path string
	switch {
	case fe != nil:
		path = fe.path
	case dk >= 0:
		path = w.old[s.oldKids[dk].lo].path[:len(n.path)+len(name)+min(len(n.path), 1)]
	default:
		path = joinPath(n.path, name)
	}
	if fe != nil && fe.flags&fTracked != 0 {
		if fe.flags&fSkipWT != 0 {
			w.seenPartial.Store(true) // as for a sparse directory
			s.oldKids[fk].matched = true
			return kid{name: path[len(path)-len(name):], e: fe, old: fe}, true, nil
		}
		if uint32(fe.umode) == modeGitlink {
			s.oldKids[fk].matched = true
			n.volatile = true
			return w.gitlinkKid(s, path, len(name), fe), true, nil
		}
	}
	if dk >= 0 && s.oldKids[dk].tracked {
		// A directory with tracked files is walked even when it holds a .git of its own.
		ok := &s.oldKids[dk]
		ok.matched = true
		return w.childDir(path, len(name), ok.lo, ok.hi, true, ign, attrs, fp, fpSame, ign.Ignored(w.fold(path), true)), true, nil
	}
	if fe != nil && fe.flags&fTracked != 0 {
		// A tracked file replaced by a directory: a repository there becomes a gitlink (git's
		// check_removed); otherwise the file is gone and the directory is untracked.
		n.volatile = true
		if head, _, ok := nestedHead(w.abs(path)); ok {
			s.oldKids[fk].matched = true
			if !ign.Ignored(w.fold(path), true) {
				s.nested = append(s.nested, path) // no submodule: nested, for KeepIgnored
			}
			if fe.flags&fAssumeValid != 0 {
				return kid{name: path[len(path)-len(name):], e: fe, old: fe}, true, nil
			}
			return w.gitlinkAt(s, path, len(name), fe, head), true, nil
		}
	}
	if ign.Ignored(w.fold(path), true) {
		return kid{}, false, nil
	}
	if head, isRepo, ok := nestedHead(w.abs(path)); isRepo {
		n.volatile = true
		s.nested = append(s.nested, path)
		if !ok {
			return kid{}, false, nil // git add refuses a repository without a commit; leave it out
		}
		var old *entry
		if fe != nil && fe.flags&fTracked == 0 {
			old = fe
			s.oldKids[fk].matched = true
		}
		return w.gitlinkAt(s, path, len(name), old, head), true, nil
	}
	lo, hi, had := 0, 0, false
	if dk >= 0 {
		ok := &s.oldKids[dk]
		ok.matched = true
		lo, hi, had = ok.lo, ok.hi, true
	}
	return w.childDir(path, len(name), lo, hi, had, ign, attrs, fp, fpSame, false), true, nil
}

// childDir queues a subdirectory to be walked, or (a watched walk, nothing happened below it)
// takes it whole from the last walk. fpSame says the parent's attribute fingerprint is the one
// the last walk saw.
func (w *walker) childDir(path string, nameLen, lo, hi int, had bool, ign *ignore.Matcher, attrs *attr.Matcher, fp uint64, fpSame, ignored bool) kid {
	c := &dirNode{path: path, name: path[len(path)-nameLen:], info: w.dirInfo(path), hadOld: had}
	if w.reusable(path, c.info, fpSame) {
		c.reused, c.lo, c.hi, c.fp = true, lo, hi, c.info.fp
		return kid{name: c.name, d: c}
	}
	w.push(job{dir: &dirJob{node: c, lo: lo, hi: hi, ign: ign, attrs: attrs, fp: fp, ignored: ignored}})
	return kid{name: c.name, d: c}
}

func typeOfMode(m uint32) uint8 {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return dtReg
	case unix.S_IFDIR:
		return dtDir
	case unix.S_IFLNK:
		return dtLink
	}
	return dtOther
}

// fileKid handles a regular file or symlink whose lstat is in s.st: keep the old entry when its
// stat data still matches, otherwise queue the file to be read.
func (w *walker) fileKid(s *scratch, path string, nameLen int, e *entry, typ uint8, fpSame bool) kid {
	k := kid{name: path[len(path)-nameLen:], old: e}
	if e != nil && e.flags&(fSkipWT|fAssumeValid) != 0 && e.mode != 0 {
		k.e = e // kept as in the user's index while the path exists
		return k
	}
	sd := statFromUnix(&s.st)
	var verify *entry
	if e != nil && e.mode != 0 && e.mode != modeGitlink && w.unchanged(e, &sd, fpSame) {
		if e.flags&fHashed != 0 || e.st.matches(&sd, w.fileMode) {
			k.e = e
			return k
		}
		// git calls it unchanged but the exact stat data differs (a rewrite within the same
		// second, say). The tree keeps git's answer; reading the file once tells whether the
		// exact stat data may be recorded (same content) or the user's must stay, so that
		// Restore's exact check still protects content the snapshot does not hold.
		verify = e
	}
	ne := s.newEntry()
	if e != nil {
		*ne = *e
	} else {
		*ne = entry{}
	}
	ne.path = path
	ne.st = sd
	ne.mode = 0
	ne.blob = plumbing.ZeroHash
	ne.flags = ne.flags&^(fCRCalled|fCRValue) | fHashed
	w.newEntries.Add(1)
	k.e = ne
	s.items = append(s.items, hashItem{e: ne, typ: typ, verify: verify})
	return k
}

// fold and foldBytes implement core.ignoreCase for ignore matching by lowercasing both the
// patterns and the paths (the ignore package matches case-sensitively). Only ASCII-and-Unicode
// case folding of plain text: a pattern like [[:upper:]] would not survive it.
func (w *walker) fold(p string) string {
	if !w.set.ignoreCase {
		return p
	}
	return strings.ToLower(p)
}

func (w *walker) foldBytes(b []byte) []byte {
	if !w.set.ignoreCase {
		return b
	}
	return bytes.ToLower(b)
}

// unchanged decides whether e still describes the file whose fresh stat data is sd. Content
// mulligan read itself is trusted on an exact match only (and only under the same attributes);
// content from the user's index is judged the way git judges it, blind spots included, because
// the snapshot must be what `git add -A` makes of that index.
func (w *walker) unchanged(e *entry, sd *statData, fpSame bool) bool {
	if e.flags&fHashed != 0 {
		// Content mulligan hashed itself may be in no ref yet (an untracked file only a dry run
		// saw), and `git gc` prunes such objects: the entry is trusted only while its blob is
		// still there, or the next snapshot would name an object that no longer exists. A blob
		// the user's index names is (the index is one of gc's roots; a changed index reseeds
		// the entries first): a file a reset or restore rewrote with the index's content, most
		// of a tree after a few runs, costs no look in the object store.
		return fpSame && e.st.matches(sd, w.fileMode) &&
			(e.mode == modeGitlink || e.ub != nil && *e.ub == e.blob || w.r.objs.has(e.blob))
	}
	if e.st.size == 0 && e.blob != emptyBlob {
		return false // git's racily-smudged entry
	}
	return e.st.gitMatches(sd, w.fileMode, w.set.trustCtime, w.set.checkStat)
}

// gitlinkKid handles a tracked gitlink whose directory exists: its checked-out HEAD, or the
// index's commit when the submodule is not checked out.
func (w *walker) gitlinkKid(s *scratch, path string, nameLen int, e *entry) kid {
	head, _, ok := nestedHead(w.abs(path))
	if !ok {
		head = e.userBlob()
	}
	return w.gitlinkAt(s, path, nameLen, e, head)
}

func (w *walker) gitlinkAt(s *scratch, path string, nameLen int, e *entry, head plumbing.Hash) kid {
	k := kid{name: path[len(path)-nameLen:], old: e}
	if e != nil && e.mode == modeGitlink && e.blob == head {
		k.e = e
		return k
	}
	ne := s.newEntry()
	if e != nil {
		*ne = *e
	} else {
		*ne = entry{}
	}
	ne.path = path
	ne.st = statData{}
	ne.mode = modeGitlink
	ne.blob = head
	ne.flags &^= fHashed | fCRCalled | fCRValue
	w.newEntries.Add(1)
	k.e = ne
	return k
}

// nestedHead reports whether dir holds a repository (.git directory or gitdir file) and the
// commit its HEAD resolves to.
func nestedHead(dir string) (head plumbing.Hash, isRepo, ok bool) {
	gd, found, err := resolveDotGit(filepath.Join(dir, ".git"))
	if err != nil || !found {
		return plumbing.ZeroHash, false, false
	}
	sub := &Repo{gitDir: gd, commonDir: commonDirOf(gd)}
	h, found, err := sub.resolveRef("HEAD")
	if err != nil || !found {
		return plumbing.ZeroHash, true, false
	}
	return h, true, true
}

// doIgnoredDir handles a directory git does not descend into for untracked files: only the
// tracked paths recorded below it are looked at.
func (w *walker) doIgnoredDir(s *scratch, j *dirJob, fd int, attrs *attr.Matcher, fp uint64) error {
	n := j.node
	fpSame := n.info != nil && n.info.fp == fp
	kids := s.kids[:0]
	s.items = s.items[:0]
	for i := range s.oldKids {
		ok := &s.oldKids[i]
		if ok.isDir && !ok.tracked || !ok.isDir && ok.e.flags&fTracked == 0 {
			continue
		}
		if ok.e != nil && ok.e.flags&fSkipWT != 0 {
			ok.matched = true
			kids = append(kids, kid{name: ok.name, e: ok.e, old: ok.e})
			continue
		}
		if err := fstatat(fd, s.cString(ok.name), &s.st); err != nil {
			if err == unix.ENOENT || err == unix.ENOTDIR {
				continue
			}
			return fmt.Errorf("lstat %s: %w", w.abs(joinPath(n.path, []byte(ok.name))), err)
		}
		typ := typeOfMode(uint32(s.st.Mode))
		switch {
		case ok.isDir && typ == dtDir:
			ok.matched = true
			path := w.old[ok.lo].path[:len(n.path)+len(ok.name)+min(len(n.path), 1)]
			kids = append(kids, w.childDir(path, len(ok.name), ok.lo, ok.hi, true, j.ign, attrs, fp, fpSame, true))
		case ok.isDir:
			// replaced by a file: the tracked paths below are gone (the file itself is ignored)
		case typ == dtReg || typ == dtLink:
			ok.matched = true
			kids = append(kids, w.fileKid(s, ok.e.path, len(ok.name), ok.e, typ, fpSame))
		case typ == dtDir:
			n.volatile = true
			if uint32(ok.e.umode) == modeGitlink {
				ok.matched = true
				kids = append(kids, w.gitlinkKid(s, ok.e.path, len(ok.name), ok.e))
			} else if head, _, found := nestedHead(w.abs(ok.e.path)); found {
				ok.matched = true
				if ok.e.flags&fAssumeValid != 0 {
					kids = append(kids, kid{name: ok.name, e: ok.e, old: ok.e})
				} else {
					kids = append(kids, w.gitlinkAt(s, ok.e.path, len(ok.name), ok.e, head))
				}
			}
		}
	}
	return w.finishDir(s, n, kids, j.lo, j.hi, fd, attrs, fp)
}

// finishDir keeps the skip-worktree paths disk does not show, orders the kids as a tree and
// reads the files that need it.
func (w *walker) finishDir(s *scratch, n *dirNode, kids []kid, lo, hi int, fd int, attrs *attr.Matcher, fp uint64) error {
	for i := range s.oldKids {
		ok := &s.oldKids[i]
		if ok.matched {
			continue
		}
		if k, kept := w.keepOld(s, n, ok); kept {
			ok.matched = true
			kids = append(kids, k)
			continue
		}
		n.unmatchedOld = true
	}
	if w.unchangedLeaf(s, n, kids, lo, hi) {
		// Nothing to keep but the range: a clean walk allocates per changed directory only.
		n.reused, n.leaf, n.lo, n.hi = true, true, lo, hi
		s.kids = kids[:0]
		return nil
	}
	slices.SortFunc(kids, func(a, b kid) int { return treeCompare(a.name, a.isDir(), b.name, b.isDir()) })
	n.kids = slices.Clone(kids)
	s.kids = kids[:0]
	if len(s.items) == 0 {
		return nil
	}
	if len(s.items) <= 16 {
		for _, it := range s.items {
			if err := w.hashItem(s, fd, it, attrs); err != nil {
				return err
			}
		}
		return nil
	}
	// Many changed files in one directory: spread them over the workers.
	for len(s.items) > 0 {
		m := min(len(s.items), 32)
		items := slices.Clone(s.items[:m])
		s.items = s.items[m:]
		w.push(job{hash: &hashJob{node: n, items: items, attrs: attrs, fp: fp}})
	}
	return nil
}

func (w *walker) doHashJob(s *scratch, h *hashJob) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	fd, err := unix.Open(w.abs(h.node.path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT || err == unix.ENOTDIR || err == unix.ELOOP {
			for _, it := range h.items {
				it.e.mode = 0
			}
			return nil
		}
		return fmt.Errorf("open directory %s: %w", w.abs(h.node.path), err)
	}
	defer unix.Close(fd)
	for _, it := range h.items {
		if err := w.hashItem(s, fd, it, h.attrs); err != nil {
			return err
		}
	}
	return nil
}

// keepOld decides what becomes of an old child that disk no longer shows: a skip-worktree entry
// stays as the user's index has it, a tracked file stays as an absent entry (mode 0: in no tree,
// but the next walk that finds the file again knows the user's index tracks it, as `git add -A`
// does), and a directory keeps whichever of those it held. Untracked paths simply go.
func (w *walker) keepOld(s *scratch, n *dirNode, ok *oldKid) (kid, bool) {
	switch {
	case ok.e != nil && ok.e.flags&fSkipWT != 0:
		return kid{name: ok.name, e: ok.e, old: ok.e}, true
	case ok.isDir && ok.e == nil:
		path := w.old[ok.lo].path[:len(n.path)+len(ok.name)+min(len(n.path), 1)]
		if c := w.absentDir(s, path, len(ok.name), ok.lo, ok.hi); c != nil {
			return kid{name: c.name, d: c}, true
		}
	case !ok.isDir && ok.e.flags&fTracked != 0:
		return kid{name: ok.name, e: absentEntry(s, ok.e), old: ok.e}, true
	}
	return kid{}, false
}

// absentEntry is e as a tracked path missing from disk: no content, no stat data.
func absentEntry(s *scratch, e *entry) *entry {
	if e.mode == 0 && e.st == (statData{}) && e.blob.IsZero() {
		return e
	}
	ne := s.newEntry()
	*ne = *e
	ne.mode, ne.st, ne.blob = 0, statData{}, plumbing.ZeroHash
	ne.flags &^= fHashed | fCRCalled | fCRValue
	return ne
}

// keepAbsent fills a directory missing from disk with the old entries it keeps (keepOld).
func (w *walker) keepAbsent(s *scratch, n *dirNode, kids []oldKid) {
	var out []kid
	for i := range kids {
		if k, kept := w.keepOld(s, n, &kids[i]); kept {
			out = append(out, k)
			continue
		}
		n.unmatchedOld = true
	}
	n.kids = out
}

// absentDir builds the node of a directory missing from disk, holding its skip-worktree entries
// (a sparse checkout leaves whole directories out) and its tracked paths as absent entries; nil
// when there are none.
func (w *walker) absentDir(s *scratch, path string, nameLen, lo, hi int) *dirNode {
	any := false
	for i := lo; i < hi; i++ {
		if w.old[i].flags&(fSkipWT|fTracked) != 0 {
			any = true
			break
		}
	}
	if !any {
		return nil
	}
	c := &dirNode{path: path, name: path[len(path)-nameLen:], info: w.dirInfo(path), hadOld: true}
	if c.info != nil {
		c.fp = c.info.fp
	}
	w.keepAbsent(s, c, w.collectOldKids(nil, lo, hi, len(path)+1))
	return c
}

// fileModeFor is the mode `git add` records for a file (git's ce_mode_from_stat).
func (w *walker) fileModeFor(canon uint32, e *entry) uint32 {
	if canon == modeSymlink {
		return modeSymlink
	}
	tracked := e.flags&fTracked != 0
	if !w.set.symlinks && tracked && uint32(e.umode) == modeSymlink {
		return modeSymlink
	}
	if !w.set.fileMode {
		if tracked && (uint32(e.umode) == modeRegular || uint32(e.umode) == modeExec) {
			return uint32(e.umode)
		}
		return modeRegular
	}
	return canon
}

// unchangedLeaf reports whether the directory just read is exactly what the old entries
// old[lo:hi] say: no subdirectory, every kid the old entry itself, none gone, nothing to read,
// and the old tree id still valid under the same attributes.
func (w *walker) unchangedLeaf(s *scratch, n *dirNode, kids []kid, lo, hi int) bool {
	if len(s.items) > 0 || n.unmatchedOld || n.volatile || n.info == nil || !n.info.valid || n.info.fp != n.fp || len(kids) != hi-lo {
		return false
	}
	for i := range kids {
		if k := &kids[i]; k.d != nil || k.old == nil || k.e != k.old {
			return false
		}
	}
	return true
}

// errVanished means a file disappeared between readdir and read: it is simply not in the tree.
var errVanished = errors.New("vanished")
