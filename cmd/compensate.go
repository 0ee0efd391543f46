package cmd

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/compensate"
	"github.com/mulligan-dev/mulligan/store"
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
	all, err := runEffects(ctx, st, run.ID)
	if err != nil {
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
		names[i] = describeEffect(e, "")
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
			fmt.Fprintf(g.io.ErrOut, "compensated %s\n", describeEffect(r.Effect, ", delivery id "+r.Effect.DeliveryID))
		case store.EffectCompensationFailed:
			failed = true
			j.Error = r.Err.Error()
			fmt.Fprintf(g.io.ErrOut, "mulligan: error: compensation of %s failed: %v\n", describeEffect(r.Effect, ""), r.Err)
			if out := strings.TrimSpace(r.Output); out != "" {
				fmt.Fprintf(g.io.ErrOut, "%s\n", indentLines(out))
			}
		case store.EffectUnresolved:
			fmt.Fprintf(g.io.ErrOut, "left %s unresolved %s\n", effectName(r.Effect), effectRef(r.Effect, ""))
		}
		list = append(list, j)
	}
	if failed {
		fmt.Fprintf(g.io.ErrOut, "hint: fix the cause, then `mulligan compensate %s` runs the failed ones again (same delivery ids)\n", crossed[0].RunID)
	}
	return list, failed, err
}

// describeEffect names an effect in a message: `push (effect 1 of a@1…)`, and for the implicit
// effect of an attempt of a task marked side_effects: non_idempotent, what it stands for. extra
// goes inside the parentheses.
func describeEffect(e store.Effect, extra string) string {
	return effectName(e) + " " + effectRef(e, extra)
}

func effectName(e store.Effect) string {
	if e.Implicit {
		return fmt.Sprintf("whatever %s@%d did", e.TaskID, e.Attempt)
	}
	return e.Name
}

func effectRef(e store.Effect, extra string) string {
	if e.Implicit {
		return fmt.Sprintf("(effect %d: the task is marked side_effects: non_idempotent%s)", e.ID, extra)
	}
	return fmt.Sprintf("(effect %d of %s@%d%s)", e.ID, e.TaskID, e.Attempt, extra)
}

func indentLines(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

type compensateOptions struct {
	Run string
	// Unresolved also runs the compensations of effects left unresolved (revert or timetravel
	// --no-compensate): the operator's later decision to undo them after all.
	Unresolved bool
}

// compensateCommand is `mulligan compensate RUN`: deliver the compensations a run still owes.
func compensateCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "compensate",
		Usage:     "run a run's failed or interrupted compensations again (each with its same MULLIGAN_DELIVERY_ID)",
		ArgsUsage: "RUN",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "unresolved", Usage: "also run the compensations of the effects left unresolved (--no-compensate)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("e.g. mulligan compensate k3f9", "compensate takes one run")
			}
			return runCompensate(c.Context, g, compensateOptions{Run: c.Args().First(), Unresolved: c.Bool("unresolved")})
		},
	}
}

// owed reports whether `mulligan compensate` delivers e: its compensation failed, or a revert
// or timetravel set out to run it and never recorded the outcome (it was killed); with
// unresolved, also an effect left unresolved that has a compensation.
func owed(e store.Effect, unresolved bool) bool {
	switch e.State {
	case store.EffectCompensationFailed, store.EffectCompensating:
		return true
	case store.EffectUnresolved:
		return unresolved && len(e.Compensate) > 0
	}
	return false
}

func runCompensate(ctx context.Context, g *globals, opts compensateOptions) error {
	st, id, err := openRun(ctx, opts.Run)
	if err != nil {
		return err
	}
	defer st.Close()
	all, err := runEffects(ctx, st, id)
	if err != nil {
		return err
	}
	todo := compensate.CrossedBy(all, func(e store.Effect) bool { return owed(e, opts.Unresolved) })
	list, failed := []compensationJSON{}, false
	if len(todo) > 0 {
		if list, failed, err = compensateAll(ctx, g, st, todo, false); err != nil {
			return err
		}
	}
	left := compensate.CrossedBy(all, func(e store.Effect) bool {
		return e.State == store.EffectUnresolved && !owed(e, opts.Unresolved)
	})
	if g.json() {
		if err := writeJSON(g.io.Out, map[string]any{"run": id, "compensated": list, "unresolved": nonNil(left)}); err != nil {
			return err
		}
	} else {
		printCompensate(g, id, list, left)
	}
	if failed {
		return exitError{ExitFailed}
	}
	return nil
}

// printCompensate says what compensate did and which effects it left unresolved, with the way
// to resolve them.
func printCompensate(g *globals, run string, list []compensationJSON, left []store.Effect) {
	if len(list) == 0 {
		fmt.Fprintf(g.io.Out, "run %s has nothing to compensate: no failed or interrupted compensation\n", run)
	} else {
		n := 0
		for _, j := range list {
			if j.State == store.EffectCompensated {
				n++
			}
		}
		fmt.Fprintf(g.io.Out, "%d of %d compensation%s done\n", n, len(list), plural(len(list)))
	}
	if len(left) == 0 {
		return
	}
	names := make([]string, len(left))
	manual := 0
	for i, e := range left {
		extra := ""
		if len(e.Compensate) == 0 {
			extra = ", no compensation"
			manual++
		}
		names[i] = describeEffect(e, extra)
	}
	fmt.Fprintf(g.io.Out, "left %d unresolved: %s\n", len(left), strings.Join(names, ", "))
	switch {
	case manual == len(left):
		fmt.Fprintf(g.io.Out, "hint: they have no compensation: undo them by hand; `mulligan effects %s` lists them\n", run)
	case manual > 0:
		fmt.Fprintf(g.io.Out, "hint: `mulligan compensate %s --unresolved` runs the compensations they have; undo the others by hand\n", run)
	default:
		fmt.Fprintf(g.io.Out, "hint: `mulligan compensate %s --unresolved` runs their compensations\n", run)
	}
}

// runEffects reads a run's effect ledger, in recording order.
func runEffects(ctx context.Context, st *state, run string) (es []store.Effect, err error) {
	err = st.db.View(ctx, func(tx *store.Tx) error {
		es, err = tx.Effects(run)
		return err
	})
	return es, err
}

// refuseReplayEffects refuses (exit 6) to replay tasks whose non-idempotent side effects (of
// es, the run's ledger) are still out in the world (not compensated), unless --force: the
// replay would do them again. settled says which effects the command itself compensates before
// the replay (nil: none).
func refuseReplayEffects(es []store.Effect, run string, tasks []string, settled func(store.Effect) bool, force bool) error {
	if force || len(tasks) == 0 {
		return nil
	}
	var names []string
	for _, e := range es {
		if slices.Contains(tasks, e.TaskID) && !e.Idempotent && compensate.Pending(e) && (settled == nil || !settled(e)) {
			names = append(names, describeEffect(e, ", "+e.State))
		}
	}
	if len(names) == 0 {
		return nil
	}
	what := "task " + tasks[0] + " has"
	if len(tasks) > 1 {
		what = "tasks " + strings.Join(tasks, ", ") + " (replayed) have"
	}
	return &Error{Code: ExitRefused,
		Msg: fmt.Sprintf("%s non-idempotent side effects that were not compensated: %s; replaying would do them again; nothing was changed",
			what, strings.Join(names, ", ")),
		Hints: []string{fmt.Sprintf("undo them (`mulligan compensate %s --unresolved` runs the compensations they have; the others by hand), or pass --force to replay anyway", run)}}
}
