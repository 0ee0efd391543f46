package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/attempt/plan"
	"github.com/mulligan-dev/mulligan/store"
)

func init() {
	errorMappers = append(errorMappers, mapApprovalError)
}

func mapApprovalError(err error) error {
	if errors.Is(err, attempt.ErrNotWaitingApproval) {
		return withHint(ExitFailed, err, "approve and reject decide a task waiting for approval; `mulligan tasks --state waiting_approval` lists them")
	}
	return nil
}

func approveCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "approve",
		Usage:     "accept the attempt of a task waiting for approval: its change is carried into the tree and the run continues",
		ArgsUsage: "ADDR",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "payload", Usage: "a `JSON` value recorded with the approval (checked against the task's approval_schema)"},
			&cli.BoolFlag{Name: "detach", Usage: detachUsage},
			&cli.BoolFlag{Name: "dry-run", Usage: "print what it would change (the attempt's change carried into the tree, the task), change nothing"},
			noAutopsyFlag,
		},
		Action: func(c *cli.Context) error {
			g.noAutopsy = c.Bool("no-autopsy")
			if c.NArg() != 1 {
				return usageError(`e.g. mulligan approve k3f9/deploy --payload '{"ok": true}'`, "approve takes one address")
			}
			var payload json.RawMessage
			if c.IsSet("payload") {
				payload = json.RawMessage(c.String("payload"))
				if !json.Valid(payload) {
					return usageError(`quote it for the shell: --payload '{"ok": true}'`, "--payload is not JSON: %s", c.String("payload"))
				}
			}
			return runApprove(c.Context, g, c.Args().First(), payload, c.Bool("detach"), c.Bool("dry-run"))
		},
	}
}

func rejectCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "reject",
		Usage:     "send a task waiting for approval back for another attempt, with TEXT as operator text in its prompt",
		ArgsUsage: "ADDR [TEXT]",
		Flags:     []cli.Flag{&cli.BoolFlag{Name: "detach", Usage: detachUsage}, noAutopsyFlag},
		Action: func(c *cli.Context) error {
			g.noAutopsy = c.Bool("no-autopsy")
			if c.NArg() < 1 {
				return usageError(`e.g. mulligan reject deploy "use the staging database"`, "reject takes an address and, optionally, the text")
			}
			text := strings.TrimSpace(strings.Join(c.Args().Slice()[1:], " "))
			return runReject(c.Context, g, c.Args().First(), text, c.Bool("detach"))
		},
	}
}

