package snapshot

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
)

// userEntry is one entry of the user's index (.git/index).
type userEntry struct {
	name  string
	st    statData
	mode  uint32
	hash  plumbing.Hash
	stage uint8
	flags uint16 // fSkipWT, fAssumeValid, fITA
}

type userIndex struct {
	entries []userEntry
	trees   map[string]plumbing.Hash // valid cache-tree (TREE extension) ids by directory path
}

// decodeUserIndex parses a git index (versions 2–4) with the flags and extension data the
// snapshot needs. go-git's plumbing/format/index decoder cannot be used for this: it drops the
// assume-unchanged bit (CE_VALID) and discards invalidated cache-tree nodes together with the
// subtree counts needed to rebuild the others' paths. It is used as the oracle in the tests.
func decodeUserIndex(data []byte) (*userIndex, error) {
	return decodeIndexFile(data, "")
}

// decodeIndexFile decodes an index; gitDir is where a split index finds its shared index ("" when
// data is itself a shared index).
func decodeIndexFile(data []byte, gitDir string) (*userIndex, error) {
	return decodeIndex(bufio.NewReaderSize(bytes.NewReader(data), indexReadBuf), int64(len(data)), gitDir)
}

// readIndexFile decodes the index file at path as it streams in, so that the file is never held
// whole (megabytes for a big tree) beside its decoded entries.
func readIndexFile(path, gitDir string) (*userIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return decodeIndex(bufio.NewReaderSize(f, indexReadBuf), fi.Size(), gitDir)
}

// indexReadBuf is the buffer an index streams through: far above any entry git writes.
const indexReadBuf = 64 << 10

func badIndex(format string, args ...any) error {
	return fmt.Errorf("read index: "+format, args...)
}

