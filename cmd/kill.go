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
			st, id, err := openRun(c.Context, c.Args().First())
			if err != nil {
				return err
			}
			defer st.Close()
			env, done, err := st.runEnv(c.Context, id)
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
			for _, a := range res.Attempts {
				fmt.Fprintf(w, "attempt %s cancelled; its tree: refs/mulligan/runs/%s/%s/post\n", a, res.RunID, strings.Replace(a, "@", "/", 1))
			}
			if res.Note != "" {
				fmt.Fprintf(w, "note: %s\n", res.Note)
			}
			return nil
		},
	}
}

// runEnv is an attempt.Env for acting on run id from this process (kill, cancel): its Repo is
// the run's own worktree, which may be another worktree of this repository. done closes what
// runEnv opened.
func (s *state) runEnv(ctx context.Context, id string) (attempt.Env, func(), error) {
	run, err := s.getRun(ctx, id)
	if err != nil {
		return attempt.Env{}, nil, err
	}
	env := attempt.Env{Repo: s.repo, DB: s.db}
	done := func() {}
	if run.Worktree != "" && run.Worktree != s.repo.Root() {
		repo, err := snapshot.Open(run.Worktree)
		if err != nil {
			return attempt.Env{}, nil, fmt.Errorf("open the run's worktree %s: %w", run.Worktree, err)
		}
		env.Repo, done = repo, func() { repo.Close() }
	}
	return env, done, nil
}
