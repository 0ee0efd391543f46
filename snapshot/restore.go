package snapshot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"golang.org/x/sys/unix"

	"github.com/mulligan-dev/mulligan/snapshot/attr"
)

// RestoreOptions control Restore.
type RestoreOptions struct {
	UndoRef     string // ref for the undo snapshot; "" means refs/mulligan/undo/<NewID>
	UndoMessage string
	DryRun      bool // compute the changes only: no undo ref, no file touched
	// NoUndoRef takes the undo snapshot (the conflict check needs it) but writes no ref: for a
	// caller that already keeps the tree being replaced under a ref of its own (the runner's reset
	// between attempts replaces the tree the last attempt's post ref holds). `mulligan undo` then
	// never lands on such internal resets.
	NoUndoRef bool
	// Kept, with NoUndoRef, says whether a tree is already kept under a ref of the caller's. When
	// the tree being replaced is not (someone edited the working tree since the caller last saw
	// it: an operator while the run was stopped or in backoff), the undo ref is written after
	// all, so a reset never loses an edit.
	Kept func(tree plumbing.Hash) bool
	// Paths limits the restore to these paths (files or directories, relative to the root,
	// slash-separated), like `git restore --source`: the undo snapshot is still of the whole
	// tree. A path in neither the target nor the working tree is an error (ErrPathNotFound).
	Paths []string
	// InPlace writes a file new to the tree straight at its path, not through a temporary name
	// renamed into place (a rename is a third of a small file's cost): for a tree only mulligan
	// uses, its own worktrees, where a file half-written when mulligan was killed differs from
	// the tree and is written again by the next set-up.
	InPlace bool
	// Expect, when set, is the tree the caller planned against: a working tree that is not it
	// now is refused (ErrTreeMoved) before anything is written.
	Expect plumbing.Hash
}

// RestoreResult is what Restore did (or, on DryRun, would do).
type RestoreResult struct {
	Undo     *Result // nil on DryRun
	UndoTree plumbing.Hash
	Changes  []Change
	// Submodules are the submodules whose checked-out commit differed: put back, or why not.
	Submodules []SubmoduleResult
	// Spared are the differences restore left alone because the path on disk is a file that the
	// ignore rules of the replaced tree or of the target tree exclude (see spareIgnored).
	Spared []Change
}