func runApprove(ctx context.Context, g *globals, addr string, payload json.RawMessage, detach, dryRun bool) error {
	d := decision{command: "approve", addr: addr, detach: detach, dryRun: dryRun, refuse: refuseLive}
	return runDecision(ctx, g, d, func(st *state, t *attempt.Target) error {
		id, task := t.Run.ID, t.Task.ID
		if t.Task.State != store.TaskWaitingApproval {
			return fmt.Errorf("task %s of run %s is %s: %w", task, id, t.Task.State, attempt.ErrNotWaitingApproval)
		}
		if err := waitingNamed(t, "approve"); err != nil {
			return err
		}
		file, err := loadStoredFile(t.Run)
		if err != nil {
			return err
		}
		if def := file.Task(task); def != nil && def.ApprovalSchema != "" {
			if payload == nil {
				return usageError(fmt.Sprintf("pass the approval: mulligan approve %s/%s --payload JSON", id, task),
					"task %s declares approval_schema %s: the approval needs a --payload", task, def.ApprovalSchema)
			}
			sch, err := attempt.CompileApprovalSchema(st.repo, id, def.ApprovalSchema)
			if err != nil {
				return err
			}
			if msg := sch.Check(payload); msg != "" {
				return usageError("fix the payload and approve again", "--payload does not satisfy %s: %s", def.ApprovalSchema, msg)
			}
		}
		p, err := plan.PlanApprove(ctx, st.planEnv(), plan.ApproveOptions{Run: id, Task: task, Payload: payload})
		if err != nil {
			return err
		}
		addr := fmt.Sprintf("%s/%s@%d", id, task, p.Approved.N)
		if dryRun {
			if p.Apply.Refused() {
				fmt.Fprintf(g.io.ErrOut, "approve: %s's change conflicts with your working tree: %s; approve would hold task %s apply-conflict\n",
					addr, &attempt.ApplyConflictError{Plan: p.Apply}, task)
			}
			return printPlan(g, p)
		}
		res, err := executeDecision(ctx, p, fmt.Sprintf("nothing was decided: task %s still waits for approval and its change could not be carried into the tree; fix the path, then `mulligan approve %s` again", task, addr))
		if err != nil {
			return err
		}
		n := p.Approved.N
		if res.Applied != nil && res.Applied.Plan.Refused() {
			// Recorded, and held like any apply that conflicts: the run goes on without it.
			fmt.Fprintf(g.io.ErrOut, "approve: %s@%d accepted, but its change conflicts with your working tree: %s\n",
				task, n, &attempt.ApplyConflictError{Plan: res.Applied.Plan})
			fmt.Fprintf(g.io.ErrOut, "approve: task %s is held blocked (apply-conflict); its tree is in %s\n", task, p.Approved.Ref)
			for _, h := range applyHints(addr, res.Applied.Plan) {
				fmt.Fprintf(g.io.ErrOut, "hint: %s\n", h)
			}
			return nil
		}
		fmt.Fprintf(g.io.ErrOut, "approve: %s@%d accepted; task %s succeeded\n", task, n, task)
		if res.Restore != nil {
			// Independent tasks went on (or the tree was reset) after it: its change was carried in.
			fmt.Fprintf(g.io.ErrOut, "approve: %s@%d's change is in the tree (%d path%s changed); undo point %s\n",
				task, n, len(res.Restore.Changes), plural(len(res.Restore.Changes)), res.UndoRef)
		}
		return nil
	})
}

func runReject(ctx context.Context, g *globals, addr, text string, detach bool) error {
	d := decision{command: "reject", addr: addr, detach: detach, refuse: refuseLive}
	return runDecision(ctx, g, d, func(st *state, t *attempt.Target) error {
		if err := waitingNamed(t, "reject"); err != nil {
			return err
		}
		if err := attempt.Reject(ctx, st.db, t.Run.ID, t.Task.ID, text); err != nil {
			return err
		}
		if text != "" {
			fmt.Fprintf(g.io.ErrOut, "reject: task %s gets a new attempt with your text\n", t.Task.ID)
		} else {
			fmt.Fprintf(g.io.ErrOut, "reject: task %s gets a new attempt\n", t.Task.ID)
		}
		return nil
	})
}

// waitingNamed refuses an address whose @N is not the attempt waiting for approval: approve and
// reject decide on that one attempt, and an address names exactly one.
func waitingNamed(t *attempt.Target, command string) error {
	if t.N == 0 || t.Task.State != store.TaskWaitingApproval {
		return nil
	}
	if w := attempt.WaitingAttempt(t.Task); w != nil && w.N != t.N {
		return usageError(fmt.Sprintf("mulligan %s %s/%s@%d", command, t.Run.ID, t.Task.ID, w.N),
			"%s@%d is not the attempt waiting for approval: %s@%d is", t.Task.ID, t.N, t.Task.ID, w.N)
	}
	return nil
}

// refuseLive turns ErrActive into exit 6: a run that goes on with its independent tasks takes
// decisions once it stops (the working tree is its own until then).
func refuseLive(err error, runID string) error {
	if errors.Is(err, attempt.ErrActive) {
		return &Error{Code: ExitRefused, Msg: err.Error(), Err: err, Hints: []string{
			fmt.Sprintf("its process still runs the tasks that do not wait for this one: decide when it stops (`mulligan events %s -f`), or pause it first: mulligan pause %s", runID, runID)}}
	}
	return err
}
