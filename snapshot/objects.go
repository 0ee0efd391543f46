package snapshot

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

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
	"golang.org/x/sys/unix"
)

// objectStore answers "does this object exist" quickly (loose file or pack index binary search,
// alternates included) and writes loose objects through go-git's streaming dotgit.ObjectWriter.
// Reading object contents goes through go-git's storage (Repo.storage), which knows deltas.
type objectStore struct {
	dir string // <common>/objects

	dgOnce sync.Once
	dg     *dotgit.DotGit
	dgMu   sync.Mutex // DotGit.NewObject resets shared caches

	// present holds the objects this process has seen in the store (plumbing.Hash → struct{}):
	// the runner snapshots the same tree several times, and each untracked file's blob is
	// checked on every one of them.
	present sync.Map

	packMu  sync.Mutex
	loaded  bool
	packs   []*packIndex
	altOnce sync.Once
	alts    []*objectStore
}

func newObjectStore(dir string) *objectStore {
	return &objectStore{dir: dir}
}

func (s *objectStore) close() error {
	s.packMu.Lock()
	defer s.packMu.Unlock()
	s.packs = nil
	s.loaded = false
	for _, a := range s.alts {
		a.close()
	}
	return nil
}

// objectID is the git object id of content of the given type, computed with crypto/sha1 (the
// content is the user's own, so collision detection adds nothing but time).
func objectID(t plumbing.ObjectType, data []byte) plumbing.Hash {
	h := sha1.New()
	writeObjectHeader(h, t, int64(len(data)))
	h.Write(data)
	var id plumbing.Hash
	h.Sum(id[:0])
	return id
}

func writeObjectHeader(w io.Writer, t plumbing.ObjectType, size int64) {
	var buf [32]byte
	b := append(buf[:0], t.String()...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, size, 10)
	b = append(b, 0)
	w.Write(b)
}

// has reports whether the object exists in this store or an alternate.
func (s *objectStore) has(h plumbing.Hash) bool {
	if _, ok := s.present.Load(h); ok {
		return true
	}
	if s.hasUncached(h) {
		s.present.Store(h, struct{}{})
		return true
	}
	return false
}

func (s *objectStore) hasUncached(h plumbing.Hash) bool {
	if s.inPacks(h, false) || s.hasLoose(h) {
		return true
	}
	for _, a := range s.alternates() {
		if a.has(h) {
			return true
		}
	}
	// A concurrent repack may have just moved the object into a new pack.
	return s.inPacks(h, true)
}

// hasLoose is an lstat of the loose object's path, built with one allocation: the walker asks it
// of every file whose content mulligan hashed itself, on every snapshot.
func (s *objectStore) hasLoose(h plumbing.Hash) bool {
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

func (s *objectStore) inPacks(h plumbing.Hash, reload bool) bool {
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

func (s *objectStore) loadPacksLocked() {
	names, _ := filepath.Glob(filepath.Join(s.dir, "pack", "*.idx"))
	have := make(map[string]*packIndex, len(s.packs))
	for _, p := range s.packs {
		have[p.path] = p
	}
	var packs []*packIndex
	for _, n := range names {
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
	s.packs = packs
	s.loaded = true
}

func (s *objectStore) alternates() []*objectStore {
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
			s.alts = append(s.alts, newObjectStore(filepath.Clean(line)))
		}
	})
	return s.alts
}

// withPrefix lists object ids starting with the hex prefix (for abbreviated revisions).
func (s *objectStore) withPrefix(prefix string) []plumbing.Hash {
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
				if h, ok := parseHash(name); ok {
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
		for _, h := range a.withPrefix(prefix) {
			add(h)
		}
	}
	return out
}

