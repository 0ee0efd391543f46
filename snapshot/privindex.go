package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"
)

// entry is one path of the private index: what the snapshot holds for it and the stat data that
// lets the next snapshot trust that without reading the file again.
//
// A run holds one per file of the tree from its base snapshot to its end (100k files: 10 MB), so
// the entry is kept at 96 bytes (it was 112): flags and the user's mode are 16-bit (every mode git
// writes, 0o100644, 0o100755, 0o120000, 0o160000 and 0o040000, fits), and the user's blob, which
// for most tracked files is the snapshot's blob, is a pointer (see userBlob).
type entry struct {
	path string
	// ub is the blob in the user's index of a tracked entry (stage 2 for conflicts), nil when
	// none. It is shared, never written through: entries copied from one another point at the
	// same hash, and an entry decoded with the user's blob equal to its own points at its own
	// blob field. So an entry's blob is never changed in place: a changed entry is a copy.
	ub    *plumbing.Hash
	st    statData
	mode  uint32        // git mode in the snapshot; 0 = no trusted content yet (must be read)
	flags uint16        // f* bits
	umode uint16        // tracked entries: mode in the user's index (stage 2, 1, 3 for conflicts)
	blob  plumbing.Hash // blob (or gitlink commit) in the snapshot
}

// userBlob is the entry's blob in the user's index (zero when none).
func (e *entry) userBlob() plumbing.Hash {
	if e.ub == nil {
		return plumbing.ZeroHash
	}
	return *e.ub
}

// setUserBlobs gives each entry of es the user's blob ubs[i]: its own blob field when they are
// equal (most tracked files, whose content is the index's), else a copy in one array of the
// others. es must not move afterwards (the pointers are into it).
func setUserBlobs(es []entry, ubs []plumbing.Hash) {
	n := 0
	for i := range es {
		if !ubs[i].IsZero() && (ubs[i] != es[i].blob || es[i].mode == 0) {
			n++
		}
	}
	others := make([]plumbing.Hash, 0, n)
	for i := range es {
		switch h := ubs[i]; {
		case h.IsZero():
			es[i].ub = nil
		case h == es[i].blob && es[i].mode != 0:
			es[i].ub = &es[i].blob
		default:
			others = append(others, h)
			es[i].ub = &others[len(others)-1]
		}
	}
}

const (
	fTracked     uint16 = 1 << iota // the path is in the user's index
	fSkipWT                         // skip-worktree in the user's index: kept as it is there
	fAssumeValid                    // assume-unchanged in the user's index: kept while the path exists
	fITA                            // intent-to-add in the user's index
	fConflict                       // unmerged (stages 1–3) in the user's index
	fHashed                         // content was read by mulligan (not taken from the user's index)
	fCRCalled                       // the clean conversion asked whether the index blob has CRLF…
	fCRValue                        // …and this was the answer
	fUblobSame                      // (on disk only) ublob equals blob
)

// dirInfo is what the private index remembers per directory: the tree id last computed for it
// (known to exist in the object store), whether that id still matches the recorded entries, and
// the fingerprint of the attributes that applied when its entries were read.
type dirInfo struct {
	path  string
	tree  plumbing.Hash
	fp    uint64
	valid bool
}

// privIndex is the decoded private index.
type privIndex struct {
	t0S, t0Ns uint32 // its write time: entries with mtime >= t0 are racy
	user      userIndexStamp
	entries   []entry
	dirs      []dirInfo // sorted by path
	// partial: decoded for a user's index other than user (decodePriv's cur), entries holds only
	// what a reseed keeps of it (ownContent), not every entry.
	partial bool
}

const privMagic = "MLGI"
const privVersion = 1

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func privIndexPath(gitDir string) string {
	return filepath.Join(gitDir, "mulligan", "snapshot-index")
}

var errPrivCorrupt = errors.New("private index is corrupt")

// privReader decodes the private index from the file's bytes, read whole (one read, one CRC
// pass): a walk starts with it, so it is on the path of every run's first snapshot.
type privReader struct {
	b   []byte
	off int
}

