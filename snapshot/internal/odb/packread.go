package odb

import (
	"bufio"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// Reading objects from packs without go-git. go-git's storage decodes the whole .idx of a pack
// into its own structures on first use and, as soon as it meets a delta, builds a map from every
// offset to its object id: some 16 MB for a pack of 100k objects, held until the process ends,
// for the handful of trees and blobs a run reads back (the diff of an attempt, the reset, the
// autopsy's line counts). Here an object is found by the binary search the store already does
// for has(), read at its offset and its delta chain applied; nothing per object of the pack is
// kept. Objects larger than maxPackedRead are read by objread.go (streamed when stored whole).

// maxPackedRead bounds what readPacked returns whole: larger objects go to objread.go.
const maxPackedRead = 1 << 20

// errPackedTooLarge and errNotPacked send a read elsewhere (objread.go).
var (
	errPackedTooLarge = errors.New("packed object too large to read whole")
	errNotPacked      = errors.New("object not in a pack")
)

// Pack entry types (pack-format.txt).
const (
	packCommit   = 1
	packTree     = 2
	packBlob     = 3
	packTag      = 4
	packOfsDelta = 6
	packRefDelta = 7
)

// maxDeltaChain bounds a delta chain (git's own default depth is 50, --aggressive 250).
const maxDeltaChain = 10000

// readPacked returns a packed object's type and content, reloading the list of packs once when
// the object is not found (a concurrent repack may have just moved it).
func (s *Store) readPacked(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	s.packMu.Lock()
	defer s.packMu.Unlock()
	if !s.loaded {
		s.loadPacksLocked()
	}
	t, data, err := s.readPackedLocked(h, 0, maxPackedRead)
	if errors.Is(err, errNotPacked) {
		s.loadPacksLocked()
		t, data, err = s.readPackedLocked(h, 0, maxPackedRead)
	}
	return t, data, err
}

func (s *Store) readPackedLocked(h plumbing.Hash, depth int, limit uint64) (plumbing.ObjectType, []byte, error) {
	for _, p := range s.packs {
		if i, ok := p.find(h); ok {
			return s.readAt(p, p.offset(i), depth, limit)
		}
	}
	return plumbing.InvalidObject, nil, errNotPacked
}

// readAt reads the object at off in p's pack: its delta chain, from the object back to its base,
// then the deltas applied from the base up. An object over limit is errPackedTooLarge (and so is
// a base or delta of its chain over four times that).
func (s *Store) readAt(p *packIndex, off uint64, depth int, limit uint64) (plumbing.ObjectType, []byte, error) {
	f, err := p.packFile()
	if err != nil {
		return plumbing.InvalidObject, nil, err
	}
	var deltas [][]byte
	for ; ; depth++ {
		if depth > maxDeltaChain {
			return plumbing.InvalidObject, nil, fmt.Errorf("%s: delta chain longer than %d", p.path, maxDeltaChain)
		}
		r := bufio.NewReaderSize(io.NewSectionReader(f, int64(off), 1<<62), 4096)
		typ, size, err := packEntryHeader(r)
		if err != nil {
			return plumbing.InvalidObject, nil, fmt.Errorf("%s at %d: %w", p.path, off, err)
		}
		if size > limit*4 {
			return plumbing.InvalidObject, nil, errPackedTooLarge
		}
		switch typ {
		case packCommit, packTree, packBlob, packTag:
			if len(deltas) == 0 && size > limit {
				return plumbing.InvalidObject, nil, errPackedTooLarge
			}
			data, err := inflateExactly(r, size)
			if err != nil {
				return plumbing.InvalidObject, nil, fmt.Errorf("%s at %d: %w", p.path, off, err)
			}
			for i := len(deltas) - 1; i >= 0; i-- {
				if data, err = applyDelta(data, deltas[i], i == 0, limit); err != nil {
					return plumbing.InvalidObject, nil, fmt.Errorf("%s at %d: %w", p.path, off, err)
				}
			}
			return plumbing.ObjectType(typ), data, nil
		case packOfsDelta:
			rel, err := ofsDeltaOffset(r)
			if err != nil || rel == 0 || rel > off {
				return plumbing.InvalidObject, nil, fmt.Errorf("%s at %d: bad delta base offset", p.path, off)
			}
			d, err := inflateDelta(r, size, len(deltas) == 0, limit)
			if errors.Is(err, errPackedTooLarge) {
				return plumbing.InvalidObject, nil, err
			}
			if err != nil {
				return plumbing.InvalidObject, nil, fmt.Errorf("%s at %d: %w", p.path, off, err)
			}
			deltas = append(deltas, d)
			off -= rel
		case packRefDelta:
			var base plumbing.Hash
			if _, err := io.ReadFull(r, base[:]); err != nil {
				return plumbing.InvalidObject, nil, fmt.Errorf("%s at %d: %w", p.path, off, err)
			}
			d, err := inflateDelta(r, size, len(deltas) == 0, limit)
			if errors.Is(err, errPackedTooLarge) {
				return plumbing.InvalidObject, nil, err
			}
			if err != nil {
				return plumbing.InvalidObject, nil, fmt.Errorf("%s at %d: %w", p.path, off, err)
			}
			deltas = append(deltas, d)
			t, data, err := s.readPackedLocked(base, depth+1, limit)
			if err != nil {
				return plumbing.InvalidObject, nil, err
			}
			for i := len(deltas) - 1; i >= 0; i-- {
				if data, err = applyDelta(data, deltas[i], i == 0, limit); err != nil {
					return plumbing.InvalidObject, nil, fmt.Errorf("%s at %d: %w", p.path, off, err)
				}
			}
			return t, data, nil
		default:
			return plumbing.InvalidObject, nil, fmt.Errorf("%s at %d: unknown pack entry type %d", p.path, off, typ)
		}
	}
}

// packEntryHeader reads an entry's type and (inflated) size.
func packEntryHeader(r io.ByteReader) (typ int, size uint64, err error) {
	c, err := r.ReadByte()
	if err != nil {
		return 0, 0, err
	}
	typ = int(c>>4) & 7
	size = uint64(c & 15)
	for shift := uint(4); c&0x80 != 0; shift += 7 {
		if shift > 60 {
			return 0, 0, errors.New("bad entry size")
		}
		if c, err = r.ReadByte(); err != nil {
			return 0, 0, err
		}
		size |= uint64(c&0x7f) << shift
	}
	return typ, size, nil
}

// ofsDeltaOffset reads an OFS_DELTA's distance back to its base.
func ofsDeltaOffset(r io.ByteReader) (uint64, error) {
	c, err := r.ReadByte()
	if err != nil {
		return 0, err
	}
	off := uint64(c & 0x7f)
	for c&0x80 != 0 {
		if off >= 1<<56 {
			return 0, errors.New("bad delta offset")
		}
		if c, err = r.ReadByte(); err != nil {
			return 0, err
		}
		off = (off+1)<<7 | uint64(c&0x7f)
	}
	return off, nil
}

// inflateDelta inflates one delta of a chain. The first one met (outermost: it makes the object)
// says how large the object is: one over limit is errPackedTooLarge.
func inflateDelta(r io.Reader, size uint64, outermost bool, limit uint64) ([]byte, error) {
	d, err := inflateExactly(r, size)
	if err != nil {
		return nil, err
	}
	if outermost {
		if _, dst, _, err := deltaSizes(d); err != nil || dst > limit {
			return nil, errPackedTooLarge
		}
	}
	return d, nil
}

// inflaters are idle zlib readers (some 40 KB each, most of it the window): a checkout of a
// worktree inflates one object per file, and a reader made for each would be most of its garbage.
var inflaters sync.Pool

// getInflater is a zlib reader of r, an idle one reset when there is one.
func getInflater(r io.Reader) (io.ReadCloser, error) {
	if zr, ok := inflaters.Get().(io.ReadCloser); ok {
		if err := zr.(zlib.Resetter).Reset(r, nil); err != nil {
			putInflater(zr)
			return nil, err
		}
		return zr, nil
	}
	return zlib.NewReader(r)
}

// putInflater closes zr and keeps it for the next getInflater.
func putInflater(zr io.ReadCloser) {
	zr.Close()
	inflaters.Put(zr)
}

// inflateExactly inflates the zlib stream at r, which must hold exactly size bytes.
func inflateExactly(r io.Reader, size uint64) ([]byte, error) {
	zr, err := getInflater(r)
	if err != nil {
		return nil, err
	}
	defer putInflater(zr)
	data := make([]byte, size)
	if _, err := io.ReadFull(zr, data); err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	var one [1]byte
	if n, _ := zr.Read(one[:]); n > 0 {
		return nil, errors.New("inflate: more data than the entry's size")
	}
	return data, nil
}

// deltaSizes reads a delta's source and result sizes and where its instructions start.
func deltaSizes(d []byte) (src, dst uint64, rest []byte, err error) {
	if src, d, err = deltaHeaderSize(d); err != nil {
		return 0, 0, nil, err
	}
	if dst, d, err = deltaHeaderSize(d); err != nil {
		return 0, 0, nil, err
	}
	return src, dst, d, nil
}

// deltaHeaderSize reads one size of a delta's header as git's get_delta_hdr_size does: a
// varint that the end of the delta may cut short.
func deltaHeaderSize(d []byte) (uint64, []byte, error) {
	if len(d) == 0 {
		return 0, nil, errors.New("bad delta header")
	}
	var size uint64
	for shift := uint(0); ; shift += 7 {
		if shift > 63 {
			return 0, nil, errors.New("bad delta header")
		}
		c := d[0]
		d = d[1:]
		size |= uint64(c&0x7f) << shift
		if c&0x80 == 0 || len(d) == 0 {
			return size, d, nil
		}
	}
}

// applyDelta builds the result of delta d on base (git's patch-delta.c). The last delta of a
// chain (the object itself) is bounded by limit, the others by four times that.
func applyDelta(base, d []byte, last bool, limit uint64) ([]byte, error) {
	src, dst, ops, err := deltaSizes(d)
	if err != nil {
		return nil, err
	}
	if src != uint64(len(base)) {
		return nil, fmt.Errorf("delta for a base of %d bytes applied to %d", src, len(base))
	}
	if dst > limit*4 || last && dst > limit {
		return nil, errPackedTooLarge
	}
	out := make([]byte, 0, dst)
	for len(ops) > 0 {
		c := ops[0]
		ops = ops[1:]
		switch {
		case c&0x80 != 0:
			var off, n uint64
			for i := uint(0); i < 4; i++ {
				if c&(1<<i) != 0 {
					if len(ops) == 0 {
						return nil, errors.New("truncated delta")
					}
					off |= uint64(ops[0]) << (8 * i)
					ops = ops[1:]
				}
			}
			for i := uint(0); i < 3; i++ {
				if c&(0x10<<i) != 0 {
					if len(ops) == 0 {
						return nil, errors.New("truncated delta")
					}
					n |= uint64(ops[0]) << (8 * i)
					ops = ops[1:]
				}
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > uint64(len(base)) || uint64(len(out))+n > dst {
				return nil, errors.New("delta copies out of range")
			}
			out = append(out, base[off:off+n]...)
		case c != 0:
			n := int(c)
			if n > len(ops) || uint64(len(out)+n) > dst {
				return nil, errors.New("truncated delta")
			}
			out = append(out, ops[:n]...)
			ops = ops[n:]
		default:
			return nil, errors.New("delta opcode 0")
		}
	}
	if uint64(len(out)) != dst {
		return nil, fmt.Errorf("delta gave %d bytes, announced %d", len(out), dst)
	}
	return out, nil
}

// packFile opens the pack beside the index, once.
func (p *packIndex) packFile() (*os.File, error) {
	if p.pack == nil {
		f, err := os.Open(strings.TrimSuffix(p.path, ".idx") + ".pack")
		if err != nil {
			return nil, err
		}
		p.pack = f
	}
	return p.pack, nil
}
