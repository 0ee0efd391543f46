package snapshot

import (
	"fmt"
	"github.com/mulligan-dev/mulligan/snapshot/internal/odb"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// ResolveRevision accepts a full or abbreviated (4+ hex digits) object id or a ref name (full, or
// short as git's DWIM rules allow: `main`, `mulligan/manual/x`, `HEAD`), optionally followed by
// `^{tree}`, `^{commit}`, `^{}`, `~N`, `^N` in any sequence. It returns the tree and the commit
// (zero when rev names a tree). A bad revision is an error wrapping ErrBadRevision.
func (r *Repo) ResolveRevision(rev string) (tree, commit plumbing.Hash, err error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrBadRevision, rev, fmt.Sprintf(format, args...))
	}
	cut := strings.IndexAny(rev, "^~")
	base, rest := rev, ""
	if cut >= 0 {
		base, rest = rev[:cut], rev[cut:]
	}
	if base == "" {
		return tree, commit, bad("empty revision")
	}
	id, err := r.resolveBase(base)
	if err != nil {
		return tree, commit, bad("%v", err)
	}
	for rest != "" {
		switch {
		case strings.HasPrefix(rest, "^{"):
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return tree, commit, bad("unterminated ^{")
			}
			want := rest[2:end]
			rest = rest[end+1:]
			switch want {
			case "tree":
				t, _, err := r.peel(id)
				if err != nil {
					return tree, commit, bad("%v", err)
				}
				id = t
			case "commit":
				_, c, err := r.peel(id)
				if err != nil || c.IsZero() {
					return tree, commit, bad("not a commit")
				}
				id = c
			case "":
				if id, err = r.peelTags(id); err != nil {
					return tree, commit, bad("%v", err)
				}
			default:
				return tree, commit, bad("unsupported ^{%s}", want)
			}
		case rest[0] == '~' || rest[0] == '^':
			op := rest[0]
			k := 1
			for k < len(rest) && rest[k] >= '0' && rest[k] <= '9' {
				k++
			}
			n := 1
			if k > 1 {
				if n, err = strconv.Atoi(rest[1:k]); err != nil {
					return tree, commit, bad("bad number")
				}
			}
			rest = rest[k:]
			_, c, err := r.peel(id)
			if err != nil || c.IsZero() {
				return tree, commit, bad("%c needs a commit", op)
			}
			if op == '~' {
				for i := 0; i < n; i++ {
					if c, err = r.parent(c, 1); err != nil {
						return tree, commit, bad("%v", err)
					}
				}
			} else if n > 0 {
				if c, err = r.parent(c, n); err != nil {
					return tree, commit, bad("%v", err)
				}
			}
			id = c
		default:
			return tree, commit, bad("cannot parse %q", rest)
		}
	}
	tree, commit, err = r.peel(id)
	if err != nil {
		return plumbing.ZeroHash, plumbing.ZeroHash, bad("%v", err)
	}
	return tree, commit, nil
}

// resolveBase finds the object a full id, ref name or abbreviated id names; refs win over
// abbreviations, as in git.
func (r *Repo) resolveBase(base string) (plumbing.Hash, error) {
	if h, ok := odb.ParseHash(strings.ToLower(base)); ok {
		if !r.objs.Has(h) {
			return h, fmt.Errorf("object %s does not exist", h)
		}
		return h, nil
	}
	for _, name := range []string{base, "refs/" + base, "refs/tags/" + base, "refs/heads/" + base,
		"refs/remotes/" + base, "refs/remotes/" + base + "/HEAD"} {
		if name != "HEAD" && checkRefName(name) != nil && !isPseudoRef(name) {
			continue
		}
		h, found, err := r.resolveRef(name)
		if err != nil {
			return h, err
		}
		if found {
			return h, nil
		}
		if name == "HEAD" {
			return h, fmt.Errorf("HEAD has no commit yet")
		}
	}
	if len(base) >= 4 && len(base) < 40 && isHex(base) {
		ids := r.objs.WithPrefix(strings.ToLower(base))
		switch len(ids) {
		case 1:
			return ids[0], nil
		case 0:
		default:
			return plumbing.ZeroHash, fmt.Errorf("short object id %s is ambiguous", base)
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("unknown revision")
}

func isPseudoRef(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !(c >= 'A' && c <= 'Z' || c == '_') {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// readObject returns an object's type and (for small objects) content.
func (r *Repo) readObject(h plumbing.Hash) (plumbing.ObjectType, plumbing.EncodedObject, error) {
	obj, err := r.encodedObject(plumbing.AnyObject, h)
	if err != nil {
		return plumbing.InvalidObject, nil, fmt.Errorf("object %s: %w", h, err)
	}
	return obj.Type(), obj, nil
}

// peelTags follows annotated tags to the object they name.
func (r *Repo) peelTags(h plumbing.Hash) (plumbing.Hash, error) {
	for depth := 0; depth < 10; depth++ {
		t, obj, err := r.readObject(h)
		if err != nil {
			return h, err
		}
		if t != plumbing.TagObject {
			return h, nil
		}
		data, err := objectBytes(obj)
		if err != nil {
			return h, err
		}
		if h, err = parseTagTarget(data); err != nil {
			return h, err
		}
	}
	return h, fmt.Errorf("tag chain too long")
}

// peel returns the tree an object stands for, and the commit when it is (or tags) a commit.
func (r *Repo) peel(h plumbing.Hash) (tree, commit plumbing.Hash, err error) {
	h, err = r.peelTags(h)
	if err != nil {
		return
	}
	t, obj, err := r.readObject(h)
	if err != nil {
		return
	}
	switch t {
	case plumbing.TreeObject:
		return h, plumbing.ZeroHash, nil
	case plumbing.CommitObject:
		c, err := decodeCommit(obj)
		if err != nil {
			return tree, commit, err
		}
		return c.tree, h, nil
	}
	return tree, commit, fmt.Errorf("%s is a %s, not a tree or commit", h, t)
}

func decodeCommit(obj plumbing.EncodedObject) (*commitObject, error) {
	data, err := objectBytes(obj)
	if err != nil {
		return nil, err
	}
	return parseCommit(data)
}

func (r *Repo) parent(c plumbing.Hash, n int) (plumbing.Hash, error) {
	_, obj, err := r.readObject(c)
	if err != nil {
		return c, err
	}
	cm, err := decodeCommit(obj)
	if err != nil {
		return c, err
	}
	if n < 1 || n > len(cm.parents) {
		return c, fmt.Errorf("commit %s has no parent %d", c, n)
	}
	return cm.parents[n-1], nil
}