// Restore sets the working tree to target (a tree, or a commit standing for its tree):
//  1. it takes an undo snapshot of the current tree, commits it and writes opts.UndoRef;
//  2. it diffs the undo tree against target, skipping identical subtrees;
//  3. it deletes (deepest first), then writes and re-modes (shallowest first) only the differing
//     paths, as checkout would (smudge filters and eol conversion from the target tree's
//     .gitattributes), never following a symbolic link out of the working tree, leaving ignored
//     files alone (those the rules of either tree ignore: RestoreResult.Spared) and removing
//     only directories left empty.
//
// Before overwriting or deleting a path it checks the path still has the stat data the undo
// snapshot recorded; if not it stops with a *ConflictError naming the path. Paths already
// written stay written and each one is complete, so a second Restore finishes the job.
func (r *Repo) Restore(ctx context.Context, target plumbing.Hash, opts RestoreOptions) (*RestoreResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := time.Now()
	targetTree, _, err := r.peel(target)
	if err != nil {
		return nil, fmt.Errorf("restore: %w: %v", ErrBadRevision, err)
	}
	ws, err := r.walkTree(ctx)
	if err != nil {
		return nil, err
	}
	if !opts.DryRun {
		r.ignSeen = nil // the tree is about to change
	}
	res := &RestoreResult{UndoTree: ws.result.Tree}
	if !opts.Expect.IsZero() && ws.result.Tree != opts.Expect {
		ws.discard()
		return nil, ErrTreeMoved
	}
	if err := r.checkPaths(opts.Paths, ws.result.Tree, targetTree); err != nil {
		ws.discard()
		return nil, err
	}
	if opts.DryRun {
		if err := ws.save(); err != nil {
			return nil, err
		}
		if res.Changes, err = r.DiffTrees(ws.result.Tree, targetTree); err != nil {
			return nil, err
		}
		res.Changes = limitToPaths(res.Changes, opts.Paths)
		if res.Changes, res.Spared, err = r.spareIgnored(ws, targetTree, res.Changes); err != nil {
			return nil, err
		}
		return res, nil
	}
	ref := opts.UndoRef
	unkept := opts.Kept != nil && ws.result.Tree != targetTree && !opts.Kept(ws.result.Tree)
	if ref == "" && (!opts.NoUndoRef || unkept) {
		ref = UndoRef(NewID(time.Now()))
	}
	msg := opts.UndoMessage
	if msg == "" {
		msg = "mulligan: working tree before restore to " + targetTree.String()
	}
	if res.Undo, err = r.commitSnapshot(ws.result, SnapshotOptions{Ref: ref, Message: msg}, start); err != nil {
		ws.discard()
		return nil, err
	}
	if res.Changes, err = r.DiffTrees(ws.result.Tree, targetTree); err != nil {
		ws.discard()
		return res, err
	}
	res.Changes = limitToPaths(res.Changes, opts.Paths)
	if res.Changes, res.Spared, err = r.spareIgnored(ws, targetTree, res.Changes); err != nil {
		ws.discard()
		return res, err
	}
	if len(res.Changes) == 0 {
		return res, ws.save()
	}
	ws.discard() // the index is saved once the files are written
	paths := make([]string, 0, len(res.Changes))
	for _, c := range res.Changes {
		if c.Action != Delete {
			paths = append(paths, c.Path)
		}
	}
	unnote, err := r.noteRestoring(paths)
	if err != nil {
		return res, fmt.Errorf("restore: %w", err)
	}
	defer unnote()
	x, err := newRestorer(ctx, r, ws, targetTree)
	if err != nil {
		return res, err
	}
	x.inPlace = opts.InPlace
	applyErr := x.apply(res.Changes)
	res.Submodules = x.subs
	x.close()
	if err := x.saveIndex(); err != nil && applyErr == nil {
		applyErr = err
	}
	return res, applyErr
}

type restorer struct {
	ctx    context.Context
	fctx   context.Context // for smudge filters: ctx, also ended by its filter bound
	stopF  context.CancelFunc
	r      *Repo
	ws     *walkState
	target plumbing.Hash
	rootfd int
	conv   *attr.Converter
	attrs  map[string]*attr.Matcher // target tree's attribute matcher per directory
	trees  map[string][]treeEntry   // target tree's directories read so far
	done   map[string]*entry        // path → entry written (nil: deleted or not to be trusted)
	keep   []string                 // gitlink directories left in place (never written into)
	// inPlace: files new to the tree are written at their path (RestoreOptions.InPlace).
	inPlace bool
	subs    []SubmoduleResult // submodules set to the target's commit (or left, and why)
	pcache  struct {
		dir string
		fd  int
	}
}

func newRestorer(ctx context.Context, r *Repo, ws *walkState, target plumbing.Hash) (*restorer, error) {
	fd, err := unix.Open(r.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("restore: open %s: %w", r.root, err)
	}
	x := &restorer{ctx: ctx, r: r, ws: ws, target: target, rootfd: fd,
		conv:  attr.NewConverter(r.set.conv, r.root),
		attrs: map[string]*attr.Matcher{}, trees: map[string][]treeEntry{}, done: map[string]*entry{}}
	x.pcache.fd = -1
	x.fctx, x.stopF = filterContext(ctx)
	return x, nil
}

func (x *restorer) close() {
	x.dropParent()
	unix.Close(x.rootfd)
	x.conv.Close()
	x.stopF()
}

