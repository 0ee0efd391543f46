package snapshot

import (
	"bytes"
	"fmt"
	"github.com/mulligan-dev/mulligan/snapshot/internal/odb"
	"io"
	"strconv"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Commits and tags are read and written here rather than through go-git's plumbing/object,
// whose package brings an OpenPGP implementation and its curves (29 packages, 1.9 MB of binary,
// ~4 ms of every mulligan command's start) for signatures mulligan never checks.

// commitObject is what mulligan reads of a commit.
type commitObject struct {
	tree      plumbing.Hash
	parents   []plumbing.Hash
	committer time.Time // zero when the committer line has no readable time
	message   string    // everything after the headers' empty line
}

// objectBytes reads obj whole (commits and tags are small).
func objectBytes(obj plumbing.EncodedObject) ([]byte, error) {
	rd, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// headers calls fn for each header line of a commit or tag (name and value; a continuation
// line, which starts with a space, belongs to the header before it and is skipped: gpgsig,
// mergetag) and returns what follows the empty line that ends them.
func headers(data []byte, fn func(name string, value []byte) error) (string, error) {
	for len(data) > 0 {
		line := data
		rest := []byte(nil)
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, rest = data[:i], data[i+1:]
		}
		data = rest
		if len(line) == 0 {
			return string(data), nil
		}
		if line[0] == ' ' {
			continue
		}
		name, value, _ := bytes.Cut(line, []byte{' '})
		if err := fn(string(name), value); err != nil {
			return "", err
		}
	}
	return "", nil // headers only, no message
}

func parseHex(name string, value []byte) (plumbing.Hash, error) {
	h, ok := odb.ParseHash(string(value))
	if !ok {
		return plumbing.ZeroHash, fmt.Errorf("bad %s line %q", name, value)
	}
	return h, nil
}

// parseCommit reads a commit object: its tree, parents, committer time and message.
func parseCommit(data []byte) (*commitObject, error) {
	c := &commitObject{}
	msg, err := headers(data, func(name string, value []byte) error {
		var err error
		switch name {
		case "tree":
			c.tree, err = parseHex(name, value)
		case "parent":
			var p plumbing.Hash
			if p, err = parseHex(name, value); err == nil {
				c.parents = append(c.parents, p)
			}
		case "committer":
			c.committer = signatureTime(value)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if c.tree.IsZero() {
		return nil, fmt.Errorf("commit without a tree line")
	}
	c.message = msg
	return c, nil
}

// signatureTime is the time of an identity line, "Name <email> 1700000000 +0100" (git's
// ident format; what follows the last '>'), in its own zone.
func signatureTime(v []byte) time.Time {
	i := bytes.LastIndexByte(v, '>')
	if i < 0 {
		return time.Time{}
	}
	f := bytes.Fields(v[i+1:])
	if len(f) == 0 {
		return time.Time{}
	}
	sec, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return time.Time{}
	}
	t := time.Unix(sec, 0)
	if len(f) > 1 && len(f[1]) == 5 && (f[1][0] == '+' || f[1][0] == '-') {
		hh, err1 := strconv.Atoi(string(f[1][1:3]))
		mm, err2 := strconv.Atoi(string(f[1][3:5]))
		if err1 == nil && err2 == nil {
			off := (hh*60 + mm) * 60
			if f[1][0] == '-' {
				off = -off
			}
			t = t.In(time.FixedZone("", off))
		}
	}
	return t
}

// parseTagTarget is the object an annotated tag names.
func parseTagTarget(data []byte) (plumbing.Hash, error) {
	var target plumbing.Hash
	_, err := headers(data, func(name string, value []byte) error {
		if name != "object" {
			return nil
		}
		var err error
		target, err = parseHex(name, value)
		return err
	})
	if err == nil && target.IsZero() {
		err = fmt.Errorf("tag without an object line")
	}
	return target, err
}

// encodeCommit is a commit object's content as git writes it: tree, parents, author and
// committer (the same identity, at when in its own zone), an empty line, the message.
func encodeCommit(tree plumbing.Hash, parents []plumbing.Hash, name, email string, when time.Time, message string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "tree %s\n", tree)
	for _, p := range parents {
		fmt.Fprintf(&b, "parent %s\n", p)
	}
	ident := fmt.Sprintf("%s <%s> %d %s", name, email, when.Unix(), when.Format("-0700"))
	fmt.Fprintf(&b, "author %s\ncommitter %s\n\n", ident, ident)
	b.WriteString(message)
	return b.Bytes()
}
