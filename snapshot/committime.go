package snapshot

import (
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// CommitTime is when the commit h was made (its committer time): for a snapshot ref, when the
// snapshot was taken.
func (r *Repo) CommitTime(h plumbing.Hash) (time.Time, error) {
	t, obj, err := r.readObject(h)
	if err != nil {
		return time.Time{}, err
	}
	if t != plumbing.CommitObject {
		return time.Time{}, fmt.Errorf("object %s is a %s, not a commit", h, t)
	}
	c, err := decodeCommit(obj)
	if err != nil {
		return time.Time{}, fmt.Errorf("commit %s: %w", h, err)
	}
	return c.committer, nil
}
