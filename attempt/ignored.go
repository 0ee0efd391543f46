package attempt

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// keepIgnored keeps the individually ignored files when the run starts, and names what no
// snapshot protects: ignored files too large to keep, untracked nested repositories.
func (r *runner) keepIgnored(ctx context.Context) error {
	kept, err := r.env.Repo.KeepIgnored(context.WithoutCancel(ctx), snapshot.IgnoredRef(r.run.ID),
		fmt.Sprintf("mulligan run %s: ignored files\n\nThe individually ignored files of the working tree when the run started.\n", r.run.ID))
	if err != nil {
		return err
	}
	for _, n := range kept.Nested {
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Message: "nested repository " + n + " is not protected by snapshots"})
	}
	if len(kept.TooLarge) > 0 {
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Message: fmt.Sprintf("ignored %s not kept (over %d MiB each or %d MiB in all): %s",
			plural(len(kept.TooLarge), "file", "files"), snapshot.KeepIgnoredFileMax>>20, snapshot.KeepIgnoredTotalMax>>20, listSome(kept.TooLarge))})
	}
	if kept.Ref == "" {
		return nil
	}
	return r.update(ctx, func(tx *store.Tx) error {
		return r.event(tx, "", 0, store.EventSnapshotTaken, store.SnapshotTaken{Ref: kept.Ref, Commit: kept.Commit.String(),
			Reason: "ignored-files", Files: kept.Files, Bytes: kept.Bytes})
	})
}

// putBackIgnored puts back, after a reset to tree, the kept ignored files an attempt deleted or
// changed (an agent's `git clean -fdx`), and says so; what a changed one held is kept first.
func (r *runner) putBackIgnored(ctx context.Context, tree plumbing.Hash) {
	if r.inWorktree {
		return // the kept files are the working tree's; a worktree gets only what worktree: brings
	}
	res, err := r.env.Repo.RestoreIgnored(context.WithoutCancel(ctx), snapshot.IgnoredRef(r.run.ID), tree,
		snapshot.LocalUndoRef(snapshot.NewID(r.env.Now())))
	if err != nil {
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: r.current, Message: "could not put back ignored files: " + err.Error()})
		return
	}
	if len(res.Restored) > 0 {
		msg := "put back ignored " + plural(len(res.Restored), "file", "files") + " the attempt deleted or changed: " + listSome(res.Restored)
		if res.ReplacedRef != "" {
			msg += "; what the changed ones held is in " + res.ReplacedRef + " (`git show " + res.ReplacedRef + ":PATH`)"
		}
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: r.current, Message: msg})
		_ = r.update(ctx, func(tx *store.Tx) error {
			return r.event(tx, r.current, 0, store.EventIgnoredRestored, store.IgnoredRestored{Paths: res.Restored, ReplacedRef: res.ReplacedRef})
		})
	}
	for _, f := range res.Failed {
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: r.current, Message: "could not put back ignored file " + f})
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// listSome names up to 10 paths, then a count.
func listSome(paths []string) string {
	if len(paths) <= 10 {
		return strings.Join(paths, ", ")
	}
	return strings.Join(paths[:10], ", ") + fmt.Sprintf(" and %d more", len(paths)-10)
}

// noteSubmodules says what a reset did to the submodules whose checked-out commit it changed.
func (r *runner) noteSubmodules(res *snapshot.RestoreResult) {
	if res == nil {
		return
	}
	for _, sm := range res.Submodules {
		msg := "submodule " + sm.Path + " put back at " + sm.Commit.String() + " (what its working tree held is in its " + sm.UndoRef + ")"
		if sm.Skipped != "" {
			msg = sm.Path + " not restored: " + sm.Skipped
		}
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: r.current, Message: msg})
	}
}