func (x *restorer) dropParent() {
	if x.pcache.fd >= 0 {
		unix.Close(x.pcache.fd)
	}
	x.pcache.fd, x.pcache.dir = -1, ""
}

// checkPath refuses paths git would refuse to check out: empty, ".", ".." and ".git" components.
func checkPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") {
		return fmt.Errorf("restore: refusing path %q", p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." || strings.EqualFold(c, ".git") {
			return fmt.Errorf("restore: refusing path %q", p)
		}
	}
	return nil
}

func splitPath(p string) (dir, name string) {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

// parent opens the directory holding path, one component at a time with O_NOFOLLOW, so no
// symbolic link (planted before or during the restore) is ever followed. With create, missing
// directories are made. It returns -1 and no error when a component is missing and create is off.
func (x *restorer) parent(path string, create bool) (int, string, error) {
	dir, name := splitPath(path)
	if x.pcache.fd >= 0 && x.pcache.dir == dir {
		return x.pcache.fd, name, nil
	}
	x.dropParent()
	fd, err := unix.Dup(x.rootfd)
	if err != nil {
		return -1, "", err
	}
	if dir != "" {
		done := 0
		for _, comp := range strings.Split(dir, "/") {
			sofar := dir[:done+len(comp)]
			done += len(comp) + 1
			nfd, err := unix.Openat(fd, comp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err == unix.ENOENT && create {
				if err = unix.Mkdirat(fd, comp, 0o777); err != nil && err != unix.EEXIST {
					unix.Close(fd)
					return -1, "", fmt.Errorf("restore: mkdir %s: %w", sofar, err)
				}
				nfd, err = unix.Openat(fd, comp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
			if err != nil {
				var st unix.Stat_t
				serr := unix.Fstatat(fd, comp, &st, unix.AT_SYMLINK_NOFOLLOW)
				unix.Close(fd)
				switch {
				case err == unix.ENOENT:
					return -1, name, nil
				case serr == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
					return -1, "", &ConflictError{Path: sofar, Reason: "is a symbolic link; restore does not follow it"}
				case err == unix.ENOTDIR || err == unix.ELOOP:
					return -1, "", &ConflictError{Path: sofar, Reason: "is not a directory (an untracked or ignored file is in the way)"}
				}
				return -1, "", fmt.Errorf("restore: open %s: %w", sofar, err)
			}
			unix.Close(fd)
			fd = nfd
		}
	}
	x.pcache.dir, x.pcache.fd = dir, fd
	return fd, name, nil
}

// recorded is the entry the undo snapshot holds for path.
func (x *restorer) recorded(path string) *entry {
	i, ok := slices.BinarySearchFunc(x.ws.entries, path, func(e *entry, p string) int { return strings.Compare(e.path, p) })
	if !ok {
		return nil
	}
	return x.ws.entries[i]
}

// unchanged reports whether the file at name still is what the undo snapshot recorded; a
// missing file counts as unchanged (there is nothing to lose).
func (x *restorer) unchanged(fd int, name, path string) (exists bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return false, nil
		}
		return false, fmt.Errorf("restore: lstat %s: %w", path, err)
	}
	e := x.recorded(path)
	if e == nil || e.st == (statData{}) {
		return true, &ConflictError{Path: path, Reason: "not recorded by the undo snapshot"}
	}
	sd := statFromUnix(&st)
	if !e.st.matches(&sd, true) {
		return true, &ConflictError{Path: path, Reason: "changed on disk after the undo snapshot"}
	}
	return true, nil
}

func isGitlink(m filemode.FileMode) bool { return uint32(m) == modeGitlink }

func (x *restorer) apply(changes []Change) error {
	for _, c := range changes {
		if err := checkPath(c.Path); err != nil {
			return err
		}
	}
	// Deletions, deepest first, so directories empty out before they are removed.
	var dels []Change
	for _, c := range changes {
		if c.Action == Delete || c.Action == TypeChange && (isGitlink(c.From.Mode) || isGitlink(c.To.Mode)) {
			dels = append(dels, c)
		}
	}
	slices.SortFunc(dels, func(a, b Change) int { return strings.Compare(b.Path, a.Path) })
	for _, c := range dels {
		if err := x.ctx.Err(); err != nil {
			return err
		}
		if err := x.remove(c); err != nil {
			return err
		}
	}
	// Writes, shallowest first (path order puts every directory before what it holds).
	for _, c := range changes {
		if c.Action == Delete {
			continue
		}
		if err := x.ctx.Err(); err != nil {
			return err
		}
		if err := x.write(c); err != nil {
			return err
		}
	}
	return nil
}

func (x *restorer) remove(c Change) error {
	if testHookBeforePath != nil {
		testHookBeforePath(c.Path)
	}
	fd, name, err := x.parent(c.Path, false)
	if err != nil {
		return err
	}
	if fd < 0 {
		x.done[c.Path] = nil
		return nil // its directory is already gone
	}
	if isGitlink(c.From.Mode) {
		// A submodule's content is never touched: its directory goes only when empty.
		err := unix.Unlinkat(fd, name, unix.AT_REMOVEDIR)
		switch {
		case err == nil || err == unix.ENOENT:
		case err == unix.ENOTEMPTY || err == unix.EEXIST:
			if c.Action == TypeChange {
				return &ConflictError{Path: c.Path, Reason: "submodule directory is not empty"}
			}
			x.keep = append(x.keep, c.Path)
		case err == unix.ENOTDIR:
			return &ConflictError{Path: c.Path, Reason: "changed on disk after the undo snapshot"}
		default:
			return fmt.Errorf("restore: remove %s: %w", c.Path, err)
		}
		x.done[c.Path] = nil
		x.pruneEmpty(c.Path)
		return nil
	}
	exists, err := x.unchanged(fd, name, c.Path)
	if err != nil {
		return err
	}
	if exists {
		if err := unix.Unlinkat(fd, name, 0); err != nil && err != unix.ENOENT {
			return fmt.Errorf("restore: remove %s: %w", c.Path, err)
		}
	}
	x.done[c.Path] = nil
	x.pruneEmpty(c.Path)
	return nil
}

// pruneEmpty removes the directories above path that the deletion left empty (a directory that
// still holds ignored or untracked files stays).
func (x *restorer) pruneEmpty(path string) {
	for {
		dir, _ := splitPath(path)
		if dir == "" {
			return
		}
		x.dropParent()
		fd, name, err := x.parent(dir, false)
		if err != nil || fd < 0 {
			return
		}
		if unix.Unlinkat(fd, name, unix.AT_REMOVEDIR) != nil {
			return
		}
		path = dir
	}
}

func (x *restorer) write(c Change) error {
	if testHookBeforePath != nil {
		testHookBeforePath(c.Path)
	}
	for _, k := range x.keep {
		if strings.HasPrefix(c.Path, k+"/") {
			return &ConflictError{Path: c.Path, Reason: "inside submodule directory " + k + ", which restore does not write into"}
		}
	}
	fd, name, err := x.parent(c.Path, true)
	if err != nil {
		return err
	}
	mode := uint32(c.To.Mode)
	if mode == modeGitlink && c.Action == Modify {
		// The submodule's HEAD moved (an agent's `git -C sub checkout`, a commit in it).
		x.subs = append(x.subs, x.restoreSubmodule(c))
		x.done[c.Path] = nil
		return nil
	}
	if mode == modeGitlink {
		// An empty directory where the submodule goes; its content is not restore's business.
		if err := unix.Mkdirat(fd, name, 0o777); err != nil && err != unix.EEXIST {
			return fmt.Errorf("restore: mkdir %s: %w", c.Path, err)
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return &ConflictError{Path: c.Path, Reason: "an untracked or ignored file is where the submodule goes"}
		}
		if head, _, ok := nestedHead(x.r.abs(c.Path)); !ok || head != c.To.Hash {
			if sm, ok := x.r.submoduleAt(c.Path); ok && x.r.checkOutAgain(sm) == nil {
				// A submodule directory an agent deleted, whose git directory the superproject
				// keeps: checked out again at the gitlink's commit, as `git submodule update` would.
				x.subs = append(x.subs, x.restoreSubmodule(c))
				x.done[c.Path] = nil
				return nil
			}
			// Never claim it: a snapshot holds a nested repository's commit id, not its files.
			x.subs = append(x.subs, SubmoduleResult{Path: c.Path, Commit: c.To.Hash,
				Skipped: "a snapshot holds only the commit a nested repository or submodule had checked out, not its files or history; its directory is empty"})
		}
		x.done[c.Path] = nil
		return nil
	}
	replace := c.Action != Add && !isGitlink(c.From.Mode)
	if replace {
		exists, err := x.unchanged(fd, name, c.Path)
		if err != nil {
			return err
		}
		if !exists {
			replace = false
		}
	} else if err := x.clearWay(fd, name, c.Path); err != nil {
		return err
	}
	if c.Action == ModeChange && replace {
		return x.chmod(fd, name, c)
	}
	var tm *entry
	if mode == modeSymlink {
		tm, err = x.writeSymlink(fd, name, c)
	} else {
		tm, err = x.writeFile(fd, name, c, x.inPlace && !replace)
	}
	if err != nil {
		return err
	}
	x.done[c.Path] = tm
	return nil
}

// clearWay makes sure nothing sits where a new path goes: an empty directory is removed (it holds
// nothing to lose), anything else is an untracked or ignored file that restore will not clobber.
func (x *restorer) clearWay(fd int, name, path string) error {
	var st unix.Stat_t
	err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return fmt.Errorf("restore: lstat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if removeEmptyTree(fd, name, 0) == nil {
			return nil
		}
		return &ConflictError{Path: path, Reason: "a directory holding untracked or ignored files is in the way"}
	}
	return &ConflictError{Path: path, Reason: "an untracked or ignored file is in the way"}
}

// removeEmptyTree removes directory name (in dirfd) if it holds nothing but empty directories,
// never following a symbolic link; it fails, removing nothing that holds a file, otherwise.
func removeEmptyTree(dirfd int, name string, depth int) error {
	if depth > 64 {
		return unix.ENOTEMPTY
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err == nil || err != unix.ENOTEMPTY && err != unix.EEXIST {
		return err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	s := &scratch{dents: make([]byte, 8<<10)}
	err = readDirents(fd, s)
	if err == nil {
		for _, nr := range s.names {
			if nr.typ != dtDir && nr.typ != dtUnknown {
				err = unix.ENOTEMPTY
				break
			}
			if err = removeEmptyTree(fd, string(s.name(nr)), depth+1); err != nil {
				break
			}
		}
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

func (x *restorer) chmod(fd int, name string, c Change) error {
	if !x.r.set.fileMode {
		return nil // with core.fileMode=false checkout leaves the executable bit alone
	}
	f, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("restore: open %s: %w", c.Path, err)
	}
	defer unix.Close(f)
	var st unix.Stat_t
	if err := unix.Fstat(f, &st); err != nil {
		return err
	}
	perm := uint32(st.Mode) & 0o7777
	if uint32(c.To.Mode) == modeExec {
		perm |= (perm & 0o444) >> 2
	} else {
		perm &^= 0o111
	}
	if err := unix.Fchmod(f, perm); err != nil {
		return fmt.Errorf("restore: chmod %s: %w", c.Path, err)
	}
	x.record(fd, name, c, true)
	return nil
}

// testHookBeforePath, when set (tests only), runs just before Restore checks and touches a path:
// the seam that lets a test change the tree between the undo snapshot and the write.
var testHookBeforePath func(path string)
