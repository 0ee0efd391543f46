package cmd

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/store"
)

func showCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "a run's tasks and attempts: state, agent, class, exit, duration, files changed, refs",
		ArgsUsage: "[RUN]",
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("e.g. mulligan show k3f9", "show takes one run")
			}
			st, id, err := openRun(c.Context, c.Args().First())
			if err != nil {
				return err
			}
			defer st.Close()
			run, err := st.getRun(c.Context, id)
			if err != nil {
				return err
			}
			if g.json() {
				return writeJSON(g.io.Out, run)
			}
			printRun(g, run)
			return nil
		},
	}
}

func printRun(g *globals, run *store.Run) {
	w := g.io.Out
	state := stateColor(run.State)
	if run.Reason != "" {
		state += " (" + run.Reason + ")"
	}
	fmt.Fprintf(w, "run %s  %s\n", run.ID, state)
	fmt.Fprintf(w, "  worktree   %s\n", run.Worktree)
	if run.TaskFile != "" {
		fmt.Fprintf(w, "  task file  %s (%.12s)\n", run.TaskFile, run.TaskFileHash)
	}
	fmt.Fprintf(w, "  base       %s\n", run.BaseRef)
	end := time.Now()
	if run.FinishedAt != nil {
		end = *run.FinishedAt
	}
	fmt.Fprintf(w, "  started    %s (%s)\n", run.StartedAt.Local().Format(time.DateTime), roundDuration(end.Sub(run.StartedAt)))
	if run.CostUSD != nil {
		fmt.Fprintf(w, "  spend      %s\n", cost(run.CostUSD))
	}
	for _, t := range run.Tasks {
		ts := stateColor(t.State)
		if t.Reason != "" {
			ts += " (" + t.Reason + ")"
		}
		fmt.Fprintf(w, "\ntask %s  %s\n", t.ID, ts)
		if len(t.Attempts) == 0 {
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  #\tAGENT\tSTATE\tCLASS\tEXIT\tDURATION\tFILES\tREF")
		for _, a := range t.Attempts {
			class := a.Class
			if class == "" {
				class = "-"
			}
			exit := "-"
			if a.ExitCode != nil {
				exit = fmt.Sprint(*a.ExitCode)
			}
			dur := "-"
			if a.DurationMS != nil {
				dur = roundDuration(time.Duration(*a.DurationMS) * time.Millisecond).String()
			}
			files := "-"
			if a.FilesChanged != nil {
				files = fmt.Sprint(*a.FilesChanged)
			}
			ref := a.Ref
			if ref == "" {
				ref = "-"
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.N, a.Agent, stateColor(a.State), class, exit, dur, files, ref)
		}
		tw.Flush()
		for _, a := range t.Attempts {
			if a.Message != "" {
				fmt.Fprintf(w, "  @%d: %s\n", a.N, firstLine(a.Message))
			}
		}
	}
}