func parseHash(s string) (plumbing.Hash, bool) {
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

func (s *objectStore) dotGit() *dotgit.DotGit {
	s.dgOnce.Do(func() {
		s.dg = dotgit.New(osfs.New(filepath.Dir(s.dir)))
	})
	return s.dg
}

func (s *objectStore) newWriter() (*dotgit.ObjectWriter, error) {
	// ObjectWriter puts its temporary file in objects/pack/, which a fresh or hand-made
	// repository may lack.
	if err := os.MkdirAll(filepath.Join(s.dir, "pack"), 0o755); err != nil {
		return nil, err
	}
	s.dgMu.Lock()
	defer s.dgMu.Unlock()
	return s.dotGit().NewObject()
}

// writeBytes stores small content (trees, commits, small blobs) unless it already exists.
func (s *objectStore) writeBytes(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	id := objectID(t, data)
	if s.has(id) {
		return id, nil
	}
	return id, s.writeKnown(t, id, int64(len(data)), bytes.NewReader(data))
}

// writeKnown streams size bytes of r as an object whose id the caller computed; a mismatch means
// the source changed while it was read.
func (s *objectStore) writeKnown(t plumbing.ObjectType, id plumbing.Hash, size int64, r io.Reader) error {
	got, err := s.writeStream(t, size, r)
	if err != nil {
		return err
	}
	if got != id {
		return errChangedWhileReading
	}
	return nil
}

var errChangedWhileReading = errors.New("content changed while it was read")

// writeStream stores exactly size bytes from r as a loose object and returns its id. Memory stays
// bounded whatever the size. If r ends early or has more than size bytes, the object is still
// completed (zero-padded: a well-formed, unreferenced object that gc prunes, never a stray temp
// file) and errChangedWhileReading is returned.
func (s *objectStore) writeStream(t plumbing.ObjectType, size int64, r io.Reader) (plumbing.Hash, error) {
	w, err := s.newWriter()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write object: %w", err)
	}
	if err := w.WriteHeader(t, size); err != nil {
		w.Close()
		return plumbing.ZeroHash, err
	}
	n, cerr := io.CopyN(&w.Writer, r, size)
	if n < size {
		if _, err := io.CopyN(&w.Writer, zeroReader{}, size-n); err != nil && cerr == nil {
			cerr = err
		}
		if cerr == nil || cerr == io.EOF {
			cerr = errChangedWhileReading
		}
	} else if cerr == nil {
		var one [1]byte
		if m, _ := r.Read(one[:]); m > 0 {
			cerr = errChangedWhileReading
		}
	}
	id := w.Hash()
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write object %s: %w", id, err)
	}
	if cerr != nil {
		return plumbing.ZeroHash, cerr
	}
	return id, nil
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// packIndex is a version-2 pack .idx file read into memory once: the fan-out table and the sorted
// object names, enough for binary search.
type packIndex struct {
	path   string
	fanout [256]uint32
	names  []byte // count*20
}

func openPackIndex(path string) (*packIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var hdr [8 + 256*4]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return nil, err
	}
	if !bytes.Equal(hdr[:4], []byte{0xff, 't', 'O', 'c'}) || binary.BigEndian.Uint32(hdr[4:8]) != 2 {
		return nil, fmt.Errorf("%s: unsupported pack index version", path)
	}
	p := &packIndex{path: path}
	for i := 0; i < 256; i++ {
		p.fanout[i] = binary.BigEndian.Uint32(hdr[8+4*i:])
	}
	n := int(p.fanout[255])
	p.names = make([]byte, n*20)
	if _, err := io.ReadFull(f, p.names); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *packIndex) bounds(first byte) (int, int) {
	lo := 0
	if first > 0 {
		lo = int(p.fanout[first-1])
	}
	return lo, int(p.fanout[first])
}

func (p *packIndex) contains(h plumbing.Hash) bool {
	lo, hi := p.bounds(h[0])
	i := lo + sort.Search(hi-lo, func(i int) bool {
		return bytes.Compare(p.names[(lo+i)*20:(lo+i)*20+20], h[:]) >= 0
	})
	return i < hi && bytes.Equal(p.names[i*20:i*20+20], h[:])
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
