package cmd

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
)

func pauseCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "pause",
		Usage:     "park a run from another shell: drain lets the attempt in flight finish, cancel ends it (not counted)",
		ArgsUsage: "RUN",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "mode", Value: "drain", Usage: "drain or cancel"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("e.g. mulligan pause k3f9 (or: mulligan pause last)", "pause takes one run")
			}
			request, err := attempt.PauseMode(c.String("mode"))
			if err != nil {
				return usageError("--mode drain (the default) or --mode cancel", "%s", err)
			}
			st, id, err := openRun(c.Context, g, c.Args().First())
			if err != nil {
				return err
			}
			defer st.Close()
			res, err := attempt.RequestPause(c.Context, st.db, id, request)
			if err != nil {
				return err
			}
			return printControl(g, res)
		},
	}
}

// printControl prints what a pause or cancel request did.
func printControl(g *globals, res *attempt.ControlResult) error {
	if g.json() {
		return writeJSON(g.io.Out, res)
	}
	w := g.io.Out
	switch res.Action {
	case "requested":
		fmt.Fprintf(w, "%s requested for run %s (pid %d): it acts within a few seconds\n", res.Request, res.RunID, res.PID)
		fmt.Fprintf(w, "hint: mulligan events %s -f follows it\n", res.RunID)
	case "paused":
		fmt.Fprintf(w, "run %s paused (no process was running it)\n", res.RunID)
		fmt.Fprintf(w, "hint: mulligan resume %s continues it\n", res.RunID)
	case "none":
		fmt.Fprintf(w, "run %s is already paused\n", res.RunID)
		fmt.Fprintf(w, "hint: mulligan resume %s continues it\n", res.RunID)
	case "cancelled":
		fmt.Fprintf(w, "run %s cancelled (no process was running it)\n", res.RunID)
	}
	return nil
}