func (c *privReader) full(n int) ([]byte, error) {
	if n > len(c.b)-c.off {
		return nil, errPrivCorrupt
	}
	b := c.b[c.off : c.off+n : c.off+n]
	c.off += n
	return b, nil
}

func (c *privReader) into(b []byte) error {
	if len(b) > len(c.b)-c.off {
		return errPrivCorrupt
	}
	c.off += copy(b, c.b[c.off:])
	return nil
}

func (c *privReader) uvarint() (uint64, error) {
	x, n := binary.Uvarint(c.b[c.off:])
	if n <= 0 {
		return 0, errPrivCorrupt
	}
	c.off += n
	return x, nil
}

func (c *privReader) u32() (uint32, error) {
	if len(c.b)-c.off < 4 {
		return 0, errPrivCorrupt
	}
	v := binary.LittleEndian.Uint32(c.b[c.off:])
	c.off += 4
	return v, nil
}

// loadPrivIndex reads the private index; any damage or version mismatch reads as "absent", since
// it is only a cache and will be rebuilt from the user's index. Given the user's index's stamp
// cur, an index recorded for another one is decoded partial (only what a reseed keeps).
func loadPrivIndex(path string, cur *userIndexStamp) (*privIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	var ust unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &ust); err != nil || ust.Size < 8 || ust.Size > 1<<40 {
		return nil, nil
	}
	// Mapped, not read: read into the heap, the file (some 80 bytes a path) is fresh memory the
	// process faults in page by page, where a mapping of the page cache comes in 64 KiB at a
	// time and goes away with the decode. The file is only ever replaced by a rename, never
	// truncated in place, so the mapping stays whole.
	var data []byte
	if m, err := unix.Mmap(int(f.Fd()), 0, int(ust.Size), unix.PROT_READ, unix.MAP_SHARED); err == nil {
		defer unix.Munmap(m)
		data = m
	} else if data, err = io.ReadAll(f); err != nil {
		return nil, err
	}
	if len(data) < 8 {
		return nil, nil
	}
	// The last four bytes are the CRC of everything before them.
	body := data[:len(data)-4]
	if binary.LittleEndian.Uint32(data[len(body):]) != crc32.Checksum(body, crcTable) {
		return nil, nil
	}
	c := &privReader{b: body}
	p, err := decodePriv(c, cur)
	if err != nil || c.off != len(body) { // damage, or trailing garbage
		return nil, nil
	}
	return p, nil
}

