package snapshot

import "strconv"

// The ref layout: every ref mulligan writes, and the only place their names are built.
//
//	refs/mulligan/runs/<run>/base              the working tree when run <run> started
//	refs/mulligan/runs/<run>/<task>/<n>/pre    the tree attempt n of <task> started from
//	refs/mulligan/runs/<run>/<task>/<n>/post   the tree attempt n of <task> left
//	refs/mulligan/runs/<run>/<task>/<n>/head   the HEAD commit attempt n of <task> left
//	refs/mulligan/runs/<run>/<task>/<n>/<ref>  a ref (refs/heads/x, refs/stash) attempt n moved,
//	                                           at the value it left
//	refs/mulligan-local/runs/<run>/<task>/<n>/stash
//	                                           the stash attempt n left (it may hold ignored
//	                                           files: not pushed with refs/mulligan/*)
//	refs/mulligan-local/runs/<run>/ignored     the ignored files the run kept when it started
//	                                           (secrets among them: never pushed)
//	refs/mulligan/undo/<id>                    the tree just before a restore, revert, …
//	refs/mulligan-local/undo/<id>              an ignored file's content before it was put back
//	refs/mulligan/manual/<id>                  `mulligan snapshot`
//
// A task named `base` would need runs/<run>/base/<n>/pre beside runs/<run>/base, which git
// cannot store; the task file's checks refuse that id.
const (
	RefRoot      = "refs/mulligan/"
	LocalRoot    = "refs/mulligan-local/" // refs never meant to leave this repository
	RunsPrefix   = RefRoot + "runs/"
	UndoPrefix   = RefRoot + "undo/"
	ManualPrefix = RefRoot + "manual/"
	LocalUndo    = LocalRoot + "undo/"
)

// Which names one of an attempt's snapshots.
type Which string

// The snapshots of one attempt.
const (
	Pre  Which = "pre"  // before the agent ran
	Post Which = "post" // after the agent ran
	Head Which = "head" // HEAD after the agent ran
)

// RunPrefix is the prefix of every ref of run (ending in "/").
func RunPrefix(run string) string { return RunsPrefix + run + "/" }

// BaseRef is the ref of run's base snapshot.
func BaseRef(run string) string { return RunPrefix(run) + "base" }

// AttemptRef is the ref of attempt n of task in run.
func AttemptRef(run, task string, n int, which Which) string {
	return RunPrefix(run) + task + "/" + strconv.Itoa(n) + "/" + string(which)
}

// AttemptKeptRef is where attempt n of task keeps the value it left in ref (a full name,
// refs/heads/x): refs/mulligan/runs/<run>/<task>/<n>/refs/heads/x.
func AttemptKeptRef(run, task string, n int, ref string) string {
	return RunPrefix(run) + task + "/" + strconv.Itoa(n) + "/" + ref
}

// AttemptStashRef is where attempt n of task keeps the stash it left.
func AttemptStashRef(run, task string, n int) string {
	return LocalRunPrefix(run) + task + "/" + strconv.Itoa(n) + "/stash"
}

// LocalRunPrefix is the prefix of run's refs outside the pushable namespace (ending in "/").
func LocalRunPrefix(run string) string { return LocalRoot + "runs/" + run + "/" }

// IgnoredRef is where run keeps the ignored files it found when it started.
func IgnoredRef(run string) string { return LocalRunPrefix(run) + "ignored" }

// LocalUndoRef is the ref of the local undo snapshot id (ignored content, never pushed).
func LocalUndoRef(id string) string { return LocalUndo + id }

// AttemptRefPattern is AttemptRef with placeholders, for hints: refs/mulligan/runs/<run>/TASK/N/post.
func AttemptRefPattern(run string, which Which) string {
	return RunPrefix(run) + "TASK/N/" + string(which)
}

// UndoRef is the ref of the undo snapshot id.
func UndoRef(id string) string { return UndoPrefix + id }

// ManualRef is the ref of the manual snapshot id.
func ManualRef(id string) string { return ManualPrefix + id }
