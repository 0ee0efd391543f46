package cmd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

type runOptions struct {
	File  string
	Tasks []string
	AdHoc *taskfile.AdHocOptions
	// Detach: start the run in the background (detach.go).
	Detach bool
	// MaxCost is --max-cost: the run's spend limit in USD.
	MaxCost *float64
	// Isolate is --isolate: every task runs in a worktree of its own (SPEC §4.1).
	Isolate bool
	// ID is the run's id when a --detach picked it (attempt.Handoff); "": a fresh one.
	ID string
	// DryRun is --dry-run: validate the task file and print the plan (dryrun.go).
	DryRun bool
}

func runCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run the tasks of mulligan.yaml (with their dependencies), or one command ad hoc after --",
		ArgsUsage: "[TASK…] | [flags] -- CMD [ARG…]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "the task `FILE` (default: mulligan.yaml in the working tree root)"},
			&cli.StringFlag{Name: "prompt", Usage: "ad hoc: the prompt (in $MULLIGAN_PROMPT_FILE and {{prompt}})"},
			&cli.StringFlag{Name: "prompt-file", Usage: "ad hoc: read the prompt from `FILE`"},
			&cli.StringFlag{Name: "retries", Usage: "ad hoc: retries after the first attempt (with --on-failure retry)"},
			&cli.StringFlag{Name: "on-failure", Usage: "ad hoc: fail, ask or retry"},
			&cli.StringFlag{Name: "backoff", Usage: "ad hoc: KIND[:INITIAL[:MAX[:JITTER]]], e.g. exponential:1s:5m"},
			&cli.StringFlag{Name: "timeout", Usage: "ad hoc: limit of one attempt, e.g. 20m"},
			&cli.StringFlag{Name: "heartbeat", Usage: "ad hoc: longest silence before the attempt fails, e.g. 5m"},
			&cli.StringFlag{Name: "deadline", Usage: "ad hoc: limit of all attempts and backoff together, e.g. 2h"},
			&cli.StringFlag{Name: "fallback", Usage: "ad hoc: a second agent `CMD` for the failover chain"},
			&cli.BoolFlag{Name: "detach", Usage: "run in the background: print the run id and return"},
			&cli.StringFlag{Name: "verify", Usage: "ad hoc: a quality gate `CMD` run after the agent exits 0 (split like a shell, never run by one)"},
			&cli.StringFlag{Name: "preset", Usage: "ad hoc: the agent CLI's `PRESET` (claude, codex, gemini, aider, opencode, generic)"},
			&cli.StringFlag{Name: "max-cost", Usage: "stop before the next attempt once the run's reported spend reaches `USD`"},
			&cli.BoolFlag{Name: "dry-run", Usage: "validate the task file and print the plan (tasks in order, agents, isolation, limits); run and record nothing"},
			&cli.BoolFlag{Name: "isolate", Usage: "run every task in a worktree of its own (under $XDG_DATA_HOME/mulligan/worktrees, or $MULLIGAN_WORKTREES); a success is applied to the working tree by a three-way merge, so you can keep editing"},
			noAutopsyFlag,
		},
		Action: func(c *cli.Context) error {
			opts := runOptions{File: c.String("file"), Tasks: c.Args().Slice(), Detach: c.Bool("detach"), Isolate: c.Bool("isolate"), DryRun: c.Bool("dry-run")}
			if c.IsSet("max-cost") {
				v, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(c.String("max-cost")), "$"), 64)
				if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
					return usageError("--max-cost takes an amount in USD, e.g. --max-cost 5.00", "--max-cost: %q is not a positive amount", c.String("max-cost"))
				}
				opts.MaxCost = &v
			}
			g.noAutopsy = c.Bool("no-autopsy")
			adhocFlags := []string{"prompt", "prompt-file", "retries", "on-failure", "backoff", "timeout", "heartbeat", "deadline", "fallback", "verify", "preset"}
			if g.rest == nil && c.IsSet("preset") && len(opts.Tasks) == 0 && opts.File == "" {
				// A preset implies its documented headless command (`mulligan presets`).
				p, ok := agentcli.LookupPreset(c.String("preset"))
				if !ok {
					return usageError("see `mulligan presets`", "unknown preset %q", c.String("preset"))
				}
				if len(p.Command) == 0 {
					return usageError("e.g. mulligan run --preset generic --prompt 'fix it' -- ./my-agent.sh", "preset %s has no command of its own: give one after --", p.Name)
				}
				if !c.IsSet("prompt") && !c.IsSet("prompt-file") {
					return usageError("e.g. mulligan run --preset "+p.Name+" --prompt 'Make the tests pass'", "--preset %s without a command needs --prompt or --prompt-file", p.Name)
				}
				g.rest = append([]string{}, p.Command...)
			}
			if g.rest != nil {
				if len(opts.Tasks) > 0 || opts.File != "" {
					return usageError("run either tasks of a file or one command after --, not both", "run takes TASK names or -- CMD, not both")
				}
				if len(g.rest) == 0 {
					return usageError("e.g. mulligan run --retries 2 --on-failure retry -- go test ./...", "no command after --")
				}
				a := &taskfile.AdHocOptions{
					Command: g.rest, Prompt: c.String("prompt"), PromptFile: c.String("prompt-file"),
					OnFailure: c.String("on-failure"), Backoff: c.String("backoff"), Timeout: c.String("timeout"),
					Heartbeat: c.String("heartbeat"), Deadline: c.String("deadline"), Fallback: c.String("fallback"),
					Verify: c.String("verify"), Preset: c.String("preset"),
				}
				if c.IsSet("retries") {
					n, err := parseCount(c.String("retries"))
					if err != nil {
						return usageError("--retries takes a whole number, e.g. --retries 3", "--retries: %v", err)
					}
					a.Retries = &n
				}
				opts.AdHoc = a
			} else {
				for _, f := range adhocFlags {
					if c.IsSet(f) {
						return usageError("these flags describe an ad-hoc run: mulligan run --"+f+" … -- CMD", "--%s needs a command after --", f)
					}
				}
			}
			if opts.DryRun {
				return runDryRun(g, opts)
			}
			return runRun(c.Context, g, opts)
		},
	}
}

