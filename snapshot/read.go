package snapshot

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// The reads other packages need from the object store. They go through the Repo's object store
// (snapshot/internal/odb): no other package opens an object storage of its own.

// Hash is a git object id. It is go-git's type, named here so that the engine's callers need
// not import go-git.
type Hash = plumbing.Hash

// ZeroHash is the zero object id: no object (an absent side, an unborn HEAD).
var ZeroHash Hash

// NewHash reads a hexadecimal object id; a malformed one gives ZeroHash's neighbours, as
// go-git's does, so ids read from the history are checked by the read that uses them.
func NewHash(s string) Hash { return plumbing.NewHash(s) }

// ErrTooLarge means a read stopped at the caller's limit.
var ErrTooLarge = errors.New("too large")

// ReadBlob returns blob h's content. limit > 0 refuses (ErrTooLarge) a blob larger than limit
// without reading it.
func (r *Repo) ReadBlob(h Hash, limit int64) ([]byte, error) {
	obj, err := r.encodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	if limit > 0 && obj.Size() > limit {
		return nil, fmt.Errorf("blob %s is %d bytes: %w", h, obj.Size(), ErrTooLarge)
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	defer rd.Close()
	data, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	return data, nil
}

// CommitInfo is what mulligan reads of a commit.
type CommitInfo struct {
	Tree    Hash
	Parents []Hash
	Message string
}

// ReadCommit reads commit h.
func (r *Repo) ReadCommit(h Hash) (*CommitInfo, error) {
	_, obj, err := r.readObject(h)
	if err != nil {
		return nil, err
	}
	if obj.Type() != plumbing.CommitObject {
		return nil, fmt.Errorf("%s is a %s, not a commit", h, obj.Type())
	}
	c, err := decodeCommit(obj)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", h, err)
	}
	return &CommitInfo{Tree: c.tree, Parents: c.parents, Message: c.message}, nil
}

// HasPath reports whether tree holds path (a file, a link, a submodule or a directory).
func (r *Repo) HasPath(tree Hash, path string) (bool, error) {
	p := filepath.ToSlash(filepath.Clean(path))
	if p == "." || p == "" {
		return !tree.IsZero(), nil
	}
	e, err := r.lookupEntry(tree, strings.Split(p, "/"))
	return e != nil, err
}

// IsDir reports whether tree holds a directory at path.
func (r *Repo) IsDir(tree Hash, path string) (bool, error) {
	p := filepath.ToSlash(filepath.Clean(path))
	if p == "." || p == "" {
		return !tree.IsZero(), nil
	}
	e, err := r.lookupEntry(tree, strings.Split(p, "/"))
	return e != nil && e.isDir(), err
}

// ReadPath returns the content of the file (or link) at path in tree, os.ErrNotExist wrapped when
// tree holds none there. limit is ReadBlob's.
func (r *Repo) ReadPath(tree Hash, path string, limit int64) ([]byte, error) {
	p := filepath.ToSlash(filepath.Clean(path))
	e, err := r.lookupEntry(tree, strings.Split(p, "/"))
	if err != nil {
		return nil, err
	}
	if e == nil || e.isDir() || filemode.FileMode(e.mode) == filemode.Submodule {
		return nil, fmt.Errorf("%s in tree %s: %w", p, tree, os.ErrNotExist)
	}
	return r.ReadBlob(e.hash, limit)
}

// MaterializeLimits bound what Materialize writes.
type MaterializeLimits struct {
	Files int   // regular files and links; 0: no limit
	Bytes int64 // their total size; 0: no limit
}

// Materialize writes tree's files under dir (which must exist) as stored: no eol conversion
// and no smudge filter, regular files with their executable bit, symlinks as symlinks,
// submodules as empty directories. It never touches the working tree or the index. A tree
// past lim stops with ErrTooLarge, leaving what it wrote for the caller to remove.
func (r *Repo) Materialize(tree Hash, dir string, lim MaterializeLimits) error {
	m := materializer{r: r, lim: lim}
	return m.tree(tree, dir)
}

type materializer struct {
	r     *Repo
	lim   MaterializeLimits
	files int
	bytes int64
}

func (m *materializer) tree(h Hash, dir string) error {
	entries, err := m.r.readTree(h)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.ContainsAny(e.name, "/\x00") || e.name == "." || e.name == ".." || strings.EqualFold(e.name, ".git") {
			return fmt.Errorf("unsafe tree entry %q", e.name)
		}
		p := filepath.Join(dir, e.name)
		switch filemode.FileMode(e.mode) {
		case filemode.Dir:
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
			if err := m.tree(e.hash, p); err != nil {
				return err
			}
		case filemode.Submodule:
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
		case filemode.Regular, filemode.Executable, filemode.Deprecated, filemode.Symlink:
			if err := m.file(e, p); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *materializer) file(e treeEntry, p string) error {
	m.files++
	if m.lim.Files > 0 && m.files > m.lim.Files {
		return fmt.Errorf("more than %d files: %w", m.lim.Files, ErrTooLarge)
	}
	limit := int64(0)
	if m.lim.Bytes > 0 {
		limit = m.lim.Bytes - m.bytes
		if limit <= 0 {
			return fmt.Errorf("more than %d bytes: %w", m.lim.Bytes, ErrTooLarge)
		}
	}
	data, err := m.r.ReadBlob(e.hash, limit)
	if err != nil {
		return err
	}
	m.bytes += int64(len(data))
	mode := filemode.FileMode(e.mode)
	if mode == filemode.Symlink {
		return os.Symlink(string(data), p)
	}
	perm := os.FileMode(0o644)
	if mode == filemode.Executable {
		perm = 0o755
	}
	fh, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := fh.Write(data); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
