package cmd

import (
	"context"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/attempt/store"
)

func resumeCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "resume",
		Usage:     "continue a run whose process died, in the foreground",
		ArgsUsage: "[RUN]",
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("e.g. mulligan resume k3f9", "resume takes one run")
			}
			return runResume(c.Context, g, c.Args().First())
		},
	}
}

func runResume(ctx context.Context, g *globals, ref string) error {
	st, err := openState()
	if err != nil {
		return err
	}
	defer st.Close()
	id, err := st.resolveRun(ctx, ref)
	if err != nil {
		return err
	}
	return foreground(ctx, g, st, func(ctx context.Context, env attempt.Env) (*attempt.Outcome, error) {
		return attempt.Resume(ctx, env, attempt.ResumeOptions{RunID: id, Load: loadStoredFile})
	})
}

// loadStoredFile rebuilds a run's task file from the definition stored with it, so an agent
// that edited mulligan.yaml cannot change the run under way.
func loadStoredFile(run *store.Run) (*attempt.File, error) {
	return attempt.Parse(run.TaskFile, run.TaskFileContent)
}
