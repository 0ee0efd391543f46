package odb

import (
	"bufio"
	"compress/zlib"
	"crypto/sha1"
	"errors"

	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"
)

// looseWriter writes one loose object the way git does, so that a `git gc` or `git repack`
// running at the same time cannot break it:
//
//   - the content is compressed into a temporary file directly in objects/, named so that git's
//     own `prune` (which removes tmp_* files, at once under --prune=now) leaves it alone;
//   - the finished file is renamed to objects/xx/yyyy…; when git removed the xx directory meanwhile
//     (prune and prune-packed remove the fan-out directories they empty), it is made again and the
//     rename retried, as git's finalize_object_file does;
//   - on any error (a full disk, a read error, content that changed while read) the temporary
//     file is removed on the spot; the files of a writer that was killed are removed by the next
//     process that writes an object (sweepTemps).
type looseWriter struct {
	s    *Store
	f    *os.File
	path string
	buf  *bufio.Writer
	zw   *zlib.Writer
	h    hash.Hash
	err  error // the first write error
}

// LooseTempPrefix starts the name of a loose object being written (objects/<prefix><pid>-<n>).
const LooseTempPrefix = "mulligan-obj-"

var looseSeq atomic.Uint64

// newLooseWriter starts a loose object of total bytes (header and content).
func (s *Store) newLooseWriter(total int64) (*looseWriter, error) {
	s.sweep.Do(func() { sweepTemps(s.dir) })
	name := LooseTempPrefix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(looseSeq.Add(1), 36)
	path := filepath.Join(s.dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if errors.Is(err, fs.ErrNotExist) {
		// objects/ itself is missing (a hand-made repository): git makes it too.
		if err = os.MkdirAll(s.dir, 0o755); err == nil {
			f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
		}
	}
	if err != nil {
		return nil, err
	}
	w := &looseWriter{s: s, f: f, path: path, h: sha1.New()}
	if c, ok := compressors.Get().(*compressor); ok {
		w.buf, w.zw = c.buf, c.zw
		w.buf.Reset(f)
		w.zw.Reset(w.buf)
	} else {
		w.buf = bufio.NewWriterSize(f, 64<<10)
		w.zw, _ = zlib.NewWriterLevel(w.buf, zlib.BestSpeed) // git's core.looseCompression default
	}
	return w, nil
}

// compressor is a writer's buffer and zlib state (some 400 KB), reused by the next writer: a run
// writes a few hundred objects (trees, commits, changed files).
type compressor struct {
	buf *bufio.Writer
	zw  *zlib.Writer
}

var compressors sync.Pool

// release hands the writer's buffer and compressor to the next one.
func (w *looseWriter) release() {
	if w.zw == nil {
		return
	}
	w.buf.Reset(nil)
	compressors.Put(&compressor{buf: w.buf, zw: w.zw})
	w.buf, w.zw = nil, nil
}

func (w *looseWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	w.h.Write(p)
	if _, err := w.zw.Write(p); err != nil {
		w.err = err
		return 0, err
	}
	return len(p), nil
}

// abort removes the temporary file.
func (w *looseWriter) abort() {
	w.f.Close()
	os.Remove(w.path)
	w.release()
}

// finish completes the object and moves it into place; an object that already exists is kept
// as it is.
func (w *looseWriter) finish() (plumbing.Hash, error) {
	var id plumbing.Hash
	w.h.Sum(id[:0])
	err := w.err
	switch {
	case err != nil:
	default:
		if err = w.zw.Close(); err == nil {
			err = w.buf.Flush()
		}
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.release()
	if err != nil {
		os.Remove(w.path)
		return id, err
	}
	if err := w.s.place(w.path, w.s.loosePath(id)); err != nil {
		os.Remove(w.path)
		return id, err
	}
	return id, nil
}

// place renames the finished temporary file tmp to dst, making dst's directory when a concurrent
// gc removed it (a few times: each retry means gc emptied it again in between).
func (s *Store) place(tmp, dst string) error {
	var err error
	for try := 0; try < 20; try++ {
		if _, serr := os.Lstat(dst); serr == nil {
			os.Remove(tmp) // the same content is there already
			return nil
		}
		if err = os.Rename(tmp, dst); err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if _, serr := os.Lstat(tmp); serr != nil {
			return err // our own file is gone: nothing to retry with
		}
		if merr := os.Mkdir(filepath.Dir(dst), 0o755); merr != nil && !errors.Is(merr, fs.ErrExist) {
			return merr
		}
	}
	return err
}

// sweepTemps removes what killed writers left: mulligan's temporary object files whose process is
// gone, and the tmp_obj_* files an older mulligan (writing through go-git) left in objects/pack
// after an error (git itself never names a file there so, and would keep them for two weeks).
func sweepTemps(objDir string) {
	if ents, err := os.ReadDir(objDir); err == nil {
		for _, e := range ents {
			rest, ok := strings.CutPrefix(e.Name(), LooseTempPrefix)
			if !ok {
				continue
			}
			pid, _, _ := strings.Cut(rest, "-")
			if n, err := strconv.Atoi(pid); err == nil && n > 0 && !processAlive(n) {
				os.Remove(filepath.Join(objDir, e.Name()))
			}
		}
	}
	pack := filepath.Join(objDir, "pack")
	if ents, err := os.ReadDir(pack); err == nil {
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), "tmp_obj_") {
				continue
			}
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Hour {
				os.Remove(filepath.Join(pack, e.Name()))
			}
		}
	}
}

// processAlive reports whether a process with this id exists (EPERM: it does, someone else's).
func processAlive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	err := unix.Kill(pid, 0)
	return err == nil || err == unix.EPERM
}
