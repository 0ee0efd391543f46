package cmd

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/store"
)

// completeCommand is what the completion scripts call on TAB: `mulligan __complete CMD WORD` prints
// the candidates for a positional argument of CMD (run ids, task addresses), `mulligan __complete
// --flag NAME WORD` those for a flag's value (preset names, task states). It prints nothing rather
// than an error, never creates a database, never delivers hooks, and reads the history only.
func completeCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:   "__complete",
		Hidden: true,
		Flags:  []cli.Flag{&cli.StringFlag{Name: "flag"}},
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			var out []string
			if f := c.String("flag"); f != "" {
				out = completeFlagValue(f)
			} else if len(args) >= 1 {
				out = completeArg(c.Context, c.App, args[0], args[1:])
			}
			word := ""
			if c.String("flag") != "" && len(args) > 0 {
				word = args[len(args)-1]
			} else if len(args) > 1 {
				word = args[len(args)-1]
			}
			for _, s := range out {
				if strings.HasPrefix(s, word) {
					fmt.Fprintln(g.io.Out, s)
				}
			}
			return nil
		},
	}
}

// completeFlagValue lists the values a flag takes, where they are a closed set.
func completeFlagValue(flag string) []string {
	switch strings.TrimLeft(flag, "-") {
	case "preset":
		return agentcli.PresetNames()
	case "state":
		return []string{store.TaskBlocked, store.TaskWaitingQuota, "waiting_approval", store.TaskBackoff, store.TaskRunning, "attention"}
	case "on-failure":
		return []string{"fail", "ask", "retry"}
	case "o", "output":
		return []string{"text", "json"}
	}
	return nil
}

// completeArg lists candidates for the positional argument being typed: words holds the positional
// arguments typed so far, the last one being the word under the cursor.
func completeArg(ctx context.Context, app *cli.App, command string, words []string) []string {
	cmd := app.Command(command)
	if cmd == nil {
		return nil
	}
	usage := cmd.ArgsUsage
	pos := max(len(words)-1, 0)
	cur := ""
	if len(words) > 0 {
		cur = words[len(words)-1]
	}
	st := openHistory()
	if st == nil {
		return nil
	}
	defer st.Close()
	switch {
	case strings.Contains(usage, "ADDR"):
		if cmd.Name == "diff" || pos == 0 {
			return completeAddress(ctx, st, cur)
		}
	case strings.HasPrefix(usage, "[RUN] TASK"): // retry-task
		if pos == 0 {
			return append(completeRuns(ctx, st), completeTasks(ctx, st, "")...)
		}
		if pos == 1 {
			return completeTasks(ctx, st, words[0])
		}
	case strings.Contains(usage, "RUN"):
		if pos == 0 {
			return completeRuns(ctx, st)
		}
	}
	return nil
}

// openHistory opens the repository's database for reading candidates: nil when there is no
// repository or no database yet (a TAB must not create one), and with hook delivery off.
func openHistory() *state {
	repo, err := openRepo()
	if err != nil {
		return nil
	}
	path := store.DefaultPath(repo.CommonDir())
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		repo.Close()
		return nil
	}
	db, err := store.Open(path)
	if err != nil {
		repo.Close()
		return nil
	}
	return &state{repo: repo, db: db}
}

// completeRuns lists the newest runs' ids.
func completeRuns(ctx context.Context, st *state) []string {
	var runs []store.RunSummary
	_ = st.db.View(ctx, func(tx *store.Tx) error {
		var err error
		runs, err = tx.ListRuns(50)
		return err
	})
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

// completeTasks lists the tasks of a run (the last one when ref is "").
func completeTasks(ctx context.Context, st *state, ref string) []string {
	id, err := st.resolveRun(ctx, ref)
	if err != nil {
		return nil
	}
	run, err := st.getRun(ctx, id)
	if err != nil {
		return nil
	}
	out := make([]string, len(run.Tasks))
	for i, t := range run.Tasks {
		out[i] = t.ID
	}
	return out
}

// completeAddress completes [RUN/]TASK[@N]: tasks of the last run, RUN/ for every recent run, and
// once a task is typed, its attempts.
func completeAddress(ctx context.Context, st *state, cur string) []string {
	runRef, rest, hasRun := strings.Cut(cur, "/")
	prefix := ""
	if !hasRun {
		rest, runRef = cur, ""
	} else {
		prefix = runRef + "/"
	}
	id, err := st.resolveRun(ctx, runRef)
	if err != nil {
		return nil
	}
	run, err := st.getRun(ctx, id)
	if err != nil {
		return nil
	}
	var out []string
	taskPart, _, hasAt := strings.Cut(rest, "@")
	for _, t := range run.Tasks {
		if hasAt {
			if t.ID != taskPart {
				continue
			}
			for _, a := range t.Attempts {
				out = append(out, fmt.Sprintf("%s%s@%d", prefix, t.ID, a.N))
			}
			out = append(out, prefix+t.ID+"@latest")
			continue
		}
		out = append(out, prefix+t.ID)
	}
	if !hasRun {
		for _, r := range completeRuns(ctx, st) {
			out = append(out, r+"/")
		}
	}
	sort.Strings(out)
	return out
}
