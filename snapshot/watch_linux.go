//go:build linux

package snapshot

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watcher follows the working tree's directories with inotify between walks: every directory a
// walk reads is watched before it is read, so whatever happens in it afterwards (a file written,
// created, deleted, renamed, chmod'ed) marks it dirty, and the next walk re-reads only the dirty
// directories and reuses the rest of the previous walk. Anything that makes the events
// incomplete (the kernel's queue overflowed, a watch could not be added, a read failed) makes the
// next walk a full one; a watch that cannot be set up at all ends watching for good.
//
// Blind spots, shared with git's fsmonitor: writes through a shared mapping (mmap) and writes
// through a hard link outside the tree raise no event in the file's directory.
type watcher struct {
	fd     int // inotify, non-blocking
	stopfd int // eventfd: wakes the reader to end
	done   chan struct{}

	mu      sync.Mutex
	wdPath  map[int32]string
	pathWd  map[string]int32
	dirty   map[string]struct{} // directories something happened in since the last take
	lost    bool                // events were lost (queue overflow): the next walk is full
	special bool                // a .gitignore or .gitattributes changed: the next walk is full
	dead    error               // watching cannot go on: walks are full from now on
	events  uint64              // events seen since watching began (never reset by a take)
	buf     []byte
}

// watchMask is every change that can alter what a walk of the directory finds.
const watchMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM |
	unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// testHookNoWatch, when set (tests only), makes starting a watch fail as it does where inotify
// is missing or its limits are reached.
var testHookNoWatch bool

func newWatcher() (*watcher, error) {
	if testHookNoWatch {
		return nil, errors.New("watching disabled by a test")
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	w := &watcher{fd: fd, stopfd: stop, done: make(chan struct{}),
		wdPath: map[int32]string{}, pathWd: map[string]int32{}, dirty: map[string]struct{}{},
		buf: make([]byte, 64<<10)}
	go w.loop()
	return w, nil
}

// loop drains the events as they come, so the kernel's queue does not overflow while an agent
// works; it holds the lock only while it reads and records.
func (w *watcher) loop() {
	defer close(w.done)
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.stopfd), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		_, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			w.mu.Lock()
			w.fail(fmt.Errorf("poll: %w", err))
			w.mu.Unlock()
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		w.mu.Lock()
		w.drainLocked()
		w.mu.Unlock()
	}
}

func (w *watcher) fail(err error) {
	if w.dead == nil {
		w.dead = err
	}
}

// drainLocked reads every queued event. Reads happen only under the lock, so once a take has
// drained the queue, every change made before it is recorded.
func (w *watcher) drainLocked() {
	for {
		n, err := unix.Read(w.fd, w.buf)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return
		}
		if err != nil || n <= 0 {
			w.fail(fmt.Errorf("read inotify events: %v", err))
			return
		}
		w.parse(w.buf[:n])
	}
}

func (w *watcher) parse(b []byte) {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(b) {
			w.lost = true
			return
		}
		name := b[unix.SizeofInotifyEvent:end]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		b = b[end:]
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
			w.lost = true
			continue
		}
		dir, ok := w.wdPath[ev.Wd]
		if !ok {
			continue // a watch already dropped
		}
		if s := string(name); s == ".gitignore" || s == ".gitattributes" {
			w.special = true
		}
		w.dirty[dir] = struct{}{}
		w.events++
		if ev.Mask&unix.IN_IGNORED != 0 {
			// The directory is gone (or moved off the file system): its watch with it.
			delete(w.wdPath, ev.Wd)
			if w.pathWd[dir] == ev.Wd {
				delete(w.pathWd, dir)
			}
		}
	}
}

// add watches the directory open as dirfd (path relative to the root), before the walk reads it.
// It watches the very directory that was opened (through /proc/self/fd), never whatever the path
// names a moment later. A failure ends watching: the walks after this one are full.
func (w *watcher) add(dirfd int, path string) {
	var b [32]byte
	p := append(strconv.AppendInt(append(b[:0], "/proc/self/fd/"...), int64(dirfd), 10), 0)
	wd, err := inotifyAddWatch(w.fd, p, watchMask)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		switch err {
		case unix.ENOSPC:
			w.fail(fmt.Errorf("inotify watch limit reached (fs.inotify.max_user_watches)"))
		case unix.ENOENT:
			w.lost = true // removed as it was read: the next walk is full, watching goes on
		default:
			w.fail(fmt.Errorf("inotify_add_watch %s: %w", path, err))
		}
		return
	}
	if old, ok := w.wdPath[int32(wd)]; ok && old != path && w.pathWd[old] == int32(wd) {
		// The same directory, moved: its old path no longer names it.
		delete(w.pathWd, old)
		w.dirty[old] = struct{}{}
	}
	w.wdPath[int32(wd)] = path
	w.pathWd[path] = int32(wd)
}

// watched reports whether path's directory has had a watch since it was last read.
func (w *watcher) watched(path string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.pathWd[path]
	return ok
}

// changes is what a take found: the dirty directories, or full when the next walk cannot trust
// the events.
type changes struct {
	dirty map[string]struct{}
	full  string // why the walk must be full ("" when the dirty set is complete)
}

// take drains the queue and hands over (and resets) what happened since the last take.
func (w *watcher) take() (changes, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drainLocked()
	if w.dead != nil {
		return changes{}, w.dead
	}
	c := changes{dirty: w.dirty}
	switch {
	case w.lost:
		c.full = "inotify queue overflowed"
	case w.special:
		c.full = "a .gitignore or .gitattributes changed"
	}
	w.dirty, w.lost, w.special = map[string]struct{}{}, false, false
	return c, nil
}

// quiet reports whether nothing has happened in the watched directories since the last take
// (every event queued so far is read first): the tree is as the last walk saw it.
func (w *watcher) quiet() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drainLocked()
	return w.dead == nil && !w.lost && !w.special && len(w.dirty) == 0
}

// count drains the queue and returns how many events it has seen since watching began.
func (w *watcher) count() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drainLocked()
	return w.events
}

func (w *watcher) close() {
	var one = [8]byte{1}
	unix.Write(w.stopfd, one[:])
	<-w.done
	unix.Close(w.fd)
	unix.Close(w.stopfd)
}

// inotifyAddWatch is inotify_add_watch(2) on a NUL-terminated path, without the allocation
// unix.InotifyAddWatch makes to convert a string: one call per directory of the tree.
func inotifyAddWatch(fd int, path []byte, mask uint32) (int, error) {
	for {
		wd, _, e := unix.Syscall(unix.SYS_INOTIFY_ADD_WATCH, uintptr(fd), uintptr(unsafe.Pointer(&path[0])), uintptr(mask))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return -1, e
		}
		return int(wd), nil
	}
}
