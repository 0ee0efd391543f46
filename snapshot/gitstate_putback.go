package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// GitSkip is a change PutBackGit left as it found it, and why.
type GitSkip struct {
	Change GitChange
	Reason string
}

// GitPutBack is what PutBackGit did.
type GitPutBack struct {
	Restored []GitChange
	Skipped  []GitSkip
}

// PutBackGit puts back what changed from pre to post, each thing by compare-and-swap: a ref,
// HEAD, the stash or the index is set to its pre value only while it still holds its post value;
// anything that changed again since post (someone else's work) is left alone and reported in
// Skipped. message goes into the reflogs git keeps for the refs it moves.
func (r *Repo) PutBackGit(pre, post *GitState, message string) (*GitPutBack, error) {
	res := &GitPutBack{}
	skip := func(c GitChange, format string, args ...any) {
		res.Skipped = append(res.Skipped, GitSkip{Change: c, Reason: fmt.Sprintf(format, args...)})
	}
	for _, c := range DiffGitState(pre, post) {
		switch {
		case c.Ref == "HEAD":
			err := r.casHead(post.Head, pre.Head, message)
			if err != nil {
				skip(c, "%v", err)
				continue
			}
		case c.Index:
			if err := r.casIndex(pre.Index, post.Index); err != nil {
				skip(c, "%v", err)
				continue
			}
		case c.Op != "":
			if err := r.casOps(pre.Ops, post.Ops); err != nil {
				skip(c, "%v", err)
				continue
			}
		case c.Stash != "":
			if err := r.casStash(pre, post, message); err != nil {
				skip(c, "%v", err)
				continue
			}
		default:
			if err := r.casRef(c.Ref, c.To, c.From, message); err != nil {
				skip(c, "%v", err)
				continue
			}
		}
		res.Restored = append(res.Restored, c)
	}
	return res, nil
}

// errMovedOn says a thing holds neither the value the attempt left nor the one it had before.
func movedOn(what, now string) error {
	if now == "" {
		return fmt.Errorf("%s was deleted since the attempt ended", what)
	}
	return fmt.Errorf("%s changed again since the attempt ended (now %s)", what, short(now))
}

// casRef sets ref name from cur to want ("" meaning absent), if it is still at cur.
func (r *Repo) casRef(name, cur, want, message string) error {
	if strings.HasPrefix(cur, "ref: ") || strings.HasPrefix(want, "ref: ") {
		return fmt.Errorf("%s is a symbolic ref: not changed", name)
	}
	h, target, found, err := r.rawRef(name)
	if err != nil {
		return err
	}
	now := ""
	if found {
		now = h.String()
		if target != "" {
			now = "ref: " + target
		}
	}
	if now == want {
		return nil // already back (someone put it back by hand)
	}
	if now != cur {
		return movedOn(name, now)
	}
	if want == "" {
		err = r.DeleteRef(name, plumbing.NewHash(cur))
	} else {
		var old plumbing.Hash
		if cur != "" {
			old = plumbing.NewHash(cur)
		}
		err = r.UpdateRef(name, plumbing.NewHash(want), old)
	}
	if err != nil {
		return err
	}
	r.appendReflog(name, cur, want, message)
	return nil
}

// casHead sets HEAD from cur to want, if HEAD still says cur.
func (r *Repo) casHead(cur, want HeadState, message string) error {
	path := filepath.Join(r.gitDir, "HEAD")
	lock, err := acquireLock(path)
	if err != nil {
		return err
	}
	h, target, _, err := r.rawRef("HEAD")
	if err != nil {
		lock.rollback()
		return err
	}
	now := HeadState{Target: target}
	if target == "" {
		now.Commit = h.String()
	}
	wantRaw := want.raw()
	if now.raw() == wantRaw {
		lock.rollback()
		return nil
	}
	if now.raw() != cur.raw() {
		lock.rollback()
		return movedOn("HEAD", headValue(now))
	}
	if wantRaw == "" {
		lock.rollback()
		return errors.New("HEAD had no value to put back")
	}
	if err := lock.commit([]byte(wantRaw + "\n")); err != nil {
		return err
	}
	if cur.Commit != want.Commit {
		r.appendReflog("HEAD", cur.Commit, want.Commit, message)
	}
	return nil
}

// casIndex puts the pre index back, if the index still has the entries post recorded.
func (r *Repo) casIndex(pre, post IndexState) error {
	var data []byte
	if pre.Sum != "" {
		var err error
		data, err = os.ReadFile(r.indexCopyPath(pre.Sum))
		if err != nil {
			return fmt.Errorf("the copy of the index is gone: %w", err)
		}
	}
	lock, err := acquireLock(r.indexFile)
	if err != nil {
		return err
	}
	cur, err := os.ReadFile(r.indexFile)
	var now IndexState
	switch {
	case err == nil:
		now = r.indexState(cur)
	case errors.Is(err, fs.ErrNotExist):
	default:
		lock.rollback()
		return err
	}
	if now.Entries == pre.Entries {
		lock.rollback()
		return nil
	}
	if now.Entries != post.Entries {
		lock.rollback()
		if now.Sum == "" {
			return errors.New("the index was deleted since the attempt ended")
		}
		return errors.New("the index changed again since the attempt ended")
	}
	if pre.Sum == "" {
		lock.rollback()
		if err := os.Remove(r.indexFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return lock.commit(data)
}

// casStash puts refs/stash and its reflog (the stash list) back, if both are as post left them.
func (r *Repo) casStash(pre, post *GitState, message string) error {
	logPath := filepath.Join(r.commonDir, "logs", stashRef)
	if pre.StashLogSum != post.StashLogSum && pre.StashLog == "" && pre.StashLogSum != "" {
		return errors.New("the stash list was too long to keep: not put back")
	}
	data, err := os.ReadFile(logPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	curSum := ""
	if len(data) > 0 {
		curSum = sha(data)
	}
	if curSum != post.StashLogSum && curSum != pre.StashLogSum {
		return errors.New("the stash list changed again since the attempt ended")
	}
	if err := r.casRef(stashRef, post.ref(pre, stashRef), pre.Refs[stashRef], ""); err != nil {
		return err
	}
	if curSum == pre.StashLogSum {
		return nil
	}
	if pre.StashLog == "" {
		if err := os.Remove(logPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	lock, err := acquireLock(logPath)
	if err != nil {
		return err
	}
	return lock.commit([]byte(pre.StashLog))
}

// appendReflog adds a line to the reflog git keeps for name, when it keeps one (core.logAllRefUpdates
// created the file), so `git reflog` shows the move with its reason. A failure is not an error:
// the ref itself is what matters.
func (r *Repo) appendReflog(name, from, to, message string) {
	if message == "" {
		return
	}
	path := filepath.Join(r.commonDir, "logs", filepath.FromSlash(name))
	if perWorktreeRef(name) {
		path = filepath.Join(r.gitDir, "logs", filepath.FromSlash(name))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	defer f.Close()
	z := plumbing.ZeroHash.String()
	if from == "" {
		from = z
	}
	if to == "" {
		to = z
	}
	t := time.Now()
	_, off := t.Zone()
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	line := fmt.Sprintf("%s %s mulligan <mulligan@localhost> %d %c%02d%02d\t%s\n", from, to, t.Unix(), sign, off/3600, off/60%60,
		strings.ReplaceAll(message, "\n", " "))
	f.Write([]byte(line))
}

// IndexCopyExists reports whether the copy of an index recorded with sum is still kept.
func (r *Repo) IndexCopyExists(sum string) bool {
	_, err := os.Stat(r.indexCopyPath(sum))
	return err == nil
}
