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

// decisionTarget resolves ADDR to its run and task (the attempt number does not matter).
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

func decisionTarget(ctx context.Context, st *state, command, text string) (runID, task string, err error) {
	addr, err := attempt.ParseAddress(text)
	if err != nil {
		return "", "", usageError("an address is [RUN/]TASK[@N], e.g. fix-tests or k3f9/fix-tests", "%s", err)
	}
	id, err := st.resolveRun(ctx, addr.Run)
	if err != nil {
		return "", "", err
	}
	run, err := st.getRun(ctx, id)
	if err != nil {
		return "", "", err
	}
	if err := inRunWorktree(st, run, command+" "+text); err != nil {
		return "", "", err
	}
	for _, t := range run.Tasks {
		if t.ID == addr.Task {
			return id, t.ID, nil
		}
	}
	return "", "", unknownTask(run, addr.Task)
}

func runPrompt(ctx context.Context, g *globals, addr, text string, detach bool) error {
	st, err := openState(g)
	if err != nil {
		return err
	}
	defer st.Close()
	id, task, err := decisionTarget(ctx, st, "prompt", addr)
	if err != nil {
		return err
	}
	if err := attempt.PromptTask(ctx, st.db, id, task, text); err != nil {
		return refuseActive(err, id)
	}
	fmt.Fprintf(g.io.ErrOut, "prompt: task %s gets a new attempt with your text\n", task)
	return continueRun(ctx, g, st, id, continueOptions{Detach: detach})
}

func runStop(ctx context.Context, g *globals, addr string, detach, dryRun bool) error {
	st, err := openState(g)
	if err != nil {
		return err
	}
	if dryRun {
		st.noHooks = true // a dry run acts on nothing, hooks included
	}
	defer st.Close()
	id, task, err := decisionTarget(ctx, st, "stop", addr)
	if err != nil {
		return err
	}
	p, err := plan.PlanStop(ctx, st.planEnv(), plan.StopOptions{Run: id, Task: task})
	if err != nil {
		return refuseActive(err, id)
	}
	if dryRun {
		return printPlan(g, p)
	}
	res, err := executeDecision(ctx, p, fmt.Sprintf("nothing was decided: task %s is still blocked and the tree could not be put back to its base; fix the path, then `mulligan stop %s` again", task, addr))
	if err != nil {
		return refuseActive(err, id)
	}
	fmt.Fprintf(g.io.ErrOut, "stop: task %s failed (operator-stop); its dependents will be skipped\n", task)
	if res.Restore != nil {
		// A failed task leaves no edits behind; its attempts' trees stay in their refs.
		fmt.Fprintf(g.io.ErrOut, "stop: the tree is back at task %s's base (%d path%s changed); undo point %s\n",
			task, len(res.Restore.Changes), plural(len(res.Restore.Changes)), res.UndoRef)
	}
	return continueRun(ctx, g, st, id, continueOptions{Detach: detach})
}
