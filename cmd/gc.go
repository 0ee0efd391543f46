package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/taskfile"
)

func gcCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "gc",
		Usage: "delete the refs and logs of runs that finished long ago (their rows stay, marked pruned), old undo refs and the index copies no kept run refers to",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "older-than", Value: "30d", Usage: "prune runs that finished longer ago than `AGE` (e.g. 30d, 12h, 0)"},
			&cli.IntFlag{Name: "keep-undo", Value: 10, Usage: "keep the `N` newest undo refs (refs/mulligan/undo/*) whatever their age"},
			&cli.BoolFlag{Name: "dry-run", Usage: "list what would be pruned, delete nothing"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError("", "gc takes no arguments")
			}
			age, err := taskfile.ParseDuration(c.String("older-than"))
			if err != nil {
				return usageError("e.g. --older-than 30d", "--older-than: %v", err)
			}
			if c.Int("keep-undo") < 0 {
				return usageError("e.g. --keep-undo 10", "--keep-undo takes a number ≥ 0")
			}
			return runGC(c.Context, g, age, c.Int("keep-undo"), c.Bool("dry-run"))
		},
	}
}

func runGC(ctx context.Context, g *globals, age time.Duration, keepUndo int, dryRun bool) error {
	st, err := openState(g)
	if err != nil {
		return err
	}
	if dryRun {
		st.noHooks = true // a dry run acts on nothing, hooks included
	}
	defer st.Close()
	now := time.Now()
	runs, err := attempt.GC(ctx, st.repo, st.db, attempt.GCOptions{OlderThan: age, Now: now, DryRun: dryRun})
	var undo []attempt.GCUndo
	if err == nil {
		undo, err = attempt.GCUndoRefs(st.repo, age, keepUndo, now, dryRun)
	}
	var copies, opCopies []string
	if err == nil {
		copies, opCopies, err = attempt.GCIndexCopies(ctx, st.repo, st.db, now, dryRun)
	}
	var worktrees []string
	if err == nil {
		worktrees, err = attempt.GCWorktrees(ctx, st.repo, st.db, dryRun)
	}
	if g.json() && err == nil {
		return writeJSON(g.io.Out, map[string]any{"dry_run": dryRun, "runs": runs, "undo_refs": undo, "index_copies": copies, "git_op_copies": opCopies, "worktrees": worktrees})
	}
	verb := "pruned"
	if dryRun {
		verb = "would prune"
	}
	refs := 0
	for _, r := range runs {
		logs := "no logs"
		if r.Logs != "" {
			logs = "logs " + r.Logs
		}
		fmt.Fprintf(g.io.Out, "%s %s (%s, finished %s): %d ref%s, %s\n", verb, r.ID, r.State,
			r.FinishedAt.Format(time.RFC3339), len(r.Refs), plural(len(r.Refs)), logs)
		refs += len(r.Refs)
	}
	if err != nil {
		return err
	}
	if len(undo) > 0 {
		undoVerb := "deleted"
		if dryRun {
			undoVerb = "would delete"
		}
		fmt.Fprintf(g.io.Out, "%s %d undo ref%s older than %s (the newest %d are kept whatever their age)\n",
			undoVerb, len(undo), plural(len(undo)), ageString(age), keepUndo)
	}
	copyVerb := "removed"
	if dryRun {
		copyVerb = "would remove"
	}
	for _, c := range []struct {
		sums []string
		of   string
	}{{copies, "the index"}, {opCopies, "git operations in progress"}} {
		if len(c.sums) > 0 {
			fmt.Fprintf(g.io.Out, "%s %d cop%s of %s that no kept run's attempt refers to\n", copyVerb, len(c.sums), pluralY(len(c.sums)), c.of)
		}
	}
	for _, w := range worktrees {
		if dryRun {
			fmt.Fprintf(g.io.Out, "would remove the worktree %s (its run has finished)\n", w)
		} else {
			fmt.Fprintf(g.io.Out, "removed the worktree %s (its run has finished)\n", w)
		}
	}
	switch {
	case len(runs) == 0:
		fmt.Fprintf(g.io.Out, "nothing to prune: no run finished more than %s ago\n", ageString(age))
	case dryRun:
		fmt.Fprintf(g.io.Out, "%d run%s, %d ref%s would be pruned (dry run, nothing deleted)\n", len(runs), plural(len(runs)), refs, plural(refs))
	default:
		fmt.Fprintf(g.io.Out, "%d run%s pruned, %d ref%s deleted; their rows stay (mulligan ls)\n", len(runs), plural(len(runs)), refs, plural(refs))
	}
	return nil
}

// ageString writes an --older-than age the way it is typed: 30d, 12h, 90m.
func ageString(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return d.String()
}

func pluralY(n int) string {
	if n == 1 {
		return "y"
	}
	return "ies"
}
