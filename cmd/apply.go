package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/snapshot"
)

type applyOptions struct {
	Addr   string
	DryRun bool
}

func applyCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Usage:     "carry an attempt's change (pre → post) into the working tree as a three-way merge: paths changed since are never overwritten (an undo ref is taken first)",
		ArgsUsage: "ADDR",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would change and what conflicts, change nothing"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("e.g. mulligan apply k3f9/fix-tests@2", "apply takes one address")
			}
			return runApply(c.Context, g, applyOptions{Addr: c.Args().First(), DryRun: c.Bool("dry-run")})
		},
	}
}

func runApply(ctx context.Context, g *globals, opts applyOptions) error {
	st, err := openState(g)
	if err != nil {
		return err
	}
	defer st.Close()
	run, a, err := st.resolveAddress(ctx, opts.Addr)
	if err != nil {
		return err
	}
	if err := notPruned(run); err != nil {
		return err
	}
	addr := fmt.Sprintf("%s/%s@%d", run.ID, a.TaskID, a.N)
	plan, err := attempt.PlanApply(ctx, st.repo, run.ID, *a)
	if errors.Is(err, attempt.ErrNotFinished) {
		return withHint(ExitFailed, err, fmt.Sprintf("wait for it to end: mulligan events %s -f", run.ID))
	}
	if err != nil {
		return err
	}
	if opts.DryRun {
		return printApply(g, addr, plan, nil, true)
	}
	ref, msg := undoPoint("apply " + addr)
	res, err := plan.Execute(ctx, st.repo, st.db, ref, msg)
	var conflict *attempt.ConflictPathsError
	switch {
	case errors.As(err, &conflict):
		hints := append([]string{"nothing was applied; the working tree changed these paths of the attempt's change otherwise since. Take the attempt's version of one by hand:"},
			restoreHints(conflict, fmt.Sprintf(" (mulligan apply %s --dry-run lists them)", addr))...)
		hints = append(hints, fmt.Sprintf("or see both sides: mulligan diff %s", addr))
		return &Error{Code: ExitRefused, Msg: fmt.Sprintf("apply %s: %s", addr, err), Err: err, Hints: hints}
	case errors.Is(err, attempt.ErrActive):
		return &Error{Code: ExitRefused, Msg: err.Error(), Err: err, Hints: []string{
			"the working tree is that run's until it stops: apply when it has (`mulligan ls`), or pause it first"}}
	case err != nil:
		return err
	}
	if err := printApply(g, addr, plan, res, false); err != nil {
		return err
	}
	// An isolated task held because its change conflicted is done once its change is in.
	settled, err := attempt.SettleApplied(context.WithoutCancel(ctx), st.db, run.ID, a.TaskID, a.N)
	if err != nil {
		return err
	}
	if settled {
		fmt.Fprintf(g.io.Out, "task %s of run %s succeeded (applied by hand); continue the run: mulligan resume %s\n", a.TaskID, run.ID, run.ID)
	}
	return nil
}

func printApply(g *globals, addr string, p *attempt.ApplyPlan, res *snapshot.RestoreResult, dryRun bool) error {
	changes := p.Changes
	var undoRef any
	if res != nil {
		changes = res.Changes
		if res.Undo != nil {
			undoRef = res.Undo.Ref
		}
	}
	if g.json() {
		changed := make([]changeJSON, 0, len(changes))
		for _, ch := range changes {
			changed = append(changed, changeJSON{Path: ch.Path, Action: ch.Action.String()})
		}
		return writeJSON(g.io.Out, map[string]any{
			"attempt": addr, "tree": p.Tree.String(), "changed": changed, "conflicts": nonNil(p.Conflicts),
			"undo_ref": undoRef, "dry_run": dryRun,
		})
	}
	for _, ch := range changes {
		fmt.Fprintf(g.io.Out, "%s %s\n", actionLetter(ch.Action), ch.Path)
	}
	for _, c := range p.Conflicts {
		fmt.Fprintf(g.io.Out, "! %s changed otherwise since the attempt started\n", c)
	}
	switch {
	case dryRun && len(p.Conflicts) > 0:
		fmt.Fprintf(g.io.Out, "would not apply %s: %d path%s conflict (dry run, nothing changed)\n", addr, len(p.Conflicts), plural(len(p.Conflicts)))
	case dryRun:
		fmt.Fprintf(g.io.Out, "would apply %s: %d path%s change (dry run, nothing changed)\n", addr, len(changes), plural(len(changes)))
	case len(changes) == 0:
		fmt.Fprintf(g.io.Out, "the working tree already holds %s's change: nothing written\n", addr)
	default:
		fmt.Fprintf(g.io.Out, "applied %s: %d path%s changed; undo point %s\n", addr, len(changes), plural(len(changes)), undoRef)
		fmt.Fprintf(g.io.Out, "hint: `mulligan undo` puts back the tree this replaced\n")
	}
	return nil
}
