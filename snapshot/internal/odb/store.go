// Package odb is git's object database as mulligan reads and writes it: loose objects, packs and
// their indexes (versions 1 and 2), deltas, alternates, and a partial clone's missing objects. It
// is the only code that knows those formats; the snapshot package sees objects as a type and
// bytes through Store. It never writes anything but new loose objects (and removes only the
// temporary files of its own writers), so git's gc, repack and preciousObjects are never at odds
// with it.
package odb

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"
)

// Store answers "does this object exist" quickly (loose file or pack index binary search,
// alternates included) and writes loose objects (looseWriter, which survives a concurrent git gc).
// Object contents are read by looseread.go, packread.go and objread.go.
type Store struct {
	dir string // <common>/objects

	// sweep removes, once per process, the temporary files of writers that were killed.
	sweep sync.Once

	// present holds the objects this process has seen in the store: the runner snapshots the
	// same tree several times, and each file whose blob mulligan hashed itself is checked on
	// every one of them.
	present presentSet

	packMu  sync.Mutex
	loaded  bool
	packs   []*packIndex
	altOnce sync.Once
	alts    []*Store

	// promisor is the remote a partial clone fetches missing objects from ("": not one).
	promisor string
}

// Open is the object database in dir (<common>/objects); promisor is the remote a partial clone
// fetches what it lacks from ("" when the repository is not one). Nothing is read until asked.
func Open(dir, promisor string) *Store {
	return &Store{dir: dir, promisor: promisor}
}

// Data reads an object of moderate size from this store itself (not its alternates), whole:
// loose, else packed. Anything else (large, in an alternate) is an error, for Object to read.
func (s *Store) Data(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	t, data, err := s.readLoose(h)
	if errors.Is(err, errNotLoose) {
		t, data, err = s.readPacked(h)
	}
	return t, data, err
}

// Close releases the packs' maps and files.
func (s *Store) Close() error {
	s.packMu.Lock()
	defer s.packMu.Unlock()
	for _, p := range s.packs {
		p.close()
	}
	s.packs = nil
	s.loaded = false
	for _, a := range s.alts {
		a.Close()
	}
	return nil
}

// ObjectID is the git object id of content of the given type, computed with crypto/sha1 (the
// content is the user's own, so collision detection adds nothing but time).
func ObjectID(t plumbing.ObjectType, data []byte) plumbing.Hash {
	h := sha1.New()
	WriteHeader(h, t, int64(len(data)))
	h.Write(data)
	var id plumbing.Hash
	h.Sum(id[:0])
	return id
}

// WriteHeader writes a loose object's header ("<type> <size>\x00"), what its id hashes first.
func WriteHeader(w io.Writer, t plumbing.ObjectType, size int64) {
	var buf [32]byte
	b := append(buf[:0], t.String()...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, size, 10)
	b = append(b, 0)
	w.Write(b)
}

func (s *Store) loosePath(h plumbing.Hash) string {
	hex := h.String()
	return filepath.Join(s.dir, hex[:2], hex[2:])
}

// Has reports whether the object exists in this store or an alternate.
func (s *Store) Has(h plumbing.Hash) bool {
	if s.present.has(h) {
		return true
	}
	if s.hasUncached(h) {
		s.present.add(h)
		return true
	}
	return false
}

// presentSet is a set of object ids safe for the walk's workers: plain maps in shards by the
// id's first byte, each behind a read-write lock. A sync.Map did the same at several times the
// CPU (an allocation per insert) and memory (some 100 bytes an id against some 30): it holds
// every file of the tree.
type presentSet struct {
	shards [64]presentShard
}

type presentShard struct {
	mu  sync.RWMutex
	ids map[plumbing.Hash]struct{}
}

func (p *presentSet) shard(h plumbing.Hash) *presentShard { return &p.shards[h[0]%64] }

func (p *presentSet) has(h plumbing.Hash) bool {
	s := p.shard(h)
	s.mu.RLock()
	_, ok := s.ids[h]
	s.mu.RUnlock()
	return ok
}

