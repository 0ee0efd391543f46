package cmd

import (
	"context"
	"fmt"
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

// compensateAll runs the compensations of crossed and reports each on stderr; failed is set
// when one failed (the command then exits 1 after printing its result).
func compensateAll(ctx context.Context, g *globals, st *state, crossed []store.Effect, noCompensate bool) (list []compensationJSON, failed bool, err error) {
	results, err := compensate.Compensate(ctx, st.db, st.repo.Root(), crossed, noCompensate)
	list, failed = compensationList(g.io.ErrOut, results)
	return list, failed, err
}

// describeEffect names an effect in a message (compensate.Describe).
func describeEffect(e store.Effect, extra string) string { return compensate.Describe(e, extra) }

func effectName(e store.Effect) string { return compensate.Name(e) }

func effectRef(e store.Effect, extra string) string { return compensate.Ref(e, extra) }

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
	st, id, err := openRun(ctx, g, opts.Run)
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