// decodePriv decodes the private index c holds. When cur is given and the index was recorded
// for another state of the user's index, the next walk reseeds from the user's index and keeps
// of this one only the entries whose content mulligan read itself (reseed's ownContent): only
// those are decoded (partial), not the tens of megabytes of a large tree's every entry.
func decodePriv(c *privReader, cur *userIndexStamp) (*privIndex, error) {
	b, err := c.full(8)
	if err != nil || string(b[:4]) != privMagic || binary.LittleEndian.Uint32(b[4:]) != privVersion {
		return nil, errPrivCorrupt
	}
	p := &privIndex{}
	var hdr [12]uint32
	for i := range hdr {
		if hdr[i], err = c.u32(); err != nil {
			return nil, err
		}
	}
	p.t0S, p.t0Ns = hdr[0], hdr[1]
	p.user.present = hdr[2] != 0
	p.user.st = statData{ctimeS: hdr[3], ctimeNs: hdr[4], mtimeS: hdr[5], mtimeNs: hdr[6], dev: hdr[7], ino: hdr[8], size: hdr[9]}
	if err := c.into(p.user.sum[:]); err != nil {
		return nil, err
	}
	nEntries, pathBytes := int(hdr[10]), int(hdr[11])
	nDirs, err := c.u32()
	if err != nil {
		return nil, err
	}
	if nEntries > 1<<26 || pathBytes > 1<<31-1 || nDirs > 1<<26 {
		return nil, errPrivCorrupt
	}
	if cur != nil && p.user != *cur {
		if err := decodeOwnEntries(c, p, nEntries); err != nil {
			return nil, err
		}
		return p, decodeDirs(c, p, int(nDirs))
	}
	// All paths share one arena of the size the header gives, never grown (readPath refuses to),
	// so each path can be a view of it from the start: decoding allocates per index, not per entry.
	arena := make([]byte, 0, pathBytes)
	var paths string
	if pathBytes > 0 {
		paths = unsafe.String(&arena[:1][0], pathBytes)
	}
	p.entries = make([]entry, nEntries)
	prev := 0
	for i := 0; i < nEntries; i++ {
		start, err := readPath(c, &arena, &prev, true)
		if err != nil {
			return nil, err
		}
		e := &p.entries[i]
		e.path = paths[start:len(arena)]
		ub, err := decodeEntry(c, e)
		if err != nil {
			return nil, err
		}
		switch {
		case ub.IsZero():
		case ub == e.blob && e.mode != 0:
			e.ub = &e.blob
		default:
			other := ub // the user's index and the snapshot differ: a file changed since
			e.ub = &other
		}
	}
	if err := decodeDirs(c, p, int(nDirs)); err != nil {
		return nil, err
	}
	// Order is what every lookup relies on; a file that breaks it is not trusted.
	for i := 1; i < len(p.entries); i++ {
		if p.entries[i-1].path >= p.entries[i].path {
			return nil, errPrivCorrupt
		}
	}
	return p, nil
}

// decodeEntry decodes the fields of an entry after its path into e, and returns the entry's
// blob in the user's index (zero when none; e.ub is left for the caller to point).
func decodeEntry(c *privReader, e *entry) (ub plumbing.Hash, err error) {
	b, err := c.full(48)
	if err != nil {
		return ub, err
	}
	var v [12]uint32
	for k := range v {
		v[k] = binary.LittleEndian.Uint32(b[4*k:])
	}
	if v[0] > 0xffff {
		return ub, errPrivCorrupt
	}
	e.flags = uint16(v[0])
	e.st = statData{ctimeS: v[1], ctimeNs: v[2], mtimeS: v[3], mtimeNs: v[4], dev: v[5], ino: v[6], uid: v[7], gid: v[8], size: v[9], mode: v[10]}
	e.mode = v[11]
	if err := c.into(e.blob[:]); err != nil {
		return ub, err
	}
	if e.flags&fTracked != 0 {
		um, err := c.u32()
		if err != nil || um > 0xffff {
			return ub, errPrivCorrupt
		}
		e.umode = uint16(um)
		if e.flags&fUblobSame != 0 {
			ub = e.blob
		} else if err := c.into(ub[:]); err != nil {
			return ub, err
		}
	}
	e.flags &^= fUblobSame
	return ub, nil
}

// ownContent reports whether e holds content mulligan read from the file itself (its blob and
// the stat data it was read with), what a reseed keeps of the private index.
func (e *entry) ownContent() bool {
	return e.flags&fHashed != 0 && e.mode != 0 && e.st != (statData{})
}

// decodeOwnEntries decodes the nEntries entries c holds next, keeping in p only those with
// ownContent, each path a string of its own.
func decodeOwnEntries(c *privReader, p *privIndex, nEntries int) error {
	p.partial = true
	var arena []byte // the previous path, then the one just read after it
	prev := 0
	var kept []entry
	var ubs []plumbing.Hash
	for i := 0; i < nEntries; i++ {
		start, err := readPath(c, &arena, &prev, false)
		if err != nil {
			return err
		}
		path := arena[start:]
		if i > 0 && bytes.Compare(arena[:start], path) >= 0 {
			return errPrivCorrupt // order is what every lookup relies on
		}
		var e entry
		ub, err := decodeEntry(c, &e)
		if err != nil {
			return err
		}
		if e.ownContent() {
			e.path = string(path)
			kept = append(kept, e)
			ubs = append(ubs, ub)
		}
		arena, prev = append(arena[:0], path...), 0
	}
	setUserBlobs(kept, ubs) // kept does not move from here
	p.entries = kept
	return nil
}

