package odb

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"
)

// Reading loose objects without go-git. Every object a run writes is loose, and a run reads some
// of them back: the trees along each changed path (an attempt's diff, the reset, the autopsy),
// the commits it peels. go-git takes each through its file-system abstraction, a zlib reader
// (some 40 KB of window) and its object cache (a map per object); here the file is read in one
// call and inflated by a pooled reader. Objects larger than maxPackedRead are streamed
// (objread.go).

// errNotLoose sends a read to the packs; errLooseTooLarge to a stream (objread.go).
var (
	errNotLoose      = errors.New("object not loose")
	errLooseTooLarge = errors.New("loose object too large to read whole")
)

// readLoose returns the type and content of the loose object h of this store (not of its
// alternates): errNotLoose when there is none.
func (s *Store) readLoose(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	fd, err := unix.Open(s.loosePath(h), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return plumbing.InvalidObject, nil, errNotLoose
		}
		return plumbing.InvalidObject, nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return plumbing.InvalidObject, nil, err
	}
	// A zlib stream is at most a few bytes a 64 KiB block larger than what it holds.
	if st.Size > maxPackedRead+maxPackedRead>>10+64 {
		return plumbing.InvalidObject, nil, errLooseTooLarge
	}
	z := make([]byte, st.Size)
	for off := 0; off < len(z); {
		n, err := unix.Read(fd, z[off:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return plumbing.InvalidObject, nil, err
		}
		if n == 0 {
			return plumbing.InvalidObject, nil, fmt.Errorf("loose object %s: truncated", h)
		}
		off += n
	}
	raw, err := inflateAll(z, maxPackedRead+64)
	if err != nil {
		return plumbing.InvalidObject, nil, fmt.Errorf("loose object %s: %w", h, err)
	}
	return parseLooseHeader(h, raw)
}

// inflateAll inflates the zlib stream z whole, refusing more than limit bytes.
func inflateAll(z []byte, limit int) ([]byte, error) {
	zr, err := getInflater(bytes.NewReader(z))
	if err != nil {
		return nil, err
	}
	defer putInflater(zr)
	data, err := io.ReadAll(io.LimitReader(zr, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	if len(data) > limit {
		return nil, errLooseTooLarge
	}
	return data, nil
}

// parseLooseHeader splits an inflated loose object ("<type> <size>\x00<content>").
func parseLooseHeader(h plumbing.Hash, raw []byte) (plumbing.ObjectType, []byte, error) {
	nul := bytes.IndexByte(raw, 0)
	if nul < 0 || nul > 32 {
		return plumbing.InvalidObject, nil, fmt.Errorf("loose object %s: bad header", h)
	}
	t, size, err := looseHeader(h, raw[:nul])
	if err != nil {
		return plumbing.InvalidObject, nil, err
	}
	if size > maxPackedRead {
		return plumbing.InvalidObject, nil, errLooseTooLarge
	}
	data := raw[nul+1:]
	if int64(len(data)) != size {
		return plumbing.InvalidObject, nil, fmt.Errorf("loose object %s: %d bytes, its header says %d", h, len(data), size)
	}
	return t, data, nil
}

// looseHeader reads a loose object's header ("<type> <size>", without its NUL).
func looseHeader(h plumbing.Hash, hdr []byte) (plumbing.ObjectType, int64, error) {
	sp := bytes.IndexByte(hdr, ' ')
	if sp < 0 {
		return plumbing.InvalidObject, 0, fmt.Errorf("loose object %s: bad header", h)
	}
	t, err := plumbing.ParseObjectType(string(hdr[:sp]))
	if err != nil || !t.Valid() || t == plumbing.OFSDeltaObject || t == plumbing.REFDeltaObject {
		return plumbing.InvalidObject, 0, fmt.Errorf("loose object %s: bad type %q", h, hdr[:sp])
	}
	size, err := strconv.ParseInt(string(hdr[sp+1:]), 10, 64)
	if err != nil || size < 0 {
		return plumbing.InvalidObject, 0, fmt.Errorf("loose object %s: bad size", h)
	}
	return t, size, nil
}