// noAutopsyFlag is --no-autopsy, on every command that runs (or continues) a run in the foreground.
var noAutopsyFlag = &cli.BoolFlag{Name: "no-autopsy", Usage: "write no autopsy when the run fails or blocks (also MULLIGAN_AUTOPSY=0)"}

func parseCount(s string) (int, error) {
	var n int
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || fmt.Sprint(n) != strings.TrimSpace(s) || n < 0 {
		return 0, fmt.Errorf("%q is not a whole number ≥ 0", s)
	}
	return n, nil
}

func runRun(ctx context.Context, g *globals, opts runOptions) error {
	st, err := openState(g)
	if err != nil {
		return err
	}
	defer st.Close()

	file, err := loadRunFile(st.repo.Root(), opts)
	if err != nil {
		return err
	}
	if err := attempt.CheckFiles(file, st.repo.Root()); err != nil {
		return err
	}
	if opts.Detach {
		return detachRun(ctx, g, st, opts)
	}
	return foreground(ctx, g, st, func(ctx context.Context, env attempt.Env) (*attempt.Outcome, error) {
		return attempt.Start(ctx, env, attempt.StartOptions{File: file, Tasks: opts.Tasks, MaxCostUSD: opts.MaxCost, ID: opts.ID, Isolate: opts.Isolate})
	})
}

// loadRunFile reads the run's task file (or builds the ad-hoc run's) and validates it.
func loadRunFile(root string, opts runOptions) (*taskfile.File, error) {
	if opts.AdHoc != nil {
		return taskfile.AdHoc(*opts.AdHoc)
	}
	path := opts.File
	if path == "" {
		path = filepath.Join(root, "mulligan.yaml")
		if _, err := os.Stat(path); err != nil {
			return nil, usageError("write a mulligan.yaml (mulligan init), pass -f FILE, or run one command ad hoc: mulligan run -- CMD…",
				"no task file: %s does not exist", displayPath(path))
		}
		path = displayPath(path)
	}
	return taskfile.Load(path)
}