// decodeDirs decodes the nDirs directories c holds next into p.
func decodeDirs(c *privReader, p *privIndex, nDirs int) error {
	darena := make([]byte, 0, 1024)
	dspans := make([][2]int, nDirs)
	p.dirs = make([]dirInfo, nDirs)
	prev := 0
	for i := 0; i < nDirs; i++ {
		start, err := readPath(c, &darena, &prev, false)
		if err != nil {
			return err
		}
		dspans[i] = [2]int{start, len(darena)}
		d := &p.dirs[i]
		if err := c.into(d.tree[:]); err != nil {
			return err
		}
		lo, err := c.u32()
		if err != nil {
			return err
		}
		hi, err := c.u32()
		if err != nil {
			return err
		}
		fl, err := c.u32()
		if err != nil {
			return err
		}
		d.fp = uint64(hi)<<32 | uint64(lo)
		d.valid = fl&1 != 0
	}
	dpaths := arenaString(darena)
	for i := range p.dirs {
		p.dirs[i].path = dpaths[dspans[i][0]:dspans[i][1]]
	}
	for i := 1; i < len(p.dirs); i++ {
		if p.dirs[i-1].path >= p.dirs[i].path {
			return errPrivCorrupt
		}
	}
	return nil
}

// readPath reads a prefix-compressed path (bytes kept from the previous path, then the suffix)
// into the arena and returns where it starts. A fixed arena is never grown: a path that does not
// fit says the file is corrupt.
func readPath(c *privReader, arena *[]byte, prev *int, fixed bool) (int, error) {
	keep, err := c.uvarint()
	if err != nil {
		return 0, err
	}
	n, err := c.uvarint()
	if err != nil {
		return 0, err
	}
	a := *arena
	prevLen := len(a) - *prev
	if int(keep) > prevLen || n > 1<<16 {
		return 0, errPrivCorrupt
	}
	start := len(a)
	if fixed && len(a)+int(keep)+int(n) > cap(a) {
		return 0, errPrivCorrupt
	}
	a = append(a, a[*prev:*prev+int(keep)]...)
	a = slices.Grow(a, int(n))
	a = a[:len(a)+int(n)]
	if err := c.into(a[len(a)-int(n):]); err != nil {
		return 0, err
	}
	*arena = a
	*prev = start
	return start, nil
}

// privWriter streams the private index to a file with a CRC-32C trailer. It encodes into a
// buffer of its own and takes the CRC and writes a block at a time: a field at a time (17 of
// them a file), the per-call costs of both were most of the time a 100k-file index took to
// write (32 ms; a block at a time 13.5 ms, BenchmarkSavePrivIndex).
type privWriter struct {
	w    io.Writer
	buf  []byte // encoded, not yet in the CRC nor written
	crc  uint32
	prev string
	err  error
}

// privBlock is how much privWriter buffers before it writes.
const privBlock = 64 << 10

func (w *privWriter) write(b []byte) {
	w.buf = append(w.buf, b...)
	w.spill()
}

func (w *privWriter) u32(v uint32) {
	w.buf = binary.LittleEndian.AppendUint32(w.buf, v)
	w.spill()
}

func (w *privWriter) uvarint(v uint64) {
	w.buf = binary.AppendUvarint(w.buf, v)
	w.spill()
}

func (w *privWriter) path(p string) {
	keep := 0
	for keep < len(p) && keep < len(w.prev) && p[keep] == w.prev[keep] {
		keep++
	}
	w.uvarint(uint64(keep))
	w.uvarint(uint64(len(p) - keep))
	w.buf = append(w.buf, p[keep:]...)
	w.spill()
	w.prev = p
}

// spill writes the buffer once it holds a block.
func (w *privWriter) spill() {
	if len(w.buf) >= privBlock {
		w.flush()
	}
}

