package cmd

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/store"
)

func lsCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "ls",
		Usage: "list runs, newest first, with state, tasks, attempts and age",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "limit", Aliases: []string{"n"}, Value: 50, Usage: "at most `N` runs (0: all)"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError("", "ls takes no arguments")
			}
			st, err := openState(g)
			if err != nil {
				return err
			}
			defer st.Close()
			var runs []store.RunSummary
			if err := st.db.View(c.Context, func(tx *store.Tx) error {
				var err error
				runs, err = tx.ListRuns(c.Int("limit"))
				return err
			}); err != nil {
				return err
			}
			if g.json() {
				if runs == nil {
					runs = []store.RunSummary{}
				}
				return writeJSON(g.io.Out, runs)
			}
			if len(runs) == 0 {
				fmt.Fprintln(g.io.Out, "no runs yet: start one with `mulligan run`")
				return nil
			}
			var tb table
			tb.header("RUN", "STATE", "TASKS", "ATTEMPTS", "COST", "AGE")
			now := time.Now()
			for _, r := range runs {
				state := r.State
				if r.Reason != "" {
					state += " (" + r.Reason + ")"
				}
				if r.Pruned {
					state += ", pruned"
				}
				tb.row(plain(r.ID), painted(state, stateColor), plain(fmt.Sprint(r.Tasks)), plain(fmt.Sprint(r.Attempts)), plain(cost(r.CostUSD)), plain(age(now.Sub(r.StartedAt))))
			}
			return tb.write(g.io.Out)
		},
	}
}

func cost(c *float64) string {
	if c == nil {
		return "-"
	}
	if *c > 0 && *c < 0.01 {
		return fmt.Sprintf("$%.4f", *c)
	}
	return fmt.Sprintf("$%.2f", *c)
}

func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
