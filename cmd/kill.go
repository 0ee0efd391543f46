package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/snapshot"
)

func killCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "kill",
		Usage:     "stop a run now: SIGKILL to its process and agent; the killed process can never write to the run again",
		ArgsUsage: "RUN",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("e.g. mulligan kill k3f9 (or: mulligan kill last)", "kill takes one run")
			}
			env, id, done, err := openRunEnv(c.Context, g, c.Args().First())
			if err != nil {
				return err
			}
			defer done()
			res, err := attempt.Kill(c.Context, env, attempt.KillOptions{RunID: id})
			if err != nil {
				return err
			}
			if g.json() {
				return writeJSON(g.io.Out, res)
			}
			w := g.io.Out
			what := []string{}
			if res.PID != 0 {
				what = append(what, fmt.Sprintf("process %d", res.PID))
			}
			for _, pg := range res.Groups {
				what = append(what, fmt.Sprintf("agent group %d", pg))
			}
			if len(what) == 0 {
				what = append(what, "no live process")
			}
			fmt.Fprintf(w, "run %s killed (%s); recorded cancelled\n", res.RunID, strings.Join(what, ", "))
			for i, a := range res.Attempts {
				fmt.Fprintf(w, "attempt %s cancelled; its tree: %s\n", a, res.Posts[i])
			}
			if res.Note != "" {
				fmt.Fprintf(w, "note: %s\n", res.Note)
			}
			return nil
		},
	}
}

// openRunEnv opens the run ref names (as openRun) and an attempt.Env for acting on it from this
// process (kill, cancel): its Repo is the run's own worktree, which may be another worktree of
// this repository. done closes all it opened.
func openRunEnv(ctx context.Context, g *globals, ref string) (env attempt.Env, id string, done func(), err error) {
	st, id, err := openRun(ctx, g, ref)
	if err != nil {
		return attempt.Env{}, "", nil, err
	}
	run, err := st.getRun(ctx, id)
	if err != nil {
		st.Close()
		return attempt.Env{}, "", nil, err
	}
	env = attempt.Env{Repo: st.repo, DB: st.db}
	done = func() { st.Close() }
	if run.Worktree != "" && run.Worktree != st.repo.Root() {
		repo, err := snapshot.Open(run.Worktree)
		if err != nil {
			st.Close()
			return attempt.Env{}, "", nil, fmt.Errorf("open the run's worktree %s: %w", run.Worktree, err)
		}
		env.Repo, done = repo, func() { repo.Close(); st.Close() }
	}
	return env, id, done, nil
}