// flush takes what the buffer holds into the CRC and writes it.
func (w *privWriter) flush() {
	if w.err == nil && len(w.buf) > 0 {
		w.crc = crc32.Update(w.crc, crcTable, w.buf)
		_, w.err = w.w.Write(w.buf)
	}
	w.buf = w.buf[:0]
}

// savePrivIndex writes the index to f (the temporary file whose creation time is t0) and renames
// it into place, so readers see the old or the new index, never a half-written one.
func savePrivIndex(f *os.File, dest string, p *privIndex, entries []*entry) error {
	w := &privWriter{w: f, buf: make([]byte, 0, privBlock+4<<10)}
	w.write([]byte(privMagic))
	w.u32(privVersion)
	pathBytes := 0
	for _, e := range entries {
		pathBytes += len(e.path)
	}
	present := uint32(0)
	if p.user.present {
		present = 1
	}
	u := p.user.st
	for _, v := range []uint32{p.t0S, p.t0Ns, present, u.ctimeS, u.ctimeNs, u.mtimeS, u.mtimeNs, u.dev, u.ino, u.size,
		uint32(len(entries)), uint32(pathBytes)} {
		w.u32(v)
	}
	w.write(p.user.sum[:])
	w.u32(uint32(len(p.dirs)))
	for _, e := range entries {
		w.path(e.path)
		fl := e.flags &^ fUblobSame
		ub := e.userBlob()
		same := e.flags&fTracked != 0 && ub == e.blob
		if same {
			fl |= fUblobSame
		}
		s := e.st
		for _, v := range []uint32{uint32(fl), s.ctimeS, s.ctimeNs, s.mtimeS, s.mtimeNs, s.dev, s.ino, s.uid, s.gid, s.size, s.mode, e.mode} {
			w.u32(v)
		}
		w.write(e.blob[:])
		if e.flags&fTracked != 0 {
			w.u32(uint32(e.umode))
			if !same {
				w.write(ub[:])
			}
		}
	}
	w.prev = ""
	for i := range p.dirs {
		d := &p.dirs[i]
		w.path(d.path)
		w.write(d.tree[:])
		w.u32(uint32(d.fp))
		w.u32(uint32(d.fp >> 32))
		v := uint32(0)
		if d.valid {
			v = 1
		}
		w.u32(v)
	}
	w.flush()
	if w.err == nil {
		_, w.err = f.Write(binary.LittleEndian.AppendUint32(nil, w.crc)) // the CRC, not in itself
	}
	if err := f.Close(); err != nil && w.err == nil {
		w.err = err
	}
	if w.err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write private index: %w", w.err)
	}
	if err := os.Rename(f.Name(), dest); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write private index: %w", err)
	}
	return nil
}

// createPrivTemp creates the next private index's temporary file. Its mtime, stamped by the
// filesystem's own clock before the walk lstat()s anything, is the racy-git reference time: a file
// changed after it was read carries an mtime at or after it.
func createPrivTemp(gitDir string) (*os.File, uint32, uint32, error) {
	dir := filepath.Join(gitDir, "mulligan")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, 0, 0, err
	}
	f, err := os.CreateTemp(dir, "snapshot-index.tmp-*")
	if err != nil {
		return nil, 0, 0, err
	}
	st, err := fstatFile(f)
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, 0, 0, err
	}
	return f, st.mtimeS, st.mtimeNs, nil
}

// cleanStaleTemps removes temporary files a crashed process left behind (older than a minute, so
// a concurrent writer's file is spared).
func cleanStaleTemps(gitDir string, nowS uint32) {
	dir := filepath.Join(gitDir, "mulligan")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "snapshot-index.tmp-") {
			continue
		}
		if fi, err := e.Info(); err == nil && uint32(fi.ModTime().Unix())+60 < nowS {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// arenaString views an arena that is never written again as one string, so that every path can
// be a substring of it without copying the arena.
func arenaString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
