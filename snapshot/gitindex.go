package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
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
	flags uint32 // fSkipWT, fAssumeValid, fITA
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
	bad := func(format string, args ...any) error {
		return fmt.Errorf("read index: "+format, args...)
	}
	if len(data) < 12+20 || !bytes.Equal(data[:4], []byte("DIRC")) {
		return nil, bad("bad signature")
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version < 2 || version > 4 {
		return nil, bad("unsupported version %d", version)
	}
	count := int(binary.BigEndian.Uint32(data[8:12]))
	end := len(data) - 20 // trailing checksum
	ui := &userIndex{entries: make([]userEntry, count)}
	// Names go into one arena so that decoding costs one allocation, not one per entry.
	arena := make([]byte, 0, len(data)/2)
	type span struct{ off, n int }
	spans := make([]span, count)
	off, err := scanIndexEntries(data, func(i int, u *userEntry, name []byte) {
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
	for off+8 <= end {
		sig := data[off : off+4]
		n := int(binary.BigEndian.Uint32(data[off+4:]))
		if off+8+n > end {
			return nil, bad("truncated extension %q", sig)
		}
		body := data[off+8 : off+8+n]
		switch string(sig) {
		case "TREE":
			ui.trees = map[string]plumbing.Hash{}
			if _, err := parseCacheTree(body, "", ui.trees); err != nil {
				ui.trees = nil // only an optimisation: ignore a cache tree we cannot read
			}
		case "link":
			if gitDir == "" {
				return nil, bad("split index link inside a shared index")
			}
			merged, err := mergeSplitIndex(ui, body, gitDir)
			if err != nil {
				return nil, bad("split index: %v", err)
			}
			ui.entries = merged
		case "sdir":
			// Sparse index: directory entries ("dir/", mode 040000, skip-worktree) stand for
			// whole trees; they are kept as they are.
		default:
			if sig[0] < 'A' || sig[0] > 'Z' {
				return nil, bad("unknown required extension %q", sig)
			}
		}
		off += 8 + n
	}
	return ui, nil
}

// scanIndexEntries reads the entries of an index whose header decodeIndexFile checked, handing
// each to fn in file order (u.name unset: name is the full path, valid during the call only), and
// returns the offset of the first extension.
func scanIndexEntries(data []byte, fn func(i int, u *userEntry, name []byte)) (int, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("read index: "+format, args...)
	}
	version := binary.BigEndian.Uint32(data[4:8])
	count := int(binary.BigEndian.Uint32(data[8:12]))
	end := len(data) - 20 // trailing checksum
	var name []byte       // the current path (index v4 compresses each against the one before)
	var u userEntry       // one for all entries: fn sees it only during its call
	off := 12
	for i := 0; i < count; i++ {
		if off+62 > end {
			return 0, bad("truncated entry %d", i)
		}
		b := data[off:]
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
		hdr := 62
		if flags&0x4000 != 0 {
			if version < 3 || off+64 > end {
				return 0, bad("extended flags in entry %d", i)
			}
			ext := binary.BigEndian.Uint16(b[62:])
			if ext&0x4000 != 0 {
				u.flags |= fSkipWT
			}
			if ext&0x2000 != 0 {
				u.flags |= fITA
			}
			hdr = 64
		}
		p := off + hdr
		if version == 4 {
			strip, n := decodeVarint(data[p:end])
			if n <= 0 || int(strip) > len(name) {
				return 0, bad("bad name compression in entry %d", i)
			}
			p += n
			z := bytes.IndexByte(data[p:end], 0)
			if z < 0 {
				return 0, bad("unterminated name in entry %d", i)
			}
			name = append(name[:len(name)-int(strip)], data[p:p+z]...)
			off = p + z + 1
		} else {
			nameLen := int(flags & 0xfff)
			if nameLen == 0xfff {
				z := bytes.IndexByte(data[p:end], 0)
				if z < 0 {
					return 0, bad("unterminated name in entry %d", i)
				}
				nameLen = z
			}
			if p+nameLen > end {
				return 0, bad("truncated name in entry %d", i)
			}
			name = data[p : p+nameLen]
			// Entries are NUL-padded to a multiple of eight bytes (at least one NUL).
			off += (hdr + nameLen + 8) &^ 7
		}
		fn(i, &u, name)
		if version != 4 {
			name = nil // data's own bytes: never appended to
		}
	}
	return off, nil
}

// indexVersion is the version an index file's header gives (0 when it is not an index).
func indexVersion(data []byte) uint32 {
	if len(data) < 12+20 || !bytes.Equal(data[:4], []byte("DIRC")) {
		return 0
	}
	return binary.BigEndian.Uint32(data[4:8])
}

// hasSplitLink reports whether the index's extensions (from off) include a split-index link,
// whose entries only a merge with the shared index gives.
func hasSplitLink(data []byte, off int) bool {
	end := len(data) - 20
	for off+8 <= end {
		n := int(binary.BigEndian.Uint32(data[off+4:]))
		if string(data[off:off+4]) == "link" {
			return true
		}
		off += 8 + n
	}
	return false
}

func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

// decodeVarint is git's offset varint (varint.c), used by index v4 name compression.
func decodeVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	val := uint64(c & 127)
	i := 1
	for c&128 != 0 {
		if i >= len(b) {
			return 0, 0
		}
		val++
		c = b[i]
		i++
		val = val<<7 + uint64(c&127)
	}
	return val, i
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
