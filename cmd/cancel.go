package cmd

import (
	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
)

func cancelCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "cancel",
		Usage:     "stop a run cooperatively: SIGTERM to the attempt's agent, grace, the run ends cancelled (its process exits 5)",
		ArgsUsage: "RUN",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("e.g. mulligan cancel k3f9 (or: mulligan cancel last)", "cancel takes one run")
			}
			env, id, done, err := openRunEnv(c.Context, g, c.Args().First())
			if err != nil {
				return err
			}
			defer done()
			res, err := attempt.RequestCancel(c.Context, env, id)
			if err != nil {
				return err
			}
			return printControl(g, res)
		},
	}
}
