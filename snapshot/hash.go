package snapshot

import (
	"crypto/sha1"
	"errors"
	"fmt"
	"github.com/mulligan-dev/mulligan/snapshot/internal/odb"
	"hash/fnv"
	"io"
	"os"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/mulligan-dev/mulligan/snapshot/attr"
)

// smallBlob is the size up to which content is read into memory once (hash, then write from the
// same buffer); larger files are read twice (hash, then stream) so memory stays bounded.
const smallBlob = 1 << 20

// mixFP chains a directory's attribute fingerprint: its parent's, then the bytes of its
// .gitattributes. A changed fingerprint means files hashed under the old one must be read again.
func mixFP(parent uint64, data []byte) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(parent >> (8 * i))
	}
	h.Write(b[:])
	h.Write(data)
	return h.Sum64()
}

func (w *walker) hashItem(s *scratch, dirfd int, it hashItem, attrs *attr.Matcher) error {
	if err := w.hashEntry(s, dirfd, it.e, it.typ, attrs); err != nil {
		return err
	}
	if v := it.verify; v != nil && (it.e.mode != v.mode || it.e.blob != v.blob) {
		*it.e = *v // git's blind spot: the snapshot is what git add -A makes, the user's stat stays
	}
	return nil
}

// hashEntry reads one file or symlink (named by e.path, in the directory open as dirfd) into a
// blob, applying clean filters and eol conversion as `git add` does. A file that changes while
// it is read is read again.
func (w *walker) hashEntry(s *scratch, dirfd int, e *entry, typ uint8, attrs *attr.Matcher) error {
	name := baseName(e.path)
	for attempt := 0; ; attempt++ {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		err := w.hashOnce(s, dirfd, name, e, typ, attrs)
		switch {
		case err == nil:
			w.hashed.Add(1)
			return nil
		case errors.Is(err, errVanished):
			e.mode = 0
			return nil
		case errors.Is(err, odb.ErrChangedWhileReading) && attempt < 3:
			// Re-lstat: the type may have changed too.
			if serr := fstatat(dirfd, s.cString(name), &s.st); serr != nil {
				e.mode = 0
				return nil
			}
			typ = typeOfMode(uint32(s.st.Mode))
			if typ != dtReg && typ != dtLink {
				e.mode = 0
				return nil
			}
			e.st = statFromUnix(&s.st)
			continue
		default:
			return fmt.Errorf("read %s: %w", w.abs(e.path), err)
		}
	}
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

func (w *walker) hashOnce(s *scratch, dirfd int, name string, e *entry, typ uint8, attrs *attr.Matcher) error {
	if typ == dtLink {
		// The blob of a symlink is its target text, never the content it points to.
		buf := s.buf[:cap(s.buf)]
		if len(buf) < 4096 {
			buf = make([]byte, 4096)
		}
		for {
			n, err := unix.Readlinkat(dirfd, name, buf)
			if err != nil {
				if err == unix.ENOENT {
					return errVanished
				}
				if err == unix.EINVAL {
					return odb.ErrChangedWhileReading // no longer a symlink
				}
				return err
			}
			if n < len(buf) {
				buf = buf[:n]
				break
			}
			buf = make([]byte, 2*len(buf))
		}
		s.buf = buf[:0]
		e.mode = modeSymlink
		id, err := w.r.objs.WriteBytes(plumbing.BlobObject, buf)
		if err != nil {
			return err
		}
		e.blob = id
		return nil
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		if err == unix.ENOENT {
			return errVanished
		}
		if err == unix.ELOOP {
			return odb.ErrChangedWhileReading // became a symlink
		}
		return err
	}
	f := os.NewFile(uintptr(fd), e.path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return odb.ErrChangedWhileReading
	}
	sd := statFromUnix(&st)
	e.st = sd
	e.mode = w.fileModeFor(sd.mode, e)

	a := attrs.Lookup(e.path)
	var id plumbing.Hash
	if w.conv.NeedsClean(a) {
		id, err = w.hashCleaned(s, f, e, a)
	} else {
		id, err = w.hashRaw(s, f, st.Size)
	}
	if err != nil {
		return err
	}
	// Like git, the stat data recorded is from before the read: if the file changes while it is
	// read, the next snapshot (and Restore's conflict check) sees different stat data.
	e.blob = id
	return nil
}

func (w *walker) hashRaw(s *scratch, f *os.File, size int64) (plumbing.Hash, error) {
	if size <= smallBlob {
		if int64(cap(s.buf)) < size+1 {
			s.buf = make([]byte, 0, size+1)
		}
		buf := s.buf[:size+1]
		n, err := io.ReadFull(f, buf)
		if err != io.ErrUnexpectedEOF && err != nil && err != io.EOF {
			return plumbing.ZeroHash, err
		}
		if int64(n) != size {
			return plumbing.ZeroHash, odb.ErrChangedWhileReading
		}
		return w.r.objs.WriteBytes(plumbing.BlobObject, buf[:n])
	}
	h := sha1.New()
	odb.WriteHeader(h, plumbing.BlobObject, size)
	n, err := io.Copy(h, f)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if n != size {
		return plumbing.ZeroHash, odb.ErrChangedWhileReading
	}
	var id plumbing.Hash
	h.Sum(id[:0])
	if w.r.objs.Has(id) {
		return id, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return plumbing.ZeroHash, err
	}
	return id, w.r.objs.WriteKnown(plumbing.BlobObject, id, size, f)
}

func (w *walker) hashCleaned(s *scratch, f *os.File, e *entry, a attr.Attrs) (plumbing.Hash, error) {
	crlf := func() bool {
		v := w.r.indexHasCRLF(e)
		e.flags |= fCRCalled
		if v {
			e.flags |= fCRValue
		} else {
			e.flags &^= fCRValue
		}
		return v
	}
	rc, size, err := w.conv.Clean(w.fctx, e.path, a, f, crlf)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer rc.Close()
	if size <= smallBlob {
		if int64(cap(s.buf)) < size+1 {
			s.buf = make([]byte, 0, size+1)
		}
		buf := s.buf[:size+1]
		n, err := io.ReadFull(rc, buf)
		if err != io.ErrUnexpectedEOF && err != nil && err != io.EOF {
			return plumbing.ZeroHash, err
		}
		if int64(n) != size {
			return plumbing.ZeroHash, fmt.Errorf("clean conversion produced %d bytes, announced %d", n, size)
		}
		return w.r.objs.WriteBytes(plumbing.BlobObject, buf[:n])
	}
	return w.r.objs.WriteStream(plumbing.BlobObject, size, rc)
}

// indexHasCRLF is git's has_crlf_in_index: whether the user's index blob for the path is text
// containing CRLF (for a conflict, the "ours" stage).
func (r *Repo) indexHasCRLF(e *entry) bool {
	if e.flags&fTracked == 0 || e.ub == nil || uint32(e.umode) == modeGitlink || e.flags&fITA != 0 {
		return false
	}
	var st textStats
	err := r.withBlob(*e.ub, func(rd io.Reader) error {
		buf := make([]byte, 32<<10)
		for {
			n, err := rd.Read(buf)
			st.add(buf[:n])
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	})
	return err == nil && st.crlf > 0 && !st.binary()
}

// textStats is git's gather_stats (convert.c), fed in chunks.
type textStats struct {
	nul, lonecr, lonelf, crlf, printable, nonprintable int
	pendingCR                                          bool
	last                                               byte
	size                                               int
}

func (t *textStats) add(b []byte) {
	for _, c := range b {
		if t.pendingCR {
			t.pendingCR = false
			if c == '\n' {
				t.crlf++
				t.last = c
				t.size++
				continue
			}
			t.lonecr++
		}
		t.size++
		t.last = c
		switch {
		case c == '\r':
			t.pendingCR = true
		case c == '\n':
			t.lonelf++
		case c == 127:
			t.nonprintable++
		case c < 32:
			switch c {
			case '\b', '\t', '\033', '\014':
				t.printable++
			case 0:
				t.nul++
				t.nonprintable++
			default:
				t.nonprintable++
			}
		default:
			t.printable++
		}
	}
}

func (t *textStats) binary() bool {
	lonecr := t.lonecr
	if t.pendingCR {
		lonecr++
	}
	nonprintable := t.nonprintable
	if t.size > 0 && t.last == '\032' {
		nonprintable--
	}
	return lonecr > 0 || t.nul > 0 || (t.printable>>7) < nonprintable
}

// withBlob streams a blob's content to fn.
func (r *Repo) withBlob(h plumbing.Hash, fn func(io.Reader) error) error {
	obj, err := r.encodedObject(plumbing.BlobObject, h)
	if err != nil {
		return err
	}
	rd, err := obj.Reader()
	if err != nil {
		// The pack the object was found in went away before it was opened (a concurrent repack).
		r.objs.ReloadPacks()
		if obj, err = r.encodedObject(plumbing.BlobObject, h); err != nil {
			return err
		}
		if rd, err = obj.Reader(); err != nil {
			return err
		}
	}
	defer rd.Close()
	return fn(rd)
}
