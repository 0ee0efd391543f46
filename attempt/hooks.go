package attempt

import (
	"context"

	"github.com/mulligan-dev/mulligan/compensate"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// NewHooks returns the deliverer of db's hook outbox, expanding each hook's templates with the
// delivery's run, task and attempt. environ is what hooks inherit (nil: this process's).
func NewHooks(db *store.DB, environ []string) *compensate.Hooks {
	return &compensate.Hooks{
		DB:      db,
		Environ: environ,
		Timeout: compensate.HookTimeoutFromEnv(),
		Expand: func(d store.HookDelivery) ([]string, error) {
			v := taskfile.Vars{Run: d.RunID, Task: d.TaskID, Attempt: d.Attempt}
			if d.TaskID != "" {
				v.IdempotencyKey = IdempotencyKey(d.RunID, d.TaskID)
			}
			return taskfile.Expand(d.Command, v)
		},
	}
}

// hookDefs lists the hook commands of the tasks a run executes and the run-level ones, for
// store.InsertHooks.
func hookDefs(f *taskfile.File, order []*taskfile.Task) []store.HookDef {
	var defs []store.HookDef
	add := func(task string, h taskfile.Hooks) {
		for _, name := range taskfile.HookNames {
			for _, argv := range h[name] {
				defs = append(defs, store.HookDef{Task: task, Hook: name, Command: argv})
			}
		}
	}
	add("", f.Hooks)
	for _, t := range order {
		add(t.ID, t.Hooks)
	}
	return defs
}

// startHooks delivers the run's hooks in the background while this process runs it, and tells
// the terminal of a hook that failed (its failure changes nothing else).
func (r *runner) startHooks(ctx context.Context) {
	if len(hookDefs(r.file, r.file.Tasks)) == 0 {
		// No hook is defined for this run (its definitions were stored from this file when it
		// started): nothing can fire, and a dispatcher would only ask the database so after
		// every change. What earlier processes left pending is afterCommand's (cmd).
		return
	}
	h := NewHooks(r.env.DB, r.env.Environ)
	h.Report = func(res compensate.HookResult) {
		if res.Err != nil {
			r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: res.Delivery.TaskID,
				Message: "hook " + res.Delivery.String() + " failed: " + res.Err.Error()})
		}
	}
	r.hooks = h.Start(ctx, r.run.ID)
}
