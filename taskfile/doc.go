// Package taskfile is the task file's model: mulligan.yaml parsed with every authoring
// error's line and column, the ad-hoc file `mulligan run -- CMD` builds, argv templates and
// their variables, durations, backoff, and the failure class names a task file may name.
//
// It depends on nothing of the runner, the store or the snapshot engine: reading a task
// file never runs, records or snapshots anything.
package taskfile