func (p *presentSet) add(h plumbing.Hash) {
	s := p.shard(h)
	s.mu.Lock()
	if s.ids == nil {
		s.ids = make(map[plumbing.Hash]struct{})
	}
	s.ids[h] = struct{}{}
	s.mu.Unlock()
}

func (s *Store) hasUncached(h plumbing.Hash) bool {
	if s.inPacks(h, false) || s.hasLoose(h) {
		return true
	}
	for _, a := range s.alternates() {
		if a.Has(h) {
			return true
		}
	}
	// A concurrent repack may have just moved the object into a new pack.
	return s.inPacks(h, true)
}

// hasLoose is an lstat of the loose object's path, built with one allocation: the walker asks it
// of every file whose content mulligan hashed itself, on every snapshot.
func (s *Store) hasLoose(h plumbing.Hash) bool {
	var hx [2 * len(h)]byte
	hex.Encode(hx[:], h[:])
	var b strings.Builder
	b.Grow(len(s.dir) + 2 + len(hx))
	b.WriteString(s.dir)
	b.WriteByte('/')
	b.Write(hx[:2])
	b.WriteByte('/')
	b.Write(hx[2:])
	var st unix.Stat_t
	return unix.Lstat(b.String(), &st) == nil
}

func (s *Store) inPacks(h plumbing.Hash, reload bool) bool {
	s.packMu.Lock()
	defer s.packMu.Unlock()
	if reload || !s.loaded {
		s.loadPacksLocked()
	}
	for _, p := range s.packs {
		if p.contains(h) {
			return true
		}
	}
	return false
}

func (s *Store) loadPacksLocked() {
	names, _ := filepath.Glob(filepath.Join(s.dir, "pack", "*.idx"))
	have := make(map[string]*packIndex, len(s.packs))
	for _, p := range s.packs {
		have[p.path] = p
	}
	var packs []*packIndex
	for _, n := range names {
		if strings.HasPrefix(filepath.Base(n), ".") {
			continue // a pack being written (git repack's .tmp-<pid>-pack-*), renamed when done
		}
		if p, ok := have[n]; ok {
			packs = append(packs, p)
			delete(have, n)
			continue
		}
		if _, err := os.Stat(strings.TrimSuffix(n, ".idx") + ".pack"); err != nil {
			continue
		}
		p, err := openPackIndex(n)
		if err != nil {
			continue
		}
		packs = append(packs, p)
	}
	for _, p := range have {
		p.close() // its pack is gone
	}
	s.packs = packs
	s.loaded = true
}

// ReloadPacks lists the packs afresh (one went away: a concurrent repack).
func (s *Store) ReloadPacks() {
	s.packMu.Lock()
	defer s.packMu.Unlock()
	s.loadPacksLocked()
}

func (s *Store) alternates() []*Store {
	s.altOnce.Do(func() {
		f, err := os.Open(filepath.Join(s.dir, "info", "alternates"))
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || line[0] == '#' {
				continue
			}
			if !filepath.IsAbs(line) {
				line = filepath.Join(s.dir, line)
			}
			s.alts = append(s.alts, Open(filepath.Clean(line), s.promisor))
		}
	})
	return s.alts
}

// WithPrefix lists object ids starting with the hex prefix (for abbreviated revisions).
func (s *Store) WithPrefix(prefix string) []plumbing.Hash {
	seen := map[plumbing.Hash]bool{}
	var out []plumbing.Hash
	add := func(h plumbing.Hash) {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	if len(prefix) >= 2 {
		ents, _ := os.ReadDir(filepath.Join(s.dir, prefix[:2]))
		for _, e := range ents {
			name := prefix[:2] + e.Name()
			if len(name) == 40 && strings.HasPrefix(name, prefix) {
				if h, ok := ParseHash(name); ok {
					add(h)
				}
			}
		}
	}
	s.packMu.Lock()
	if !s.loaded {
		s.loadPacksLocked()
	}
	for _, p := range s.packs {
		for _, h := range p.withPrefix(prefix) {
			add(h)
		}
	}
	s.packMu.Unlock()
	for _, a := range s.alternates() {
		for _, h := range a.WithPrefix(prefix) {
			add(h)
		}
	}
	return out
}

// ParseHash reads a 40-digit hex object id.
func ParseHash(s string) (plumbing.Hash, bool) {
	if len(s) != 40 {
		return plumbing.ZeroHash, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return plumbing.ZeroHash, false
		}
	}
	return plumbing.NewHash(s), true
}