// decodeIndex decodes the index of size bytes that br reads.
func decodeIndex(br *bufio.Reader, size int64, gitDir string) (*userIndex, error) {
	version, count, err := readIndexHeader(br, size)
	if err != nil {
		return nil, err
	}
	ui := &userIndex{entries: make([]userEntry, count)}
	// Names go into one arena so that decoding costs one allocation, not one per entry.
	arena := make([]byte, 0, size/2)
	type span struct{ off, n int }
	spans := make([]span, count)
	off, err := scanIndexEntries(br, version, count, size, func(i int, u *userEntry, name []byte) {
		ui.entries[i] = *u
		spans[i] = span{len(arena), len(name)}
		arena = append(arena, name...)
	})
	if err != nil {
		return nil, err
	}
	names := arenaString(arena)
	for i := range ui.entries {
		ui.entries[i].name = names[spans[i].off : spans[i].off+spans[i].n]
	}
	err = scanIndexExtensions(br, off, size, func(sig []byte, n int) error {
		link, err := readIndexExtension(br, sig, n, &ui.trees)
		if err != nil || link == nil {
			return err
		}
		if gitDir == "" {
			return badIndex("split index link inside a shared index")
		}
		merged, err := mergeSplitIndex(ui, link, gitDir)
		if err != nil {
			return badIndex("split index: %v", err)
		}
		ui.entries = merged
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ui, nil
}

// readIndexExtension reads extension sig of n bytes from br for a decoder of the index's
// entries: the valid cache-tree ids into *trees, a split index's link returned (its body; nil
// for any other extension), a sparse index's mark and optional extensions skipped, an unknown
// required one refused.
func readIndexExtension(br *bufio.Reader, sig []byte, n int, trees *map[string]plumbing.Hash) (link []byte, err error) {
	switch string(sig) {
	case "TREE", "link":
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			return nil, badIndex("truncated extension %q", sig)
		}
		if string(sig) == "link" {
			return body, nil
		}
		*trees = map[string]plumbing.Hash{}
		if _, err := parseCacheTree(body, "", *trees); err != nil {
			*trees = nil // only an optimisation: ignore a cache tree we cannot read
		}
		return nil, nil
	case "sdir":
		// Sparse index: directory entries ("dir/", mode 040000, skip-worktree) stand for
		// whole trees; they are kept as they are.
	default:
		if sig[0] < 'A' || sig[0] > 'Z' {
			return nil, badIndex("unknown required extension %q", sig)
		}
	}
	_, err = br.Discard(n)
	return nil, err
}

// TrackedFiles is the number of entries the user's index declares in its header (0 when there is
// no index or it cannot be read): the size of the tree, for a caller that sizes something by it
// before any walk.
func (r *Repo) TrackedFiles() int {
	f, err := os.Open(r.indexFile)
	if err != nil {
		return 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	_, n, err := readIndexHeader(bufio.NewReaderSize(f, 16), fi.Size())
	if err != nil {
		return 0
	}
	return n
}

// readIndexHeader reads and checks the 12-byte header of an index of size bytes.
func readIndexHeader(br *bufio.Reader, size int64) (version uint32, count int, err error) {
	if size < 12+20 {
		return 0, 0, badIndex("bad signature")
	}
	b, err := br.Peek(12)
	if err != nil || !bytes.Equal(b[:4], []byte("DIRC")) {
		return 0, 0, badIndex("bad signature")
	}
	version = binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return 0, 0, badIndex("unsupported version %d", version)
	}
	count = int(binary.BigEndian.Uint32(b[8:12]))
	if int64(count) > (size-12-20)/62 { // an entry takes 62 bytes at least
		return 0, 0, badIndex("%d entries cannot fit in %d bytes", count, size)
	}
	br.Discard(12)
	return version, count, nil
}

// scanIndexExtensions hands each extension after the entries (which end at off) to fn, which
// must consume exactly its n bytes of body from the reader.
func scanIndexExtensions(br *bufio.Reader, off, size int64, fn func(sig []byte, n int) error) error {
	end := size - 20 // trailing checksum
	for off+8 <= end {
		h, err := br.Peek(8)
		if err != nil {
			return badIndex("truncated extension")
		}
		var sig [4]byte
		copy(sig[:], h)
		n := int64(binary.BigEndian.Uint32(h[4:]))
		if off+8+n > end {
			return badIndex("truncated extension %q", sig[:])
		}
		br.Discard(8)
		if err := fn(sig[:], int(n)); err != nil {
			return err
		}
		off += 8 + n
	}
	return nil
}

// scanIndexEntries reads the count entries that follow the header of an index of size bytes,
// handing each to fn in file order (u.name unset: name is the full path, valid during the call
// only), and returns the offset of the first extension.
func scanIndexEntries(br *bufio.Reader, version uint32, count int, size int64, fn func(i int, u *userEntry, name []byte)) (int64, error) {
	end := size - 20 // trailing checksum
	var name []byte  // the current path (index v4 compresses each against the one before)
	var u userEntry  // one for all entries: fn sees it only during its call
	off := int64(12)
	for i := 0; i < count; i++ {
		if off+62 > end {
			return 0, badIndex("truncated entry %d", i)
		}
		b, err := br.Peek(62)
		if err != nil {
			return 0, badIndex("truncated entry %d", i)
		}
		u = userEntry{}
		u.st = statData{
			ctimeS: be32(b[0:]), ctimeNs: be32(b[4:]),
			mtimeS: be32(b[8:]), mtimeNs: be32(b[12:]),
			dev: be32(b[16:]), ino: be32(b[20:]),
			uid: be32(b[28:]), gid: be32(b[32:]), size: be32(b[36:]),
		}
		u.mode = be32(b[24:])
		if u.mode&modeFmt == modeRegular&modeFmt || u.mode == modeSymlink {
			u.st.mode = u.mode
		} else if u.mode&modeFmt == modeTree {
			u.mode = modeTree
		}
		copy(u.hash[:], b[40:60])
		flags := binary.BigEndian.Uint16(b[60:])
		u.stage = uint8(flags>>12) & 3
		if flags&0x8000 != 0 {
			u.flags |= fAssumeValid
		}
		hdr := int64(62)
		if flags&0x4000 != 0 {
			// Extended flags, read in any version as git reads them (git writes them from
			// version 3 on).
			if off+64 > end {
				return 0, badIndex("truncated extended flags in entry %d", i)
			}
			b, err := br.Peek(64)
			if err != nil {
				return 0, badIndex("truncated extended flags in entry %d", i)
			}
			ext := binary.BigEndian.Uint16(b[62:])
			if ext&^0x6000 != 0 {
				return 0, badIndex("unknown extended flags %#04x in entry %d", ext, i)
			}
			if ext&0x4000 != 0 {
				u.flags |= fSkipWT
			}
			if ext&0x2000 != 0 {
				u.flags |= fITA
			}
			hdr = 64
		}
		br.Discard(int(hdr))
		off += hdr
		if version == 4 {
			strip, n, err := readVarint(br)
			if err != nil || int(strip) > len(name) {
				return 0, badIndex("bad name compression in entry %d", i)
			}
			off += int64(n)
			name = name[:len(name)-int(strip)]
			k := len(name)
			if name, err = readName(br, name, end-off); err != nil {
				return 0, badIndex("unterminated name in entry %d", i)
			}
			off += int64(len(name)-k) + 1
		} else {
			nameLen := int64(flags & 0xfff)
			name = name[:0]
			var read int64
			if nameLen == 0xfff {
				if name, err = readName(br, name, end-off); err != nil {
					return 0, badIndex("unterminated name in entry %d", i)
				}
				nameLen, read = int64(len(name)), int64(len(name))+1
			} else {
				if off+nameLen > end {
					return 0, badIndex("truncated name in entry %d", i)
				}
				name = slices.Grow(name, int(nameLen))[:nameLen]
				if _, err := io.ReadFull(br, name); err != nil {
					return 0, badIndex("truncated name in entry %d", i)
				}
				if bytes.IndexByte(name, 0) >= 0 {
					// git keeps the bytes after the NUL in the entry and ignores them when it
					// prints or compares the path as a string: no one path to read.
					return 0, badIndex("NUL in the name of entry %d", i)
				}
				read = nameLen
			}
			// Entries are NUL-padded to a multiple of eight bytes (at least one NUL).
			pad := (hdr+nameLen+8)&^7 - hdr - read
			if off+read+pad > end {
				return 0, badIndex("truncated name in entry %d", i)
			}
			br.Discard(int(pad))
			off += read + pad
		}
		fn(i, &u, name)
	}
	return off, nil
}

// readName appends to name the bytes up to the next NUL (consumed, not appended), of at most
// limit bytes with the NUL.
func readName(br *bufio.Reader, name []byte, limit int64) ([]byte, error) {
	start := len(name)
	for {
		chunk, err := br.ReadSlice(0)
		if int64(len(name)-start+len(chunk)) > limit {
			return nil, errCorruptName
		}
		switch err {
		case nil:
			return append(name, chunk[:len(chunk)-1]...), nil
		case bufio.ErrBufferFull:
			name = append(name, chunk...)
		default:
			return nil, err
		}
	}
}

var errCorruptName = errors.New("unterminated name")

func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

// readVarint reads git's offset varint (varint.c, index v4 name compression) from br, returning
// it and its length.
func readVarint(br *bufio.Reader) (uint64, int, error) {
	c, err := br.ReadByte()
	if err != nil {
		return 0, 0, err
	}
	val, n := uint64(c&127), 1
	for c&128 != 0 {
		val++
		if c, err = br.ReadByte(); err != nil || n >= 10 {
			return 0, 0, errCorruptName
		}
		n++
		val = val<<7 + uint64(c&127)
	}
	return val, n, nil
}

var errCacheTree = errors.New("bad cache tree")

// parseCacheTree reads one cache-tree node (path NUL count SP subtrees LF [oid]) and its subtrees,
// recording valid nodes' tree ids by full directory path.
func parseCacheTree(b []byte, parent string, out map[string]plumbing.Hash) ([]byte, error) {
	z := bytes.IndexByte(b, 0)
	if z < 0 {
		return nil, errCacheTree
	}
	name := string(b[:z])
	b = b[z+1:]
	sp := bytes.IndexByte(b, ' ')
	nl := bytes.IndexByte(b, '\n')
	if sp < 0 || nl < sp {
		return nil, errCacheTree
	}
	count, err1 := strconv.Atoi(string(b[:sp]))
	subs, err2 := strconv.Atoi(string(b[sp+1 : nl]))
	if err1 != nil || err2 != nil || subs < 0 {
		return nil, errCacheTree
	}
	b = b[nl+1:]
	path := name
	if parent != "" {
		path = parent + "/" + name
	}
	if count >= 0 {
		if len(b) < 20 {
			return nil, errCacheTree
		}
		var h plumbing.Hash
		copy(h[:], b[:20])
		out[path] = h
		b = b[20:]
	}
	for i := 0; i < subs; i++ {
		var err error
		if b, err = parseCacheTree(b, path, out); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// userIndexStamp identifies one version of the user's index file without reading it: its stat
// data and its trailing checksum.
type userIndexStamp struct {
	st      statData
	present bool
	sum     plumbing.Hash
}

func stampUserIndex(path string) (userIndexStamp, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return userIndexStamp{}, nil
		}
		return userIndexStamp{}, err
	}
	defer f.Close()
	st, err := fstatFile(f)
	if err != nil {
		return userIndexStamp{}, err
	}
	// Only the fields the private index records take part in the comparison.
	st.uid, st.gid, st.mode = 0, 0, 0
	s := userIndexStamp{st: st, present: true}
	if fi, err := f.Stat(); err == nil && fi.Size() >= 20 {
		f.ReadAt(s.sum[:], fi.Size()-20)
	}
	return s, nil
}

// mergeSplitIndex applies a split index ("link" extension: shared index id, delete and replace
// bitmaps) to the entries of the shared index it names, as git's merge_base_index does.
func mergeSplitIndex(split *userIndex, body []byte, gitDir string) ([]userEntry, error) {
	if len(body) < 20 {
		return nil, errors.New("short link extension")
	}
	var shared plumbing.Hash
	copy(shared[:], body[:20])
	if shared.IsZero() {
		return split.entries, nil
	}
	del, rest, err := decodeEWAH(body[20:])
	if err != nil {
		return nil, err
	}
	rep, _, err := decodeEWAH(rest)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(gitDir + "/sharedindex." + shared.String())
	if err != nil {
		return nil, err
	}
	base, err := decodeIndexFile(data, "")
	if err != nil {
		return nil, err
	}
	out := make([]userEntry, 0, len(base.entries)+len(split.entries))
	next := 0 // split entries replace the shared ones whose replace bit is set, in order
	for i, e := range base.entries {
		if rep.has(i) {
			if next >= len(split.entries) {
				return nil, errors.New("replace bitmap names more entries than the split index has")
			}
			r := split.entries[next]
			next++
			if r.name == "" {
				r.name = e.name
			}
			e = r
		}
		if del.has(i) {
			continue
		}
		out = append(out, e)
	}
	out = append(out, split.entries[next:]...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].name != out[j].name {
			return out[i].name < out[j].name
		}
		return out[i].stage < out[j].stage
	})
	return out, nil
}

