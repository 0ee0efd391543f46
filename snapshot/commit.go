package snapshot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// SnapshotOptions says where a snapshot is recorded.
type SnapshotOptions struct {
	Ref     string        // ref to create (must not exist yet, unless Replace); "" writes no ref
	Message string        // commit message
	Parent  plumbing.Hash // parent commit; zero means HEAD's commit, or none when HEAD is unborn
	// Replace points Ref at the new commit whatever it held (compare-and-swap on the value
	// read): a process that crashed may have written the ref before recording it.
	Replace bool
}

// Result describes a recorded snapshot.
type Result struct {
	Ref      string
	Commit   plumbing.Hash
	Tree     plumbing.Hash
	Files    int
	Duration time.Duration
}

// The identity of every commit mulligan writes, author and committer.
const (
	mulliganName  = "mulligan"
	mulliganEmail = "mulligan@localhost"
)

// now is the commit clock, a seam for tests.
var now = time.Now

// Commit writes a commit object for tree with the given parents (author and committer
// "mulligan <mulligan@localhost>", time now) and returns its id.
func (r *Repo) Commit(tree plumbing.Hash, parents []plumbing.Hash, message string) (plumbing.Hash, error) {
	if tree.IsZero() {
		return plumbing.ZeroHash, fmt.Errorf("commit: zero tree id")
	}
	if !r.objs.Has(tree) {
		return plumbing.ZeroHash, fmt.Errorf("commit: tree %s does not exist", tree)
	}
	for _, p := range parents {
		if !r.objs.Has(p) {
			return plumbing.ZeroHash, fmt.Errorf("commit: parent %s does not exist", p)
		}
	}
	// git prints the offset of the local zone; a whole-second time keeps the object identical to
	// what `git cat-file` round-trips.
	when := now().Truncate(time.Second)
	if message != "" && !strings.HasSuffix(message, "\n") {
		message += "\n"
	}
	data := encodeCommit(tree, parents, mulliganName, mulliganEmail, when, message)
	id, err := r.objs.WriteBytes(plumbing.CommitObject, data)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write commit: %w", err)
	}
	return id, nil
}

// Snapshot writes the working tree (WriteTree), commits it and, when opts.Ref is set, creates
// that ref. Objects are written before the ref, so a crash leaves no ref to a missing object.
func (r *Repo) Snapshot(ctx context.Context, opts SnapshotOptions) (*Result, error) {
	start := time.Now()
	tr, err := r.WriteTree(ctx)
	if err != nil {
		return nil, err
	}
	return r.commitSnapshot(tr, opts, start)
}

// CommitTree commits tree (written earlier by WriteTree; files is its file count, 0 when
// unknown) and records it as opts says.
func (r *Repo) CommitTree(tree Hash, files int, opts SnapshotOptions) (*Result, error) {
	return r.commitSnapshot(TreeResult{Tree: tree, Files: files}, opts, time.Now())
}

func (r *Repo) commitSnapshot(tr TreeResult, opts SnapshotOptions, start time.Time) (*Result, error) {
	var parents []plumbing.Hash
	if !opts.Parent.IsZero() {
		parents = []plumbing.Hash{opts.Parent}
	} else {
		head, err := r.Head()
		if err != nil {
			return nil, err
		}
		if !head.IsZero() {
			parents = []plumbing.Hash{head}
		}
	}
	msg := opts.Message
	if msg == "" {
		msg = "mulligan snapshot"
	}
	c, err := r.Commit(tr.Tree, parents, msg)
	if err != nil {
		return nil, err
	}
	if opts.Ref != "" {
		old := plumbing.ZeroHash
		if opts.Replace {
			if old, err = r.Ref(opts.Ref); err != nil && !errors.Is(err, ErrRefNotFound) {
				return nil, err
			}
		}
		if err := r.UpdateRef(opts.Ref, c, old); err != nil {
			return nil, err
		}
	}
	return &Result{Ref: opts.Ref, Commit: c, Tree: tr.Tree, Files: tr.Files, Duration: time.Since(start)}, nil
}
