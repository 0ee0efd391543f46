package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"
)

// Reading loose objects without go-git. Every object a run writes is loose, and a run reads some
// of them back: the trees along each changed path (an attempt's diff, the reset, the autopsy),
// the commits it peels. go-git takes each through its file-system abstraction, a zlib reader
// (some 40 KB of window) and its object cache (a map per object); here the file is read in one
// call and, when it is a stream of stored blocks (what mulligan writes for small objects,
// storedZlib), taken as it is. Other streams are inflated by a pooled reader. Objects larger
// than maxPackedRead are streamed (objread.go).

// errNotLoose sends a read to the packs; errLooseTooLarge to a stream (objread.go).
var (
	errNotLoose      = errors.New("object not loose")
	errLooseTooLarge = errors.New("loose object too large to read whole")
)

// readLoose returns the type and content of the loose object h of this store (not of its
// alternates): errNotLoose when there is none.
func (s *objectStore) readLoose(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
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
	if st.Size > maxPackedRead+storedOverhead+64 {
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
	raw, ok := unstoreZlib(z)
	if !ok {
		var err error
		if raw, err = inflateAll(z, maxPackedRead+64); err != nil {
			return plumbing.InvalidObject, nil, fmt.Errorf("loose object %s: %w", h, err)
		}
	}
	return parseLooseHeader(h, raw)
}

// unstoreZlib returns the content of a zlib stream made only of stored (uncompressed) deflate
// blocks, its Adler-32 checked; false for any other stream.
func unstoreZlib(z []byte) ([]byte, bool) {
	if len(z) < 2+5+4 || z[0]&0x0f != 8 || z[1]&0x20 != 0 || (uint(z[0])<<8|uint(z[1]))%31 != 0 {
		return nil, false // not deflate, a preset dictionary, or a bad header check
	}
	p := z[2:]
	var out []byte
	for {
		if len(p) < 5 || p[0]&0x06 != 0 { // BTYPE 00: stored
			return nil, false
		}
		final := p[0]&1 != 0
		n := int(binary.LittleEndian.Uint16(p[1:]))
		if binary.LittleEndian.Uint16(p[3:]) != ^uint16(n) || len(p) < 5+n {
			return nil, false
		}
		if final && out == nil {
			out = p[5 : 5+n] // one block: its bytes, as they are in the file
		} else {
			out = append(out, p[5:5+n]...)
		}
		p = p[5+n:]
		if final {
			break
		}
	}
	if len(p) != 4 || binary.BigEndian.Uint32(p) != adler32.Checksum(out) {
		return nil, false
	}
	return out, true
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