// ewahBits is a decoded EWAH bitmap (ewah/ewah_io.c): the set bit positions.
type ewahBits map[int]bool

func (b ewahBits) has(i int) bool { return b[i] }

func decodeEWAH(b []byte) (ewahBits, []byte, error) {
	if len(b) < 8 {
		return nil, nil, errors.New("short ewah bitmap")
	}
	words := int(binary.BigEndian.Uint32(b[4:8]))
	if words < 0 || len(b) < 8+8*words+4 {
		return nil, nil, errors.New("short ewah bitmap")
	}
	w := b[8 : 8+8*words]
	bits := ewahBits{}
	pos := 0
	for k := 0; k < words; {
		rlw := binary.BigEndian.Uint64(w[8*k:])
		k++
		run := int(rlw >> 1 & 0xffffffff)
		lits := int(rlw >> 33)
		if rlw&1 != 0 {
			for i := 0; i < run*64; i++ {
				bits[pos+i] = true
			}
		}
		pos += run * 64
		for j := 0; j < lits && k < words; j++ {
			word := binary.BigEndian.Uint64(w[8*k:])
			k++
			for c := 0; c < 64; c++ {
				if word>>c&1 != 0 {
					bits[pos+c] = true
				}
			}
			pos += 64
		}
	}
	return bits, b[8+8*words+4:], nil
}
