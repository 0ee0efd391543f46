package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/mulligan-dev/mulligan/snapshot/internal/odb"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// RefEntry is one ref and the object it points to.
type RefEntry struct {
	Name string
	Hash plumbing.Hash
}

// checkRefName applies the parts of git's check-ref-format that matter for files on disk.
func checkRefName(name string) error {
	bad := func(why string) error { return fmt.Errorf("invalid ref name %q: %s", name, why) }
	if name == "HEAD" {
		return nil
	}
	if !strings.HasPrefix(name, "refs/") {
		return bad("must start with refs/")
	}
	if strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") || strings.HasSuffix(name, ".lock") {
		return bad("bad ending")
	}
	if strings.Contains(name, "..") || strings.Contains(name, "@{") || strings.Contains(name, "//") {
		return bad("forbidden sequence")
	}
	for _, c := range []byte(name) {
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return bad("forbidden character")
		}
	}
	for _, comp := range strings.Split(name, "/") {
		if comp == "" || comp[0] == '.' || strings.HasSuffix(comp, ".lock") {
			return bad("bad component")
		}
	}
	return nil
}

// perWorktreeRef reports whether name lives in the worktree's own git dir, as git's
// is_per_worktree_ref and pseudo-refs (HEAD, ORIG_HEAD, refs/bisect/ …) do.
func perWorktreeRef(name string) bool {
	if !strings.HasPrefix(name, "refs/") {
		return true
	}
	for _, p := range []string{"refs/worktree/", "refs/bisect/", "refs/rewritten/"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func (r *Repo) refPath(name string) string {
	if perWorktreeRef(name) {
		return filepath.Join(r.gitDir, filepath.FromSlash(name))
	}
	return filepath.Join(r.commonDir, filepath.FromSlash(name))
}

// rawRef reads one ref without following symbolic refs: its hash, or its symbolic target.
func (r *Repo) rawRef(name string) (h plumbing.Hash, target string, found bool, err error) {
	data, err := os.ReadFile(r.refPath(name))
	switch {
	case err == nil:
		s := strings.TrimSpace(string(data))
		if strings.HasPrefix(s, "ref:") {
			return plumbing.ZeroHash, strings.TrimSpace(s[4:]), true, nil
		}
		h, ok := odb.ParseHash(s)
		if !ok {
			return plumbing.ZeroHash, "", false, fmt.Errorf("ref %s: bad content %q", name, s)
		}
		return h, "", true, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR):
	default:
		return plumbing.ZeroHash, "", false, fmt.Errorf("read ref %s: %w", name, err)
	}
	if perWorktreeRef(name) {
		return plumbing.ZeroHash, "", false, nil
	}
	packed, err := r.packedRefs()
	if err != nil {
		return plumbing.ZeroHash, "", false, err
	}
	if h, ok := packed[name]; ok {
		return h, "", true, nil
	}
	return plumbing.ZeroHash, "", false, nil
}

// resolveRef follows symbolic refs (at most five levels, like git).
func (r *Repo) resolveRef(name string) (plumbing.Hash, bool, error) {
	for depth := 0; depth < 5; depth++ {
		h, target, found, err := r.rawRef(name)
		if err != nil || !found {
			return plumbing.ZeroHash, false, err
		}
		if target == "" {
			return h, true, nil
		}
		name = target
	}
	return plumbing.ZeroHash, false, fmt.Errorf("ref %s: symbolic ref loop", name)
}

// packedRefs parses <common>/packed-refs ("<hash> <name>" lines, "^" peel lines, "#" header).
func (r *Repo) packedRefs() (map[string]plumbing.Hash, error) {
	data, err := os.ReadFile(filepath.Join(r.commonDir, "packed-refs"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("read packed-refs: %w", err)
	}
	return parsePackedRefs(data), nil
}

// parsePackedRefs reads a packed-refs file: "<id> <name>" lines, with "^<id>" peeled lines and a
// "#" header skipped. A line git would not take is skipped, and so is a ref whose name git
// marks broken (REF_BAD_NAME): git lists neither.
func parsePackedRefs(data []byte) map[string]plumbing.Hash {
	out := make(map[string]plumbing.Hash)
	for rest := data; len(rest) > 0; {
		var line []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			line, rest = rest, nil
		}
		if len(line) == 0 || line[0] == '#' || line[0] == '^' {
			continue
		}
		if bytes.IndexByte(line, ' ') != 40 {
			continue
		}
		name := string(line[41:])
		if h, ok := odb.ParseHash(string(line[:40])); ok && checkRefName(name) == nil {
			out[name] = h
		}
	}
	return out
}

// Ref returns the object a ref points to (following symbolic refs). Missing: ErrRefNotFound.
func (r *Repo) Ref(name string) (plumbing.Hash, error) {
	h, found, err := r.resolveRef(name)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if !found {
		return plumbing.ZeroHash, fmt.Errorf("%w: %s", ErrRefNotFound, name)
	}
	return h, nil
}

// Head returns HEAD's commit, or the zero hash and no error when HEAD is unborn.
func (r *Repo) Head() (plumbing.Hash, error) {
	h, _, err := r.resolveRef("HEAD")
	return h, err
}

// Refs lists the refs whose names start with prefix, loose and packed, sorted by name.
func (r *Repo) Refs(prefix string) ([]RefEntry, error) {
	packed, err := r.packedRefs()
	if err != nil {
		return nil, err
	}
	all := make(map[string]plumbing.Hash, len(packed))
	for n, h := range packed {
		all[n] = h
	}
	base := filepath.Join(r.commonDir, "refs")
	err = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasSuffix(p, ".lock") {
			return nil
		}
		rel, err := filepath.Rel(r.commonDir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if !strings.HasPrefix(name, prefix) && !strings.HasPrefix(prefix, name) {
			return nil
		}
		h, found, err := r.resolveRef(name)
		if err != nil || !found {
			return nil // a broken or dangling loose ref is not worth failing the listing
		}
		all[name] = h
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list refs: %w", err)
	}
	var out []RefEntry
	for n, h := range all {
		if strings.HasPrefix(n, prefix) {
			out = append(out, RefEntry{Name: n, Hash: h})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// lockFile is git's lock-file protocol: create <path>.lock exclusively, write, rename over path.
type lockFile struct {
	path string
	f    *os.File
}

// lockTimeout is how long acquireLock waits for a lock someone else holds: git's
// core.packedRefsTimeout default (git gc's pack-refs holds each loose ref's lock for a moment).
const lockTimeout = time.Second

// acquireLock takes path's lock file, making its directory as needed. A directory that vanishes
// between the mkdir and the create (git gc's pack-refs removes the directories it empties) is made
// again, and a lock another process holds is waited for up to lockTimeout, as git does.
func acquireLock(path string) (*lockFile, error) {
	deadline := time.Now().Add(lockTimeout)
	wait := time.Millisecond
	for try := 0; ; try++ {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			if errors.Is(err, fs.ErrNotExist) && try < 20 {
				continue
			}
			return nil, err
		}
		f, err := os.OpenFile(path+".lock", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		switch {
		case err == nil:
			return &lockFile{path: path, f: f}, nil
		case errors.Is(err, fs.ErrNotExist) && try < 20:
			continue
		case errors.Is(err, fs.ErrExist) && time.Now().Before(deadline):
			time.Sleep(wait)
			wait = min(2*wait, 50*time.Millisecond)
			continue
		case errors.Is(err, fs.ErrExist):
			return nil, fmt.Errorf("%w: %s.lock exists (another update in progress, or a stale lock to remove)", ErrRefConflict, path)
		}
		return nil, err
	}
}

func (l *lockFile) commit(content []byte) error {
	if _, err := l.f.Write(content); err != nil {
		l.rollback()
		return err
	}
	if err := l.f.Close(); err != nil {
		os.Remove(l.path + ".lock")
		return err
	}
	l.f = nil
	if err := os.Rename(l.path+".lock", l.path); err != nil {
		os.Remove(l.path + ".lock")
		return err
	}
	return nil
}

func (l *lockFile) rollback() {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	os.Remove(l.path + ".lock")
}

// UpdateRef sets ref name to new if it currently holds old; a zero old means the ref must not
// exist yet. A mismatch returns an error wrapping ErrRefConflict.
func (r *Repo) UpdateRef(name string, new, old plumbing.Hash) error {
	if err := checkRefName(name); err != nil {
		return err
	}
	if new.IsZero() {
		return fmt.Errorf("update ref %s: zero hash (use DeleteRef)", name)
	}
	path := r.refPath(name)
	lock, err := acquireLock(path)
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			if p := r.looseRefAbove(name); p != "" {
				return fmt.Errorf("update ref %s: ref %s exists; cannot create %s", name, p, name)
			}
		}
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	cur, target, found, err := r.rawRef(name)
	if err != nil {
		lock.rollback()
		return err
	}
	if target != "" {
		lock.rollback()
		return fmt.Errorf("update ref %s: it is a symbolic ref to %s", name, target)
	}
	switch {
	case old.IsZero() && found:
		lock.rollback()
		return fmt.Errorf("%w: %s already exists at %s", ErrRefConflict, name, cur)
	case !old.IsZero() && !found:
		lock.rollback()
		return fmt.Errorf("%w: %s does not exist (expected %s)", ErrRefConflict, name, old)
	case !old.IsZero() && cur != old:
		lock.rollback()
		return fmt.Errorf("%w: %s is at %s (expected %s)", ErrRefConflict, name, cur, old)
	}
	if err := r.checkDF(name, path); err != nil {
		lock.rollback()
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	if err := lock.commit([]byte(new.String() + "\n")); err != nil {
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	return nil
}

// checkDF refuses a ref that would be a directory of another ref or live inside one (git's
// files backend cannot hold both refs/x/1 and refs/x/1/pre, loose or packed). It runs with the
// ref's lock taken, so every directory above the ref's file exists (acquireLock made them): no
// loose ref can be one of them, and only the packed refs are looked at for those.
func (r *Repo) checkDF(name, path string) error {
	packed, err := r.packedRefs()
	if err != nil {
		return err
	}
	for i := len("refs/"); i < len(name); i++ {
		if name[i] != '/' || perWorktreeRef(name[:i]) {
			continue
		}
		if _, found := packed[name[:i]]; found {
			return fmt.Errorf("ref %s exists; cannot create %s", name[:i], name)
		}
	}
	for p := range packed {
		if strings.HasPrefix(p, name+"/") {
			return fmt.Errorf("ref %s exists; cannot create %s", p, name)
		}
	}
	if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
		// Empty directories left by deleted refs are removed, as git does; real refs below stop us.
		if n := countFiles(path); n > 0 {
			return fmt.Errorf("refs exist below %s; cannot create it", name)
		}
		if err := os.RemoveAll(path); err != nil {
			return err
		}
	}
	return nil
}

// looseRefAbove is the loose ref whose file stands where a directory of name would be, "" when
// there is none.
func (r *Repo) looseRefAbove(name string) string {
	for i := len("refs/"); i < len(name); i++ {
		if name[i] != '/' {
			continue
		}
		if fi, err := os.Lstat(r.refPath(name[:i])); err == nil && fi.Mode().IsRegular() {
			return name[:i]
		}
	}
	return ""
}

func countFiles(dir string) int {
	n := 0
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// DeleteRef removes ref name, loose and packed. A non-zero old must match its current value.
func (r *Repo) DeleteRef(name string, old plumbing.Hash) error {
	if err := checkRefName(name); err != nil {
		return err
	}
	path := r.refPath(name)
	lock, err := acquireLock(path)
	if err != nil {
		return fmt.Errorf("delete ref %s: %w", name, err)
	}
	defer lock.rollback()
	cur, target, found, err := r.rawRef(name)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%w: %s", ErrRefNotFound, name)
	}
	if target == "" && !old.IsZero() && cur != old {
		return fmt.Errorf("%w: %s is at %s (expected %s)", ErrRefConflict, name, cur, old)
	}
	if !perWorktreeRef(name) {
		if err := r.removePackedRef(name); err != nil {
			return fmt.Errorf("delete ref %s: %w", name, err)
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete ref %s: %w", name, err)
	}
	lock.rollback()
	// Prune directories the ref leaves empty, as git does, up to (not including) refs/.
	stop := filepath.Dir(r.refPath("refs/x")) // <common>/refs, or <git-dir>/refs for per-worktree refs
	for d := filepath.Dir(path); len(d) > len(stop) && strings.HasPrefix(d, stop); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			break
		}
	}
	return nil
}

// removePackedRef rewrites packed-refs without name (under packed-refs.lock), if it is there.
func (r *Repo) removePackedRef(name string) error {
	pr := filepath.Join(r.commonDir, "packed-refs")
	data, err := os.ReadFile(pr)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if !bytes.Contains(data, []byte(" "+name+"\n")) && !bytes.HasSuffix(data, []byte(" "+name)) {
		return nil
	}
	lock, err := acquireLock(pr)
	if err != nil {
		return err
	}
	data, err = os.ReadFile(pr) // re-read under the lock
	if err != nil {
		lock.rollback()
		return err
	}
	var out bytes.Buffer
	lines := strings.SplitAfter(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		t := strings.TrimRight(line, "\n")
		if len(t) > 41 && t[40] == ' ' && t[41:] == name {
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "^") {
				i++
			}
			continue
		}
		out.WriteString(line)
	}
	return lock.commit(out.Bytes())
}
