package snapshot

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Action says how a path differs between two trees.
type Action int

const (
	Add        Action = iota + 1 // absent before
	Modify                       // same kind of entry, new content
	Delete                       // absent after
	ModeChange                   // same content, executable bit changed
	TypeChange                   // file, symlink and gitlink turned into one another
)

func (a Action) String() string {
	switch a {
	case Add:
		return "add"
	case Modify:
		return "modify"
	case Delete:
		return "delete"
	case ModeChange:
		return "mode"
	case TypeChange:
		return "type"
	}
	return "unknown"
}

// Entry is one side of a change; zero when the path is absent on that side.
type Entry struct {
	Mode filemode.FileMode
	Hash plumbing.Hash
}

// Change is one differing path (never a directory: directories are walked into).
type Change struct {
	Path     string
	Action   Action
	From, To Entry
}

type treeEntry struct {
	name string
	mode uint32
	hash plumbing.Hash
}

func (e *treeEntry) isDir() bool { return e.mode == modeTree }

// readTree returns a tree's entries in tree order; the zero hash is the empty tree.
func (r *Repo) readTree(h plumbing.Hash) ([]treeEntry, error) {
	if h.IsZero() || h == emptyTree {
		return nil, nil
	}
	t, data, err := r.objs.Data(h)
	switch {
	case err == nil && t != plumbing.TreeObject:
		return nil, fmt.Errorf("read tree %s: %w", h, plumbing.ErrObjectNotFound)
	case err == nil:
		return parseTree(data, h)
	}
	for try := 0; try < 2; try++ { // an alternate's tree (or a tree over 1 MB)
		var obj plumbing.EncodedObject
		if obj, err = r.encodedObject(plumbing.TreeObject, h); err != nil {
			break
		}
		var rd io.ReadCloser
		if rd, err = obj.Reader(); err == nil {
			data, err = io.ReadAll(rd)
			rd.Close()
		}
		if err == nil {
			break
		}
		r.objs.ReloadPacks() // its pack went away meanwhile (a concurrent repack): list them again
	}
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	return parseTree(data, h)
}

func parseTree(data []byte, h plumbing.Hash) ([]treeEntry, error) {
	var out []treeEntry
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("tree %s is corrupt", h)
		}
		mode, err := strconv.ParseUint(string(data[:sp]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("tree %s has a bad mode", h)
		}
		data = data[sp+1:]
		z := bytes.IndexByte(data, 0)
		if z < 0 || len(data) < z+21 {
			return nil, fmt.Errorf("tree %s is corrupt", h)
		}
		e := treeEntry{name: string(data[:z]), mode: uint32(mode)}
		copy(e.hash[:], data[z+1:z+21])
		data = data[z+21:]
		out = append(out, e)
	}
	return out, nil
}

// DiffTrees lists the paths that differ between trees a and b (either may be zero: the empty
// tree), sorted by path. Identical subtrees are skipped without being read, so the cost grows
// with the number of differences, not with the size of the trees.
func (r *Repo) DiffTrees(a, b plumbing.Hash) ([]Change, error) {
	var out []Change
	if err := r.diffTrees("", a, b, &out); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func (r *Repo) diffTrees(prefix string, a, b plumbing.Hash, out *[]Change) error {
	if a == b {
		return nil
	}
	ea, err := r.readTree(a)
	if err != nil {
		return err
	}
	eb, err := r.readTree(b)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		var c int
		switch {
		case i >= len(ea):
			c = 1
		case j >= len(eb):
			c = -1
		default:
			c = treeCompare(ea[i].name, ea[i].isDir(), eb[j].name, eb[j].isDir())
		}
		switch {
		case c < 0:
			if err := r.diffOne(prefix, &ea[i], nil, out); err != nil {
				return err
			}
			i++
		case c > 0:
			if err := r.diffOne(prefix, nil, &eb[j], out); err != nil {
				return err
			}
			j++
		default:
			if err := r.diffOne(prefix, &ea[i], &eb[j], out); err != nil {
				return err
			}
			i++
			j++
		}
	}
	return nil
}

func (r *Repo) diffOne(prefix string, x, y *treeEntry, out *[]Change) error {
	var name string
	if x != nil {
		name = x.name
	} else {
		name = y.name
	}
	path := name
	if prefix != "" {
		path = prefix + "/" + name
	}
	switch {
	case x != nil && x.isDir() || y != nil && y.isDir():
		// Tree keys differ for a file and a directory of one name, so both sides are
		// directories here, or one side is absent.
		var ha, hb plumbing.Hash
		if x != nil {
			ha = x.hash
		}
		if y != nil {
			hb = y.hash
		}
		return r.diffTrees(path, ha, hb, out)
	case x == nil:
		*out = append(*out, Change{Path: path, Action: Add, To: Entry{filemode.FileMode(y.mode), y.hash}})
	case y == nil:
		*out = append(*out, Change{Path: path, Action: Delete, From: Entry{filemode.FileMode(x.mode), x.hash}})
	case x.mode == y.mode && x.hash == y.hash:
	default:
		c := Change{Path: path, From: Entry{filemode.FileMode(x.mode), x.hash}, To: Entry{filemode.FileMode(y.mode), y.hash}}
		switch {
		case entryKind(x.mode) != entryKind(y.mode):
			c.Action = TypeChange
		case x.hash != y.hash:
			c.Action = Modify
		default:
			c.Action = ModeChange
		}
		*out = append(*out, c)
	}
	return nil
}

func entryKind(mode uint32) uint32 {
	switch mode {
	case modeRegular, modeExec, 0o100664:
		return modeRegular
	}
	return mode & modeFmt
}
