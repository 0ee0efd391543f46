package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt/store"
	"github.com/mulligan-dev/mulligan/compensate"
)

// compensationJSON is one element of "compensated" in the JSON of revert, timetravel and
// compensate.
type compensationJSON struct {
	ID         int64  `json:"id"`
	Task       string `json:"task"`
	Attempt    int    `json:"attempt"`
	Name       string `json:"name"`
	State      string `json:"state"`
	DeliveryID string `json:"delivery_id"`
	Output     string `json:"output"`
	Error      any    `json:"error"`
}

// effectsAfter returns the effects of run that going back to just after task@n (before it
// when pre; to the run's base when task is "") crosses, newest first: the effects of every
// attempt that started later (and, with pre, of task@n itself) and are not compensated.
func effectsAfter(ctx context.Context, st *state, run *store.Run, task string, n int, pre bool) ([]store.Effect, error) {
	var all []store.Effect
	if err := st.db.View(ctx, func(tx *store.Tx) (err error) {
		all, err = tx.Effects(run.ID)
		return err
	}); err != nil {
		return nil, err
	}
	started := map[string]int64{}
	var target int64 = -1
	for _, t := range run.Tasks {
		for _, a := range t.Attempts {
			started[fmt.Sprintf("%s@%d", t.ID, a.N)] = a.StartedAt.UnixMilli()
			if t.ID == task && a.N == n {
				target = a.StartedAt.UnixMilli()
			}
		}
	}
	return compensate.CrossedBy(all, func(e store.Effect) bool {
		if task == "" {
			return true
		}
		if e.TaskID == task && e.Attempt == n {
			return pre
		}
		s, ok := started[fmt.Sprintf("%s@%d", e.TaskID, e.Attempt)]
		return ok && s > target
	}), nil
}

// refuseUncompensable is the check before anything changes: crossing a non-idempotent effect
// with no compensation is refused (exit 6) unless --force.
func refuseUncompensable(crossed []store.Effect, force bool, command string) error {
	bad := compensate.Uncompensable(crossed)
	if len(bad) == 0 || force {
		return nil
	}
	names := make([]string, len(bad))
	for i, e := range bad {
		names[i] = fmt.Sprintf("%s (effect %d of %s@%d)", e.Name, e.ID, e.TaskID, e.Attempt)
	}
	return &Error{Code: ExitRefused,
		Msg: fmt.Sprintf("%s would cross %d non-idempotent side effect%s with no compensation: %s; nothing was changed",
			command, len(bad), plural(len(bad)), strings.Join(names, ", ")),
		Hints: []string{"undo them by hand, then pass --force (they are left unresolved); `mulligan effects` lists them"}}
}

// compensateAll runs the compensations of crossed and reports each on stderr; failed is set
// when one failed (the command then exits 1 after printing its result).
func compensateAll(ctx context.Context, g *globals, st *state, crossed []store.Effect, noCompensate bool) (list []compensationJSON, failed bool, err error) {
	results, err := compensate.Compensate(ctx, st.db, st.repo.Root(), crossed, noCompensate)
	list = []compensationJSON{}
	for _, r := range results {
		if r.State == "" {
			continue
		}
		j := compensationJSON{ID: r.Effect.ID, Task: r.Effect.TaskID, Attempt: r.Effect.Attempt, Name: r.Effect.Name,
			State: r.State, DeliveryID: r.Effect.DeliveryID, Output: r.Output}
		switch r.State {
		case store.EffectCompensated:
			fmt.Fprintf(g.io.ErrOut, "compensated %s (effect %d of %s@%d, delivery id %s)\n", r.Effect.Name, r.Effect.ID, r.Effect.TaskID, r.Effect.Attempt, r.Effect.DeliveryID)
		case store.EffectCompensationFailed:
			failed = true
			j.Error = r.Err.Error()
			fmt.Fprintf(g.io.ErrOut, "mulligan: error: compensation of %s (effect %d of %s@%d) failed: %v\n", r.Effect.Name, r.Effect.ID, r.Effect.TaskID, r.Effect.Attempt, r.Err)
			if out := strings.TrimSpace(r.Output); out != "" {
				fmt.Fprintf(g.io.ErrOut, "%s\n", indentLines(out))
			}
		case store.EffectUnresolved:
			fmt.Fprintf(g.io.ErrOut, "left %s unresolved (effect %d of %s@%d)\n", r.Effect.Name, r.Effect.ID, r.Effect.TaskID, r.Effect.Attempt)
		}
		list = append(list, j)
	}
	if failed {
		fmt.Fprintf(g.io.ErrOut, "hint: fix the cause, then `mulligan compensate %s` runs the failed ones again (same delivery ids)\n", crossed[0].RunID)
	}
	return list, failed, err
}

func indentLines(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// compensateCommand is `mulligan compensate RUN`: run the failed compensations again.
func compensateCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "compensate",
		Usage:     "run a run's failed compensations again (each with its same MULLIGAN_DELIVERY_ID)",
		ArgsUsage: "RUN",
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("e.g. mulligan compensate k3f9", "compensate takes one run")
			}
			st, id, err := openRun(c.Context, c.Args().First())
			if err != nil {
				return err
			}
			defer st.Close()
			var all []store.Effect
			if err := st.db.View(c.Context, func(tx *store.Tx) (err error) {
				all, err = tx.Effects(id)
				return err
			}); err != nil {
				return err
			}
			failedOnes := compensate.CrossedBy(all, func(e store.Effect) bool { return e.State == store.EffectCompensationFailed })
			if len(failedOnes) == 0 {
				if g.json() {
					return writeJSON(g.io.Out, map[string]any{"run": id, "compensated": []any{}})
				}
				fmt.Fprintf(g.io.Out, "run %s has no failed compensation\n", id)
				return nil
			}
			list, failed, err := compensateAll(c.Context, g, st, failedOnes, false)
			if err != nil {
				return err
			}
			if g.json() {
				if err := writeJSON(g.io.Out, map[string]any{"run": id, "compensated": list}); err != nil {
					return err
				}
			} else {
				n := 0
				for _, j := range list {
					if j.State == store.EffectCompensated {
						n++
					}
				}
				fmt.Fprintf(g.io.Out, "%d of %d compensation%s done\n", n, len(list), plural(len(list)))
			}
			if failed {
				return exitError{ExitFailed}
			}
			return nil
		},
	}
}

// refuseReplayEffects refuses (exit 6) to replay a task whose non-idempotent side effects are
// still out in the world (not compensated), unless --force: the replay would do them again.
func refuseReplayEffects(ctx context.Context, st *state, run, task string, force bool) error {
	if force {
		return nil
	}
	var es []store.Effect
	if err := st.db.View(ctx, func(tx *store.Tx) (err error) {
		es, err = tx.TaskEffects(run, task)
		return err
	}); err != nil {
		return err
	}
	var names []string
	for _, e := range es {
		if !e.Idempotent && compensate.Pending(e) {
			names = append(names, fmt.Sprintf("%s (effect %d of %s@%d, %s)", e.Name, e.ID, e.TaskID, e.Attempt, e.State))
		}
	}
	if len(names) == 0 {
		return nil
	}
	return &Error{Code: ExitRefused,
		Msg: fmt.Sprintf("task %s has non-idempotent side effects that were not compensated: %s; replaying it would do them again; nothing was changed",
			task, strings.Join(names, ", ")),
		Hints: []string{fmt.Sprintf("undo them (`mulligan compensate %s`, or by hand), or pass --force to replay anyway", run)}}
}
