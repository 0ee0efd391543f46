package odb

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Reading any object, of any size, from the store and its alternates (what go-git's storage did
// for mulligan before: its configuration, URL and file-system packages were ~1 ms of every
// process's start). Objects up to maxPackedRead are read whole (looseread.go, packread.go);
// larger ones are streamed when stored whole — loose, or packed without a delta — and built in
// memory when packed as a delta, as git builds them.

// largeRead bounds a packed delta's result read whole (it is built in memory either way).
const largeRead = 1 << 40

// maxAlternateDepth bounds chains of alternates (git's own limit is 5).
const maxAlternateDepth = 5

// Object reads object h: from this store, else from its alternates. A read that finds it
// nowhere, or whose file went away under it, lists the packs again and retries, a few times, in
// case a concurrent `git gc` or `git repack` moved it between two of its steps.
func (s *Store) Object(h plumbing.Hash) (plumbing.EncodedObject, error) {
	var err error
	for try := 0; ; try++ {
		var obj plumbing.EncodedObject
		obj, err = s.objectIn(h, 0)
		moved := errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, fs.ErrNotExist)
		if err == nil || !moved {
			return obj, err
		}
		if try == 3 {
			if s.promisor != "" && errors.Is(err, plumbing.ErrObjectNotFound) {
				return nil, &NotFetchedError{ID: h, Remote: s.promisor}
			}
			return obj, err
		}
		time.Sleep(time.Duration(try+1) * 20 * time.Millisecond)
		s.ReloadPacks()
	}
}

func (s *Store) objectIn(h plumbing.Hash, depth int) (plumbing.EncodedObject, error) {
	t, data, err := s.readLoose(h)
	switch {
	case err == nil:
		return memObject(t, data), nil
	case errors.Is(err, errLooseTooLarge):
		return s.streamLoose(h)
	case !errors.Is(err, errNotLoose):
		return nil, err
	}
	t, data, err = s.readPacked(h)
	switch {
	case err == nil:
		return memObject(t, data), nil
	case errors.Is(err, errPackedTooLarge):
		return s.largePacked(h)
	case !errors.Is(err, errNotPacked):
		return nil, err
	}
	if depth < maxAlternateDepth {
		for _, a := range s.alternates() {
			if obj, err := a.objectIn(h, depth+1); !errors.Is(err, plumbing.ErrObjectNotFound) {
				return obj, err
			}
		}
	}
	return nil, plumbing.ErrObjectNotFound
}

func memObject(t plumbing.ObjectType, data []byte) plumbing.EncodedObject {
	obj := &plumbing.MemoryObject{}
	obj.SetType(t)
	obj.Write(data)
	return obj
}

// streamObject is an object read as a stream each time its Reader is asked for: a large loose
// object, or a large packed one stored whole.
type streamObject struct {
	h    plumbing.Hash
	t    plumbing.ObjectType
	size int64
	open func() (io.ReadCloser, error)
}

func (o *streamObject) Hash() plumbing.Hash             { return o.h }
func (o *streamObject) Type() plumbing.ObjectType       { return o.t }
func (o *streamObject) SetType(t plumbing.ObjectType)   { o.t = t }
func (o *streamObject) Size() int64                     { return o.size }
func (o *streamObject) SetSize(n int64)                 { o.size = n }
func (o *streamObject) Reader() (io.ReadCloser, error)  { return o.open() }
func (o *streamObject) Writer() (io.WriteCloser, error) { return nil, errReadOnlyObject }
func (o *streamObject) String() string                  { return o.t.String() + " " + o.h.String() }

var errReadOnlyObject = errors.New("a stored object is read-only")

