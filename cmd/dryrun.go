package cmd

import (
	"fmt"
	"strings"
	"time"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// runDryRun is `run --dry-run`: the task file validated and the plan printed. It opens the
// repository only to find the file: no database, no ref, no log, no process.
func runDryRun(g *globals, opts runOptions) error {
	repo, err := openRepo()
	if err != nil {
		return err
	}
	defer repo.Close()
	file, err := loadRunFile(repo.Root(), opts)
	if err != nil {
		return err
	}
	if err := attempt.CheckFiles(file, repo.Root()); err != nil {
		return err
	}
	order, err := attempt.Order(file, opts.Tasks)
	if err != nil {
		return err
	}
	p := dryRunPlan(file, order, opts)
	if g.json() {
		return writeJSON(g.io.Out, p)
	}
	printDryRun(g, p)
	return nil
}

// dryRunJSON is `run --dry-run -o json`.
type dryRunJSON struct {
	TaskFile   string           `json:"task_file"`
	Parallel   int              `json:"parallel"`
	MaxCostUSD *float64         `json:"max_cost_usd"` // --max-cost
	Tasks      []dryRunTaskJSON `json:"tasks"`
}

type dryRunTaskJSON struct {
	ID        string            `json:"id"`
	Needs     []string          `json:"needs"`
	Agents    []dryRunAgentJSON `json:"agents"` // the failover chain, rung by rung
	Isolation string            `json:"isolation"`
	BestOf    int               `json:"best_of"`
	OnFailure string            `json:"on_failure"`
	Retries   int               `json:"retries"`
	Backoff   string            `json:"backoff"`
	// Timeout and heartbeat are what an attempt runs with (the presets' defaults when the
	// task sets none); deadline and spend are null when there is no limit.
	TimeoutMS            int64    `json:"timeout_ms"`
	HeartbeatMS          int64    `json:"heartbeat_ms"`
	DeadlineMS           *int64   `json:"deadline_ms"`
	MaxCostUSD           *float64 `json:"max_cost_usd"`
	MaxConsecutive       int      `json:"max_consecutive_failures"`
	MaxIdenticalFailures int      `json:"max_identical_failures"`
	Verify               []string `json:"verify"`
	NeedsApproval        bool     `json:"needs_approval"`
	SideEffects          string   `json:"side_effects"`
}

type dryRunAgentJSON struct {
	Name    string   `json:"name"`
	Preset  string   `json:"preset"`
	Command []string `json:"command"`
}

func dryRunPlan(file *taskfile.File, order []*taskfile.Task, opts runOptions) dryRunJSON {
	p := dryRunJSON{TaskFile: file.Path, Parallel: file.Parallel, MaxCostUSD: opts.MaxCost, Tasks: []dryRunTaskJSON{}}
	if opts.AdHoc != nil {
		p.TaskFile = ""
	}
	for _, t := range order {
		timeout, heartbeat := agentcli.AgentLimits(t)
		pt := dryRunTaskJSON{
			ID: t.ID, Needs: append([]string{}, t.Needs...), Isolation: t.Isolation, BestOf: t.BestOf,
			OnFailure: t.OnFailure, Retries: t.Retries, Backoff: backoffText(t.Backoff),
			TimeoutMS: timeout.Milliseconds(), HeartbeatMS: heartbeat.Milliseconds(),
			MaxConsecutive: t.MaxConsecutiveFailures, MaxIdenticalFailures: t.MaxIdenticalFailures,
			NeedsApproval: t.NeedsApproval, SideEffects: t.SideEffects,
		}
		if opts.Isolate {
			pt.Isolation = taskfile.IsolationWorktree
		}
		if t.Deadline > 0 {
			ms := t.Deadline.Milliseconds()
			pt.DeadlineMS = &ms
		}
		if t.MaxCostUSD > 0 {
			v := t.MaxCostUSD
			pt.MaxCostUSD = &v
		}
		if t.Verify != nil {
			pt.Verify = t.Verify.Command
		}
		for _, name := range t.Agents {
			a := file.Agents[name]
			pt.Agents = append(pt.Agents, dryRunAgentJSON{Name: name, Preset: a.Preset, Command: a.Command})
		}
		p.Tasks = append(p.Tasks, pt)
	}
	return p
}

func printDryRun(g *globals, p dryRunJSON) {
	w := g.io.Out
	what := p.TaskFile
	if what == "" {
		what = "the ad-hoc run"
	}
	fmt.Fprintf(w, "%s is valid; a run would start %d task%s in this order (nothing was run or recorded):\n",
		what, len(p.Tasks), plural(len(p.Tasks)))
	for i, t := range p.Tasks {
		fmt.Fprintf(w, "\n%d. %s", i+1, t.ID)
		if len(t.Needs) > 0 {
			fmt.Fprintf(w, " (after %s)", strings.Join(t.Needs, ", "))
		}
		fmt.Fprintln(w)
		for j, a := range t.Agents {
			label := ""
			if j == 0 {
				label = "agents"
			}
			fmt.Fprintf(w, "   %-11s %d. %s: %s\n", label, j+1, a.Name, shellLine(a.Command))
		}
		iso := t.Isolation
		if iso == taskfile.IsolationWorktree {
			iso = "worktree (its change is merged into the working tree when it succeeds)"
		}
		if t.BestOf > 1 {
			iso = fmt.Sprintf("worktree, %d lanes racing (the first to pass wins)", t.BestOf)
		}
		fmt.Fprintf(w, "   %-11s %s\n", "isolation", iso)
		policy := t.OnFailure
		if t.OnFailure == taskfile.OnFailureRetry {
			policy = fmt.Sprintf("retry up to %d time%s, backoff %s", t.Retries, plural(t.Retries), t.Backoff)
		}
		fmt.Fprintf(w, "   %-11s %s\n", "on failure", policy)
		limits := []string{
			"timeout " + taskfile.FormatDuration(time.Duration(t.TimeoutMS)*time.Millisecond),
			"heartbeat " + taskfile.FormatDuration(time.Duration(t.HeartbeatMS)*time.Millisecond),
		}
		if t.DeadlineMS != nil {
			limits = append(limits, "deadline "+taskfile.FormatDuration(time.Duration(*t.DeadlineMS)*time.Millisecond))
		}
		if t.MaxCostUSD != nil {
			limits = append(limits, fmt.Sprintf("spend $%.2f", *t.MaxCostUSD))
		}
		limits = append(limits, fmt.Sprintf("held after %d failures in a row or %d identical ones", t.MaxConsecutive, t.MaxIdenticalFailures))
		fmt.Fprintf(w, "   %-11s %s\n", "limits", strings.Join(limits, ", "))
		if t.Verify != nil {
			fmt.Fprintf(w, "   %-11s %s\n", "verify", shellLine(t.Verify))
		}
		if t.NeedsApproval {
			fmt.Fprintf(w, "   %-11s %s\n", "approval", "a success waits for mulligan approve")
		}
		if t.SideEffects == taskfile.SideEffectsNonIdempotent {
			fmt.Fprintf(w, "   %-11s %s\n", "effects", "non-idempotent: every attempt may have acted on the world")
		}
	}
	if p.MaxCostUSD != nil {
		fmt.Fprintf(w, "\nthe run stops once its reported spend reaches $%.2f\n", *p.MaxCostUSD)
	}
}

func backoffText(b taskfile.Backoff) string {
	s := fmt.Sprintf("%s from %s", b.Kind, taskfile.FormatDuration(b.Initial))
	if b.Kind != taskfile.BackoffFixed {
		s += " up to " + taskfile.FormatDuration(b.Max)
	}
	if b.Jitter != taskfile.JitterNone {
		s += ", jitter " + b.Jitter
	}
	return s
}
