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
		Usage: "delete the refs and logs of runs that finished long ago; their rows stay, marked pruned",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "older-than", Value: "30d", Usage: "prune runs that finished longer ago than `AGE` (e.g. 30d, 12h, 0)"},
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
			return runGC(c.Context, g, age, c.Bool("dry-run"))
		},
	}
}

func runGC(ctx context.Context, g *globals, age time.Duration, dryRun bool) error {
	st, err := openState()
	if err != nil {
		return err
	}
	if dryRun {
		st.errOut = nil // a dry run acts on nothing, hooks included
	}
	defer st.Close()
	runs, err := attempt.GC(ctx, st.repo, st.db, attempt.GCOptions{OlderThan: age, Now: time.Now(), DryRun: dryRun})
	if g.json() && err == nil {
		return writeJSON(g.io.Out, map[string]any{"dry_run": dryRun, "runs": runs})
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
	switch {
	case len(runs) == 0:
		fmt.Fprintf(g.io.Out, "nothing to prune: no run finished more than %s ago\n", age)
	case dryRun:
		fmt.Fprintf(g.io.Out, "%d run%s, %d ref%s would be pruned (dry run, nothing deleted)\n", len(runs), plural(len(runs)), refs, plural(refs))
	default:
		fmt.Fprintf(g.io.Out, "%d run%s pruned, %d ref%s deleted; their rows stay (mulligan ls)\n", len(runs), plural(len(runs)), refs, plural(refs))
	}
	return nil
}
