package plan

import (
	"fmt"
	"strings"

	"github.com/mulligan-dev/mulligan/compensate"
	"github.com/mulligan-dev/mulligan/store"
)

// The refusals and failures of plans. cmd maps each to its exit code and hints (SPEC §8): the
// refusals that --force overrides are exit 6.

// UncompensableError refuses to cross non-idempotent effects that have no compensation
// (without --force): nothing could undo them.
type UncompensableError struct {
	Command string
	Effects []store.Effect
}

func (e *UncompensableError) Error() string {
	names := make([]string, len(e.Effects))
	for i, x := range e.Effects {
		names[i] = compensate.Describe(x, "")
	}
	return fmt.Sprintf("%s would cross %d non-idempotent side effect%s with no compensation: %s; nothing was changed",
		e.Command, len(e.Effects), plural(len(e.Effects)), strings.Join(names, ", "))
}

// ReplayError refuses to replay tasks whose non-idempotent side effects are still out in the
// world and that the decision does not compensate first (without --force): the replay would do
// them again.
type ReplayError struct {
	Run     string
	Tasks   []string
	Effects []store.Effect
}

func (e *ReplayError) Error() string {
	names := make([]string, len(e.Effects))
	for i, x := range e.Effects {
		names[i] = compensate.Describe(x, ", "+x.State)
	}
	what := "task " + e.Tasks[0] + " has"
	if len(e.Tasks) > 1 {
		what = "tasks " + strings.Join(e.Tasks, ", ") + " (replayed) have"
	}
	return fmt.Sprintf("%s non-idempotent side effects that were not compensated: %s; replaying would do them again; nothing was changed",
		what, strings.Join(names, ", "))
}

// PrunedError: the run's refs are gone (`mulligan gc`), and git may have collected the objects
// they held, so its trees cannot be read.
type PrunedError struct{ Run string }

func (e *PrunedError) Error() string {
	return fmt.Sprintf("run %s was pruned by `mulligan gc`: its refs and logs are gone", e.Run)
}

// NoTreeError: the tree to restore was never recorded (the run's base, or an attempt still
// running).
type NoTreeError struct {
	Run, Task string
	N         int
	Base      bool // the run's base
	Target    string
}

func (e *NoTreeError) Error() string {
	if e.Base {
		return fmt.Sprintf("run %s has no base tree recorded", e.Run)
	}
	return fmt.Sprintf("%s has no tree recorded yet (it is still running)", e.Target)
}

// NoBaseError: retry-task --from-base of a task that never started.
type NoBaseError struct{ Run, Task string }

func (e *NoBaseError) Error() string {
	return fmt.Sprintf("task %s of run %s has no recorded base: it never started", e.Task, e.Run)
}

// WorktreeError refuses to decide for a run from another worktree than its own.
type WorktreeError struct {
	Run, Worktree, Here string
	Command             string // to run there
}

func (e *WorktreeError) Error() string {
	return fmt.Sprintf("run %s belongs to the worktree %s, not this one (%s)", e.Run, e.Worktree, e.Here)
}

// CompensationFailedError stops a plan that would redo the effect at once (retry-task) after a
// compensation failed: the tree and the run were not changed.
type CompensationFailedError struct{ Command, Run string }

func (e *CompensationFailedError) Error() string {
	return fmt.Sprintf("%s: a compensation failed, so nothing was replayed", e.Command)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