// displayPath shortens path relative to the current directory when that is clearer.
func displayPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// foreground runs (or resumes) a run in this process, with progress on stderr, SIGINT, SIGTERM
// and SIGHUP turned into a clean stop (the run paused, resumable), and the exit code of the run's
// end state. The signals cancel ctx with their cause (interruptible, for every command).
func foreground(ctx context.Context, g *globals, st *state, do func(context.Context, attempt.Env) (*attempt.Outcome, error)) error {
	env := attempt.Env{Repo: st.repo, DB: st.db, Progress: newProgress(g.io, g.json())}
	out, err := do(ctx, env)
	var rec *attempt.RecordedError
	if errors.As(err, &rec) {
		// The run was recorded failed: its autopsy is written like any failed run's.
		if run, gerr := st.getRun(context.WithoutCancel(ctx), rec.Run); gerr == nil && autopsyEnabled(g.noAutopsy) && !g.json() {
			writeAutopsy(ctx, g, st, run)
		}
		return withHint(ExitFailed, err, rec.Hint())
	}
	if err != nil {
		return err
	}
	run, err := st.getRun(context.WithoutCancel(ctx), out.RunID)
	if err != nil {
		return err
	}
	if g.json() {
		if err := writeJSON(g.io.Out, run); err != nil {
			return err
		}
	} else {
		printRunEnd(g, run)
	}
	if autopsyEnabled(g.noAutopsy) {
		writeAutopsy(ctx, g, st, run)
	}
	return exitError{code: runExitCode(out)}
}

func runExitCode(out *attempt.Outcome) int {
	switch out.Signal {
	case syscall.SIGINT:
		return ExitInterrupted
	case syscall.SIGTERM, syscall.SIGHUP:
		return ExitCancelled
	}
	switch out.State {
	case store.RunSucceeded:
		return ExitOK
	case store.RunBlocked:
		return ExitBlocked
	case store.RunWaitingQuota, store.RunPaused, store.RunWaitingApproval:
		// Parked: resumable without a decision. A pause from another shell is not a success:
		// `mulligan run && deploy` must not deploy half-done work.
		return ExitParked
	case store.RunCancelled:
		return ExitCancelled
	}
	return ExitFailed
}

func printRunEnd(g *globals, run *store.Run) {
	attempts := 0
	for _, t := range run.Tasks {
		attempts += len(t.Attempts)
	}
	fmt.Fprintf(g.io.Out, "run %s %s: %d task%s, %d attempt%s\n", run.ID, stateColor(run.State),
		len(run.Tasks), plural(len(run.Tasks)), attempts, plural(attempts))
	switch run.State {
	case store.RunBlocked, store.RunWaitingApproval:
		for _, t := range run.Tasks {
			ref := ""
			if n := len(t.Attempts); n > 0 {
				ref = t.Attempts[n-1].Ref
			}
			switch t.State {
			case store.TaskBlocked:
				fmt.Fprintf(g.io.Out, "task %s is blocked (%s); its last attempt's tree: %s\n", t.ID, t.Reason, ref)
			case store.TaskWaitingApproval:
				if a := attempt.WaitingAttempt(&t); a != nil {
					ref = a.Ref
				}
				fmt.Fprintf(g.io.Out, "task %s waits for approval; its attempt's tree: %s\n", t.ID, ref)
				fmt.Fprintf(g.io.Out, "hint: mulligan approve %s/%s, or mulligan reject %s/%s TEXT\n", run.ID, t.ID, run.ID, t.ID)
			}
		}
		fmt.Fprintf(g.io.Out, "hint: mulligan show %s\n", run.ID)
	case store.RunPaused:
		if run.Reason == attempt.ReasonInterrupted {
			fmt.Fprintf(g.io.Out, "interrupted: the work in flight was stopped and does not count; each attempt's tree is kept in its ref\n")
			fmt.Fprintf(g.io.Out, "hint: mulligan resume %s resets its edits and goes on; mulligan cancel %s ends the run for good\n", run.ID, run.ID)
			break
		}
		fmt.Fprintf(g.io.Out, "hint: mulligan resume %s continues it\n", run.ID)
	case store.RunFailed, store.RunCancelled:
		fmt.Fprintf(g.io.Out, "hint: mulligan show %s; every attempt's tree is kept: mulligan restore %s\n", run.ID, snapshot.AttemptRefPattern(run.ID, snapshot.Post))
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
