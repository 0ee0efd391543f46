package cmd

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/fatih/color"
	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/snapshot"
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
			st, id, err := openRun(c.Context, g, c.Args().First())
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
	if run.Pruned {
		fmt.Fprintf(w, "  %s\n", color.YellowString("pruned by gc: its refs and logs are deleted; the record below is all that is left"))
	}
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
		if id, state := heldBehind(run.Tasks, t); id != "" {
			ts += fmt.Sprintf(" (waits for %s, %s)", id, strings.ReplaceAll(state, "_", " "))
		}
		if t.ResumeAt != nil && (t.State == store.TaskWaitingQuota || t.State == store.TaskBackoff) {
			ts += "  until " + t.ResumeAt.Local().Format(time.DateTime) // what it waits for ends then
		}
		if t.SilentAt != nil {
			ts += "  silent since " + t.SilentAt.Local().Format(time.TimeOnly)
		}
		fmt.Fprintf(w, "\ntask %s  %s\n", t.ID, ts)
		if len(t.Attempts) == 0 {
			continue
		}
		tb := table{indent: "  "}
		attempts, raced := byLane(t.Attempts)
		if raced {
			tb.header("LANE", "#", "AGENT", "STATE", "CLASS", "EXIT", "DURATION", "FILES", "COST", "REF")
		} else {
			tb.header("#", "AGENT", "STATE", "CLASS", "EXIT", "DURATION", "FILES", "COST", "REF")
		}
		for _, a := range attempts {
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
			cells := []cell{plain(fmt.Sprint(a.N)), plain(a.Agent), painted(a.State, stateColor), plain(class), plain(exit), plain(dur), plain(files), plain(attemptSpend(a)), plain(ref)}
			if raced {
				lane := "-"
				if a.Lane > 0 {
					lane = fmt.Sprint(a.Lane)
				}
				cells = append([]cell{plain(lane)}, cells...)
			}
			tb.row(cells...)
		}
		tb.write(w)
		for _, a := range t.Attempts {
			if a.Message != "" {
				fmt.Fprintf(w, "  @%d: %s\n", a.N, firstLine(a.Message))
			}
		}
		for _, a := range t.Attempts {
			printGitChanges(w, a)
			if line := resumeLine(a); line != "" {
				fmt.Fprintf(w, "  @%d: %s\n", a.N, line)
			}
		}
	}
}

// byLane returns a task's attempts grouped by the lane they raced in (best_of), each lane's in
// order, the attempts that raced no one first; raced says whether any did.
func byLane(as []store.Attempt) ([]store.Attempt, bool) {
	raced := slices.ContainsFunc(as, func(a store.Attempt) bool { return a.Lane > 0 })
	if !raced {
		return as, false
	}
	out := slices.Clone(as)
	slices.SortStableFunc(out, func(a, b store.Attempt) int { return cmp.Compare(a.Lane, b.Lane) })
	return out, true
}

// heldBehind names the held task (blocked, waiting for a quota or an approval) that pending task
// t waits for, through its needs and theirs: "" when t is not pending or nothing it needs is
// held. Without it a morning reader takes the task for queued.
func heldBehind(tasks []store.Task, t store.Task) (id, state string) {
	if t.State != store.TaskPending {
		return "", ""
	}
	byID := make(map[string]store.Task, len(tasks))
	for _, u := range tasks {
		byID[u.ID] = u
	}
	seen := map[string]bool{}
	queue := slices.Clone(t.Needs)
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		u, ok := byID[n]
		if !ok || seen[n] {
			continue
		}
		seen[n] = true
		if store.TaskHeld(u.State) {
			return u.ID, u.State
		}
		if u.State == store.TaskPending {
			queue = append(queue, u.Needs...)
		}
	}
	return "", ""
}

// resumeLine says how to continue an attempt's agent conversation by hand: its session, and
// the command that continues it in the attempt's tree.
func resumeLine(a store.Attempt) string {
	switch {
	case a.AgentResume != "" && a.Ref != "":
		return fmt.Sprintf("session %s, continue it in the attempt's tree: mulligan restore %s && %s", a.AgentSession, a.Ref, a.AgentResume)
	case a.AgentResume != "":
		return fmt.Sprintf("session %s, continue it: %s", a.AgentSession, a.AgentResume)
	case a.AgentSession != "":
		return "agent session " + a.AgentSession
	}
	return ""
}

// printGitChanges prints what an attempt did to HEAD, refs, the stash and the index, and what
// became of it.
func printGitChanges(w io.Writer, a store.Attempt) {
	if len(a.GitChanges) == 0 {
		return
	}
	var cs []snapshot.GitChange
	if err := json.Unmarshal(a.GitChanges, &cs); err != nil || len(cs) == 0 {
		return
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	fate := map[string]string{store.GitPutBack: "put back", store.GitPartial: "partly put back: see `mulligan events`", store.GitKept: "kept"}[a.GitReset]
	if fate == "" {
		fate = "not put back yet"
	}
	fmt.Fprintf(w, "  @%d git: %s (%s)\n", a.N, strings.Join(parts, ", "), fate)
}

// attemptSpend is an attempt's reported cost, or its tokens where its CLI printed no cost (a
// session ended before its result: cancelled, superseded); "-" when it reported nothing. Every
// attempt counts: a stopped one was billed for what it did.
func attemptSpend(a store.Attempt) string {
	if a.CostUSD != nil {
		return cost(a.CostUSD)
	}
	if a.TokensIn != nil || a.TokensOut != nil {
		var in, out int64
		if a.TokensIn != nil {
			in = *a.TokensIn
		}
		if a.TokensOut != nil {
			out = *a.TokensOut
		}
		return fmt.Sprintf("%d+%d tok", in, out)
	}
	return "-"
}
