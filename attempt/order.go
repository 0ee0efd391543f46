package attempt

import "github.com/mulligan-dev/mulligan/taskfile"

// Order returns the tasks a run of f runs: the ones named in want (all when it is empty) and
// their dependencies, in the order they start (dependency order, file order breaking ties).
// `run --dry-run` prints it; the runner itself uses the same plan.
func Order(f *taskfile.File, want []string) ([]*taskfile.Task, error) { return plan(f, want) }
