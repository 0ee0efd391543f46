// Package snapshot is mulligan's git engine: it snapshots the whole working tree (tracked files and
// untracked files that are not ignored) into git blob and tree objects, records snapshots as commits
// under refs/mulligan/*, diffs trees and puts any snapshot back on disk.
//
// It owns the objects and refs it writes and its private index under <git-dir>/mulligan/. It must
// never change the user's index, HEAD, branches, stash, config or, outside Restore, any file in the
// working tree; it never runs the git binary and never follows a symbolic link out of the working
// tree. A snapshot's tree id is the one `git add -A && git write-tree` would give on a copy of the
// user's index, so plain git can inspect, diff and push every snapshot.
package snapshot
