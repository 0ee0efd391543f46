package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/attempt/plan"
)

func promptCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "prompt",
		Usage:     "decide a blocked task: run a new attempt with your corrective text in its prompt, and continue the run",
		ArgsUsage: "ADDR TEXT",
		Flags:     []cli.Flag{&cli.BoolFlag{Name: "detach", Usage: detachUsage}, noAutopsyFlag},
		Action: func(c *cli.Context) error {
			g.noAutopsy = c.Bool("no-autopsy")
			if c.NArg() < 2 {
				return usageError(`e.g. mulligan prompt fix-tests "the flaky test needs TZ=UTC"`, "prompt takes an address and the text")
			}
			text := strings.Join(c.Args().Slice()[1:], " ")
			if strings.TrimSpace(text) == "" {
				return usageError("", "the text is empty")
			}
			return runPrompt(c.Context, g, c.Args().First(), text, c.Bool("detach"))
		},
	}
}

func stopCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "stop",
		Usage:     "decide a blocked task: give up on it (failed, operator-stop) and let the rest of the run finish",
		ArgsUsage: "ADDR",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "detach", Usage: detachUsage},
			&cli.BoolFlag{Name: "dry-run", Usage: "print what it would change (the tree, the task), change nothing"}, noAutopsyFlag},
		Action: func(c *cli.Context) error {
			g.noAutopsy = c.Bool("no-autopsy")
			if c.NArg() != 1 {
				return usageError("e.g. mulligan stop fix-tests", "stop takes one address")
			}
			return runStop(c.Context, g, c.Args().First(), c.Bool("detach"), c.Bool("dry-run"))
		},
	}
}

// decision is one operator decision on a task (approve, reject, prompt, stop, retry-task,
// timetravel), as runDecision takes it: every one opens the history, resolves its address to one
// task of one run (in this worktree), decides, and continues the run like run does.
type decision struct {
	command string // the command's name, for messages
	addr    string // the address as typed
	// attempt: the address must name one attempt (timetravel), not only a task.
	attempt bool
	dryRun  bool // print the plan only: hooks off, the run does not continue
	detach  bool
	force   bool
	// refuse maps the decision's errors (ErrActive: refuseActive or refuseLive).
	refuse func(err error, runID string) error
}

// errStay is what a decision returns when it is done and the run does not continue (timetravel
// without --resume).
var errStay = errors.New("decided; the run does not continue")

// runDecision is the skeleton the decision commands share. decide takes the decision on the task
// the address names; with dryRun it prints the plan instead.
func runDecision(ctx context.Context, g *globals, d decision, decide func(st *state, t *attempt.Target) error) error {
	st, err := openState(g)
	if err != nil {
		return err
	}
	st.noHooks = d.dryRun // a dry run acts on nothing, hooks included
	defer st.Close()
	want := attempt.WantTask
	if d.attempt {
		want = attempt.WantAttempt
	}
	t, err := st.resolve(ctx, d.addr, want)
	if err != nil {
		return err
	}
	if err := inRunWorktree(st, t.Run, d.command+" "+d.addr); err != nil {
		return err
	}
	switch err := decide(st, t); {
	case errors.Is(err, errStay):
		return nil
	case err != nil:
		return d.refuse(err, t.Run.ID)
	}
	if d.dryRun {
		return nil
	}
	return continueRun(ctx, g, st, t.Run.ID, continueOptions{Detach: d.detach, Force: d.force})
}

// executeDecision executes a decision's plan (stop, approve). When its tree step fails nothing
// was recorded: the error keeps the tree error's exit code and says so with undecided as hint.
// Other errors are the caller's to map.
func executeDecision(ctx context.Context, p *plan.Plan, undecided string) (*plan.Result, error) {
	res, err := p.Execute(ctx)
	var step *plan.StepError
	if errors.As(err, &step) && step.Step == plan.StepTree {
		return nil, &Error{Code: exitCode(mapError(step.Err)), Msg: err.Error(), Err: err, Hints: []string{undecided}}
	}
	return res, err
}

func runPrompt(ctx context.Context, g *globals, addr, text string, detach bool) error {
	d := decision{command: "prompt", addr: addr, detach: detach, refuse: refuseActive}
	return runDecision(ctx, g, d, func(st *state, t *attempt.Target) error {
		if err := attempt.PromptTask(ctx, st.db, t.Run.ID, t.Task.ID, text); err != nil {
			return err
		}
		fmt.Fprintf(g.io.ErrOut, "prompt: task %s gets a new attempt with your text\n", t.Task.ID)
		return nil
	})
}

func runStop(ctx context.Context, g *globals, addr string, detach, dryRun bool) error {
	d := decision{command: "stop", addr: addr, detach: detach, dryRun: dryRun, refuse: refuseActive}
	return runDecision(ctx, g, d, func(st *state, t *attempt.Target) error {
		id, task := t.Run.ID, t.Task.ID
		p, err := plan.PlanStop(ctx, st.planEnv(), plan.StopOptions{Run: id, Task: task})
		if err != nil {
			return err
		}
		if dryRun {
			return printPlan(g, p)
		}
		res, err := executeDecision(ctx, p, fmt.Sprintf("nothing was decided: task %s is still blocked and the tree could not be put back to its base; fix the path, then `mulligan stop %s` again", task, addr))
		if err != nil {
			return err
		}
		fmt.Fprintf(g.io.ErrOut, "stop: task %s failed (operator-stop); its dependents will be skipped\n", task)
		if res.Restore != nil {
			// A failed task leaves no edits behind; its attempts' trees stay in their refs.
			fmt.Fprintf(g.io.ErrOut, "stop: the tree is back at task %s's base (%d path%s changed); undo point %s\n",
				task, len(res.Restore.Changes), plural(len(res.Restore.Changes)), res.UndoRef)
		}
		return nil
	})
}