// WriteBytes stores small content (trees, commits, small blobs) unless it already exists.
func (s *Store) WriteBytes(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	id := ObjectID(t, data)
	if s.Has(id) {
		return id, nil
	}
	return id, s.WriteKnown(t, id, int64(len(data)), bytes.NewReader(data))
}

// WriteKnown streams size bytes of r as an object whose id the caller computed; a mismatch means
// the source changed while it was read.
func (s *Store) WriteKnown(t plumbing.ObjectType, id plumbing.Hash, size int64, r io.Reader) error {
	got, err := s.WriteStream(t, size, r)
	if err != nil {
		return err
	}
	if got != id {
		return ErrChangedWhileReading
	}
	return nil
}

// ErrChangedWhileReading is content that did not stay what its size or id said while it was read.
var ErrChangedWhileReading = errors.New("content changed while it was read")

// writeStream stores exactly size bytes from r as a loose object and returns its id. Memory stays
// bounded whatever the size. If r ends early or has more than size bytes, nothing is stored and
// ErrChangedWhileReading is returned. Whatever happens (a full disk, a read error) no partial file
// stays behind: see looseWriter.
func (s *Store) WriteStream(t plumbing.ObjectType, size int64, r io.Reader) (plumbing.Hash, error) {
	var hdr bytes.Buffer
	WriteHeader(&hdr, t, size)
	w, err := s.newLooseWriter(int64(hdr.Len()) + size)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write object: %w", err)
	}
	w.Write(hdr.Bytes())
	n, cerr := io.CopyN(w, r, size)
	if cerr == nil {
		var one [1]byte
		if m, _ := r.Read(one[:]); m > 0 {
			cerr = ErrChangedWhileReading
		}
	} else if n < size && (cerr == io.EOF || cerr == io.ErrUnexpectedEOF) {
		cerr = ErrChangedWhileReading
	}
	if cerr != nil {
		w.abort()
		if w.err != nil && !errors.Is(cerr, ErrChangedWhileReading) {
			return plumbing.ZeroHash, fmt.Errorf("write object: %w", w.err)
		}
		return plumbing.ZeroHash, cerr
	}
	id, err := w.finish()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write object %s: %w", id, err)
	}
	return id, nil
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// packIndex is a version-2 pack .idx file, mapped read-only (git writes a pack's index once and
// never changes it; a repack writes new ones and unlinks the old, which stays readable while
// mapped): the fan-out table, the sorted object names for binary search and the offsets that
// readPacked reads an object at. Only the pages a search touches are read.
type packIndex struct {
	path   string
	fanout [256]uint32
	mapped []byte // the whole file when mapped (nil when read into memory)
	names  []byte // count*20
	offs   []byte // count*4: the offset, or (high bit set) an index into large
	large  []byte // 8 bytes each
	pack   *os.File
	// offs32: the offsets are 32 bits, none in large (a version 1 index)
	offs32 bool
}

func openPackIndex(path string) (*packIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	const hdrLen = 8 + 256*4
	size := fi.Size()
	if size < 256*4+40 {
		return nil, fmt.Errorf("%s: truncated pack index", path)
	}
	p := &packIndex{path: path}
	var data []byte
	if m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED); err == nil {
		data, p.mapped = m, m
	} else {
		data = make([]byte, size)
		if _, err := io.ReadFull(f, data); err != nil {
			return nil, err
		}
	}
	if !bytes.Equal(data[:4], []byte{0xff, 't', 'O', 'c'}) {
		return p.v1(data)
	}
	if binary.BigEndian.Uint32(data[4:8]) != 2 || size < hdrLen+40 {
		p.close()
		return nil, fmt.Errorf("%s: unsupported pack index version", path)
	}
	if err := p.readFanout(data[8:]); err != nil {
		return nil, err
	}
	n := int64(p.fanout[255])
	end := hdrLen + n*(20+4+4)
	if end+40 > size {
		p.close()
		return nil, fmt.Errorf("%s: truncated pack index", path)
	}
	p.names = data[hdrLen : hdrLen+n*20]
	p.offs = data[hdrLen+n*24 : end]
	p.large = data[end : size-40]
	return p, nil
}