// readCloser is a stream whose Close closes what it reads through as well.
type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// streamLoose is loose object h (too large to read whole) as a stream: its header is read now,
// its content each time the object's Reader is asked for.
func (s *Store) streamLoose(h plumbing.Hash) (plumbing.EncodedObject, error) {
	path := s.loosePath(h)
	open := func() (*os.File, io.ReadCloser, plumbing.ObjectType, int64, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, plumbing.InvalidObject, 0, err
		}
		zr, err := zlib.NewReader(bufio.NewReaderSize(f, 64<<10))
		if err != nil {
			f.Close()
			return nil, nil, plumbing.InvalidObject, 0, fmt.Errorf("loose object %s: %w", h, err)
		}
		var hdr [32]byte
		n := 0
		for ; n < len(hdr); n++ {
			if _, err := io.ReadFull(zr, hdr[n:n+1]); err != nil {
				zr.Close()
				f.Close()
				return nil, nil, plumbing.InvalidObject, 0, fmt.Errorf("loose object %s: %w", h, err)
			}
			if hdr[n] == 0 {
				break
			}
		}
		err = fmt.Errorf("loose object %s: bad header", h)
		var t plumbing.ObjectType
		var size int64
		if n < len(hdr) {
			t, size, err = looseHeader(h, hdr[:n])
		}
		if err != nil {
			zr.Close()
			f.Close()
			return nil, nil, plumbing.InvalidObject, 0, err
		}
		return f, zr, t, size, nil
	}
	f, zr, t, size, err := open()
	if err != nil {
		return nil, err
	}
	zr.Close()
	f.Close()
	return &streamObject{h: h, t: t, size: size, open: func() (io.ReadCloser, error) {
		f, zr, _, size, err := open()
		if err != nil {
			return nil, err
		}
		return readCloser{Reader: io.LimitReader(zr, size), close: func() error {
			zr.Close()
			return f.Close()
		}}, nil
	}}, nil
}

// largePacked is packed object h, too large to read whole: streamed when the pack holds it whole,
// built in memory when it is a delta.
func (s *Store) largePacked(h plumbing.Hash) (plumbing.EncodedObject, error) {
	s.packMu.Lock()
	defer s.packMu.Unlock()
	for _, p := range s.packs {
		i, ok := p.find(h)
		if !ok {
			continue
		}
		off := p.offset(i)
		f, err := p.packFile()
		if err != nil {
			return nil, err
		}
		var hdr [16]byte
		n, err := f.ReadAt(hdr[:], int64(off))
		if n == 0 {
			return nil, fmt.Errorf("%s at %d: %w", p.path, off, err)
		}
		br := bytes.NewReader(hdr[:n])
		typ, size, err := packEntryHeader(br)
		if err != nil {
			return nil, fmt.Errorf("%s at %d: %w", p.path, off, err)
		}
		switch typ {
		case packCommit, packTree, packBlob, packTag:
			data := int64(off) + int64(n-br.Len())
			return &streamObject{h: h, t: plumbing.ObjectType(typ), size: int64(size), open: func() (io.ReadCloser, error) {
				zr, err := getInflater(bufio.NewReaderSize(io.NewSectionReader(f, data, 1<<62), 64<<10))
				if err != nil {
					return nil, fmt.Errorf("%s at %d: %w", p.path, off, err)
				}
				return readCloser{Reader: io.LimitReader(zr, int64(size)), close: func() error {
					putInflater(zr)
					return nil
				}}, nil
			}}, nil
		}
		t, content, err := s.readAt(p, off, 0, largeRead)
		if err != nil {
			return nil, err
		}
		return memObject(t, content), nil
	}
	return nil, plumbing.ErrObjectNotFound
}

// NotFetchedError is an object a partial clone never fetched: git fetches it from the promisor
// remote when a git command needs it.
type NotFetchedError struct {
	ID     plumbing.Hash
	Remote string // the promisor remote (extensions.partialClone)
}

func (e *NotFetchedError) Error() string {
	return fmt.Sprintf("object %s was never fetched: this repository is a partial clone of %q", e.ID, e.Remote)
}

// FetchCommand is the git command that fetches the object from the promisor remote.
func (e *NotFetchedError) FetchCommand() string {
	return "git cat-file -t " + e.ID.String()
}

func (e *NotFetchedError) Unwrap() error { return plumbing.ErrObjectNotFound }
