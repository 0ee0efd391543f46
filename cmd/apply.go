package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/attempt/plan"
)

type applyOptions struct {
	Addr   string
	Merge  bool
	DryRun bool
}

func applyCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Usage:     "carry an attempt's change (pre → post) into the working tree as a three-way merge (text by hunks, as git merge-file): whole or not at all, an undo ref taken first",
		ArgsUsage: "ADDR",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "merge", Usage: "write conflicting hunks with conflict markers (like git checkout -m) instead of refusing"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would change and what conflicts, change nothing (exit 6 on a conflict)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("e.g. mulligan apply k3f9/fix-tests@2", "apply takes one address")
			}
			return runApply(c.Context, g, applyOptions{Addr: c.Args().First(), Merge: c.Bool("merge"), DryRun: c.Bool("dry-run")})
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
	p, err := plan.PlanApply(ctx, st.planEnv(), plan.ApplyOptions{Run: run.ID, Task: a.TaskID, N: a.N, Merge: opts.Merge})
	if p != nil {
		for _, n := range p.Recovered {
			fmt.Fprintln(g.io.ErrOut, n)
		}
	}
	if errors.Is(err, attempt.ErrNotFinished) {
		return withHint(ExitFailed, err, fmt.Sprintf("wait for it to end: mulligan events %s -f", run.ID))
	}
	if err != nil {
		return err
	}
	if opts.DryRun || p.Apply.Refused() {
		if err := printApply(g, addr, &attempt.ApplyResult{Plan: p.Apply}, opts.DryRun); err != nil {
			return err
		}
		if !p.Apply.Refused() {
			return nil
		}
		return applyRefused(addr, &attempt.ApplyConflictError{Plan: p.Apply}, opts.DryRun)
	}
	res, err := p.Execute(ctx)
	var refused *attempt.ApplyConflictError
	switch {
	case errors.As(err, &refused): // the tree changed since the plan, into a conflict
		if perr := printApply(g, addr, &attempt.ApplyResult{Plan: refused.Plan}, false); perr != nil {
			return perr
		}
		return applyRefused(addr, refused, false)
	case errors.Is(err, attempt.ErrActive):
		return &Error{Code: ExitRefused, Msg: err.Error(), Err: err, Hints: []string{
			"the working tree is that run's until it stops: apply when it has (`mulligan ls`), or pause it first"}}
	case err != nil:
		return err
	}
	if err := printApply(g, addr, res.Applied, false); err != nil {
		return err
	}
	if res.Applied.Settled {
		fmt.Fprintf(g.io.Out, "task %s of run %s succeeded (applied by hand); continue the run: mulligan resume %s\n", a.TaskID, run.ID, run.ID)
	}
	return nil
}

// applyRefused is exit 6 for an apply that conflicts (or would, on a dry run).
func applyRefused(addr string, err *attempt.ApplyConflictError, dryRun bool) error {
	msg := fmt.Sprintf("apply %s: %s", addr, err)
	if dryRun {
		msg = fmt.Sprintf("apply %s would conflict (dry run, nothing changed)", addr)
	}
	return &Error{Code: ExitRefused, Msg: msg, Err: err, Hints: applyHints(addr, err.Plan)}
}

// applyHints are the next commands after a refused apply: none of them discards the user's
// version of a path.
func applyHints(addr string, p *attempt.ApplyPlan) []string {
	var hints []string
	if len(p.Blocked) > 0 {
		hints = append(hints, "a path the change writes holds files no snapshot keeps (ignored or untracked): move them aside, then apply again: mulligan apply "+addr)
	}
	var other []string // conflicts no marker can show: a binary file, a deletion against an edit
	text := false
	for _, c := range p.Conflicts {
		switch {
		case c.Text && !c.Marked:
			text = true
		case !c.Text:
			other = append(other, c.Path)
		}
	}
	if text && !p.Markers {
		hints = append(hints, "merge it with your version, the conflicting lines marked in the files for you to resolve: mulligan apply "+addr+" --merge")
	}
	for i, path := range other {
		if i == 3 {
			hints = append(hints, fmt.Sprintf("  … and %d more (mulligan apply %s --dry-run lists them)", len(other)-3, addr))
			break
		}
		// The attempt's version beside the user's, never over it.
		hints = append(hints, fmt.Sprintf("%s cannot be merged by lines: decide it by hand, the attempt's version beside yours: git show %s:%s > %s.theirs",
			path, p.Attempt.Ref, path, path))
	}
	return append(hints, "see the attempt's change: mulligan diff "+addr)
}

func printApply(g *globals, addr string, res *attempt.ApplyResult, dryRun bool) error {
	p := res.Plan
	changes := p.Changes
	var undoRef any
	if res.Restore != nil {
		changes, undoRef = res.Restore.Changes, res.UndoRef
	}
	if p.Refused() {
		changes = nil
	}
	type conflictJSON struct {
		Path   string `json:"path"`
		Reason string `json:"reason"`
		Marked bool   `json:"marked"`
	}
	conflicts := []conflictJSON{}
	for _, c := range p.Conflicts {
		conflicts = append(conflicts, conflictJSON{c.Path, c.Reason, c.Marked})
	}
	for _, b := range p.Blocked {
		conflicts = append(conflicts, conflictJSON{b.Path, b.Reason, false})
	}
	if g.json() {
		changed := make([]changeJSON, 0, len(changes))
		for _, ch := range changes {
			changed = append(changed, changeJSON{Path: ch.Path, Action: ch.Action.String()})
		}
		return writeJSON(g.io.Out, map[string]any{
			"attempt": addr, "tree": p.Tree.String(), "changed": changed, "merged": nonNil(p.Merged), "conflicts": conflicts,
			"undo_ref": undoRef, "dry_run": dryRun,
		})
	}
	merged := map[string]bool{}
	for _, m := range p.Merged {
		merged[m] = true
	}
	for _, ch := range changes {
		note := ""
		if merged[ch.Path] {
			note = " (merged with your edits)"
		}
		fmt.Fprintf(g.io.Out, "%s %s%s\n", actionLetter(ch.Action), ch.Path, note)
	}
	for _, c := range conflicts {
		fmt.Fprintf(g.io.Out, "! %s: %s\n", c.Path, c.Reason)
	}
	switch {
	case p.Refused():
		fmt.Fprintf(g.io.Out, "would not apply %s: %d path%s conflict; nothing changed\n", addr, len(conflicts), plural(len(conflicts)))
	case dryRun:
		fmt.Fprintf(g.io.Out, "would apply %s: %d path%s change (dry run, nothing changed)\n", addr, len(changes), plural(len(changes)))
	case len(changes) == 0:
		fmt.Fprintf(g.io.Out, "the working tree already holds %s's change: nothing written\n", addr)
	default:
		fmt.Fprintf(g.io.Out, "applied %s: %d path%s changed; undo point %s\n", addr, len(changes), plural(len(changes)), undoRef)
		if n := len(p.MarkedPaths()); n > 0 {
			fmt.Fprintf(g.io.Out, "%d file%s hold%s conflict markers (<<<<<<< working tree … >>>>>>> %s): resolve them in an editor\n", n, plural(n), map[bool]string{true: "s", false: ""}[n == 1], addr)
		}
		fmt.Fprintf(g.io.Out, "hint: `mulligan undo` puts back the tree this replaced\n")
	}
	return nil
}
