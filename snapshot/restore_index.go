package snapshot

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// A restore that wrote at most racyRereadFiles files of racyRereadBytes in all does not wait for
// the filesystem clock to pass its writes: the next walk reads them again instead.
const (
	racyRereadFiles = 64
	racyRereadBytes = 1 << 20
)

// saveIndex records in the private index what the restore wrote, so the next snapshot does not
// read those files again. The user's index stamp is cleared: the next snapshot re-derives which
// of the restored paths the user's index tracks.
func (x *restorer) saveIndex() error {
	// The new index's timestamp is taken after the writes, as git stamps its index after a
	// checkout. Files written in the same clock tick count as racy and are read again by the next
	// walk: for a few small files that costs less than waiting for the filesystem clock to move
	// past them (a tick is 4 ms on a kernel with HZ=250, and a reset between attempts usually
	// writes a handful), for many it costs more, so then wait (a few milliseconds at most).
	var maxS, maxNs uint32
	var n, size int64
	for _, e := range x.done {
		if e != nil {
			n, size = n+1, size+int64(e.st.size)
			if !e.st.mtimeBefore(maxS, maxNs) {
				maxS, maxNs = e.st.mtimeS, e.st.mtimeNs
			}
		}
	}
	wait := n > racyRereadFiles || size > racyRereadBytes
	var tmp *os.File
	var t1S, t1Ns uint32
	for try := 0; ; try++ {
		var err error
		if tmp, t1S, t1Ns, err = createPrivTemp(x.r.gitDir); err != nil {
			return fmt.Errorf("restore: private index: %w", err)
		}
		after := maxS < t1S || maxS == t1S && maxNs < t1Ns
		if after || !wait || try == 20 {
			break
		}
		tmp.Close()
		os.Remove(tmp.Name())
		time.Sleep(2 * time.Millisecond)
	}
	ws := x.ws
	// The list is rebuilt in the undo walk's own array, which nothing else holds (the walk took
	// the last state away, and ws is not kept): every entry is kept, replaced or dropped in
	// order, so a write never passes the read. The restored entries are merged in after.
	out := ws.entries[:0]
	for _, e := range ws.entries {
		if d, ok := x.done[e.path]; ok {
			if d == nil && e.flags&fTracked != 0 {
				// Deleted, or written with content the next walk must read: a tracked path
				// keeps its user's index data as an absent entry (walk.go's keepOld).
				a := *e
				a.mode, a.st, a.blob = 0, statData{}, plumbing.ZeroHash
				a.flags &^= fHashed | fCRCalled | fCRValue
				out = append(out, &a)
			}
			continue
		}
		if e.st != (statData{}) && !e.st.mtimeBefore(ws.t0S, ws.t0Ns) {
			// racy at the undo snapshot: the new index's later timestamp must not vouch for it
			c := *e
			c.st = statData{}
			e = &c
		}
		out = append(out, e)
	}
	var written []*entry
	for _, e := range x.done {
		if e != nil {
			written = append(written, e)
		}
	}
	slices.SortFunc(written, func(a, b *entry) int { return strings.Compare(a.path, b.path) })
	out = mergeEntries(out, written)
	dirs := slices.Clone(ws.dirs)
	for p := range x.done {
		for {
			dir, _ := splitPath(p)
			i, ok := slices.BinarySearchFunc(dirs, dir, func(d dirInfo, s string) int { return strings.Compare(d.path, s) })
			if ok {
				dirs[i].valid = false
			}
			if dir == "" {
				break
			}
			p = dir
		}
	}
	if x.r.watch != nil {
		// Watched: the state stays in memory for the next walk, which re-reads the directories
		// the restore wrote in (their events say so). The user's index stamp is kept, because
		// every path written took the user's index data its entry had; a restored path that had
		// none is untracked (a tracked path that vanished keeps an absent entry), except below
		// a sparse-index directory, which only a reseed sorts out.
		tmp.Close()
		os.Remove(tmp.Name())
		user := ws.user
		for _, e := range out {
			if e.mode == modeTree {
				user = userIndexStamp{}
				break
			}
		}
		drift := addDrift(ws.drift, len(x.done))
		if user != ws.user {
			drift = mustSave
		}
		return x.r.keep(&liveState{t0S: t1S, t0Ns: t1Ns, user: user, entries: out, dirs: dirs, tree: x.target,
			rootFP: ws.rootFP, ignFP: ws.ignFP, volatile: ws.volatile, drift: drift}, true)
	}
	p := &privIndex{t0S: t1S, t0Ns: t1Ns, dirs: dirs}
	return savePrivIndex(tmp, privIndexPath(x.r.gitDir), p, out)
}

// mergeEntries merges add into out, both sorted by path and with no path in both, in out's array
// when it has the room (from the end, so nothing is overwritten before it is moved).
func mergeEntries(out, add []*entry) []*entry {
	k, n := len(out), len(out)+len(add)
	out = slices.Grow(out, len(add))[:n]
	i, j := k-1, len(add)-1
	for w := n - 1; j >= 0; w-- {
		if i >= 0 && out[i].path > add[j].path {
			out[w] = out[i]
			i--
		} else {
			out[w] = add[j]
			j--
		}
	}
	return out
}

// checkPaths refuses a path that is malformed or in neither tree (git's "pathspec did not match").
// Each tree is read once, only the directories on the way to a path: O(paths + trees).
func (r *Repo) checkPaths(paths []string, cur, target plumbing.Hash) error {
	want := make(map[string]bool, len(paths)) // the paths to find
	dirs := map[string]bool{}                 // the directories on the way to one
	for _, p := range paths {
		if p == "" || p == "." || checkPath(p) != nil {
			continue
		}
		want[p] = true
		for d := path.Dir(p); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	found := make(map[string]bool, len(want))
	var walk func(tree plumbing.Hash, prefix string) error
	walk = func(tree plumbing.Hash, prefix string) error {
		es, err := r.readTree(tree)
		if err != nil {
			return err
		}
		for _, e := range es {
			p := prefix + e.name
			found[p] = found[p] || want[p]
			if e.isDir() && dirs[p] {
				if err := walk(e.hash, p+"/"); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if len(want) > 0 {
		if err := walk(target, ""); err != nil {
			return err
		}
		if err := walk(cur, ""); err != nil {
			return err
		}
	}
	for _, p := range paths {
		switch {
		case p == "" || p == ".":
		case checkPath(p) != nil:
			return fmt.Errorf("%w: %q", ErrPathNotFound, p)
		case !found[p]:
			return fmt.Errorf("%w: %s is in neither the tree to restore nor the working tree", ErrPathNotFound, p)
		}
	}
	return nil
}

// limitToPaths keeps the changes at or below one of paths (all of them when paths is empty or
// holds the root): each change's path and its directories are looked up in a set of paths.
func limitToPaths(changes []Change, paths []string) []Change {
	if len(paths) == 0 || slices.Contains(paths, "") || slices.Contains(paths, ".") {
		return changes
	}
	set := make(map[string]bool, len(paths))
	for _, p := range paths {
		set[p] = true
	}
	out := changes[:0:0]
	for _, c := range changes {
		for q := c.Path; ; {
			if set[q] {
				out = append(out, c)
				break
			}
			i := strings.LastIndexByte(q, '/')
			if i < 0 {
				break
			}
			q = q[:i]
		}
	}
	return out
}