// v1 reads a version 1 index (git before 1.5.2): the fan-out, then each object's 4-byte offset
// and id, then the trailer. Its entries are copied into the version 2 layout.
func (p *packIndex) v1(data []byte) (*packIndex, error) {
	defer func() {
		if p.mapped != nil {
			unix.Munmap(p.mapped)
			p.mapped = nil
		}
	}()
	if err := p.readFanout(data); err != nil {
		return nil, err
	}
	n := int64(p.fanout[255])
	if 256*4+n*24+40 > int64(len(data)) {
		return nil, fmt.Errorf("%s: truncated pack index", p.path)
	}
	p.names, p.offs = make([]byte, 0, n*20), make([]byte, 0, n*4)
	for i := int64(0); i < n; i++ {
		e := data[256*4+24*i:]
		p.offs = append(p.offs, e[:4]...)
		p.names = append(p.names, e[4:24]...)
	}
	p.offs32 = true
	return p, nil
}

// readFanout reads the 256 counts that start b and checks that they never decrease.
func (p *packIndex) readFanout(b []byte) error {
	for i := 0; i < 256; i++ {
		p.fanout[i] = binary.BigEndian.Uint32(b[4*i:])
		if i > 0 && p.fanout[i] < p.fanout[i-1] {
			p.close()
			return fmt.Errorf("%s: damaged pack index", p.path)
		}
	}
	return nil
}

// close unmaps the index and closes the pack (packMu held, or the index is no one else's).
func (p *packIndex) close() {
	if p.mapped != nil {
		unix.Munmap(p.mapped)
		p.mapped = nil
	}
	p.names, p.offs, p.large = nil, nil, nil
	if p.pack != nil {
		p.pack.Close()
		p.pack = nil
	}
}

// offset is the pack offset of the i-th object.
func (p *packIndex) offset(i int) uint64 {
	o := binary.BigEndian.Uint32(p.offs[4*i:])
	if o&0x80000000 == 0 || p.offs32 {
		return uint64(o)
	}
	j := int(o & 0x7fffffff)
	if 8*j+8 > len(p.large) {
		return 0 // damaged: reading at 0 fails on the pack's header
	}
	return binary.BigEndian.Uint64(p.large[8*j:])
}

func (p *packIndex) bounds(first byte) (int, int) {
	lo := 0
	if first > 0 {
		lo = int(p.fanout[first-1])
	}
	return lo, int(p.fanout[first])
}

func (p *packIndex) contains(h plumbing.Hash) bool {
	_, ok := p.find(h)
	return ok
}

// find returns the position of h in the index.
func (p *packIndex) find(h plumbing.Hash) (int, bool) {
	lo, hi := p.bounds(h[0])
	i := lo + sort.Search(hi-lo, func(i int) bool {
		return bytes.Compare(p.names[(lo+i)*20:(lo+i)*20+20], h[:]) >= 0
	})
	return i, i < hi && bytes.Equal(p.names[i*20:i*20+20], h[:])
}

func (p *packIndex) withPrefix(prefix string) []plumbing.Hash {
	if len(prefix) < 2 {
		return nil
	}
	b, err := strconv.ParseUint(prefix[:2], 16, 8)
	if err != nil {
		return nil
	}
	lo, hi := p.bounds(byte(b))
	var out []plumbing.Hash
	for i := lo; i < hi; i++ {
		var h plumbing.Hash
		copy(h[:], p.names[i*20:i*20+20])
		if strings.HasPrefix(h.String(), prefix) {
			out = append(out, h)
		}
	}
	return out
}
