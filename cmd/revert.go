package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/attempt/plan"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

func init() {
	errorMappers = append(errorMappers, mapOperatorError)
}

func mapOperatorError(err error) error {
	switch {
	case errors.Is(err, attempt.ErrNotBlocked):
		return withHint(ExitFailed, err, "prompt and stop decide a blocked task; `mulligan retry-task RUN TASK` runs any task again")
	case errors.Is(err, attempt.ErrAttemptRunning):
		return withHint(ExitFailed, err, "timetravel goes back to a finished attempt; `mulligan show` lists them")
	}
	return nil
}

// refuseActive turns ErrActive into exit 6 with the hint to wait or pass --force.
func refuseActive(err error, runID string) error {
	if errors.Is(err, attempt.ErrActive) {
		return &Error{Code: ExitRefused, Msg: err.Error(), Err: err, Hints: []string{
			fmt.Sprintf("wait for it to stop (`mulligan show %s`), or pass --force to do it anyway", runID)}}
	}
	return err
}

// inRunWorktree refuses to change a run's state from another worktree than the run's own: the
// rest of the run would execute here, on a tree it never saw.
func inRunWorktree(st *state, run *store.Run, command string) error {
	if run.Worktree == "" || run.Worktree == st.repo.Root() {
		return nil
	}
	return usageError(fmt.Sprintf("run it there: mulligan -C %s %s", run.Worktree, command),
		"run %s belongs to the worktree %s, not this one (%s)", run.ID, run.Worktree, st.repo.Root())
}

// notPruned refuses to read the trees of a run gc pruned: its refs are gone, and git may have
// collected the objects they held.
func notPruned(run *store.Run) error {
	if !run.Pruned {
		return nil
	}
	return &Error{Code: ExitFailed, Msg: fmt.Sprintf("run %s was pruned by `mulligan gc`: its refs and logs are gone", run.ID),
		Hints: []string{"its rows stay for `mulligan show`; gc --older-than sets how long runs are kept"}}
}

// undoPoint is the name and message of a new undo ref for `mulligan WHAT`.
func undoPoint(what string) (ref, message string) {
	id := snapshot.NewID(time.Now())
	return snapshot.UndoRef(id),
		fmt.Sprintf("mulligan undo %s\n\nThe working tree just before `mulligan %s`.\n", id, what)
}

type revertOptions struct {
	Target string
	Pre    bool
	Base   bool
	DryRun bool
	Force  bool
	// NoCompensate leaves the side effects revert crosses unresolved instead of undoing them.
	NoCompensate bool
}

func revertCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "revert",
		Usage:     "set the working tree to the tree an attempt left (--pre: started from; RUN --base: the run's start)",
		ArgsUsage: "ADDR | RUN --base",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "pre", Usage: "the tree the attempt started from, not the one it left"},
			&cli.BoolFlag{Name: "base", Usage: "the argument is a RUN: its base tree (the working tree when it started)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would change, change nothing"},
			&cli.BoolFlag{Name: "force", Usage: "even while the run is active in this worktree, or across side effects with no compensation"},
			&cli.BoolFlag{Name: "no-compensate", Usage: "do not run the compensations of the side effects it crosses: leave them unresolved"},
		},
		Action: func(c *cli.Context) error {
			opts := revertOptions{Target: c.Args().First(), Pre: c.Bool("pre"), Base: c.Bool("base"),
				DryRun: c.Bool("dry-run"), Force: c.Bool("force"), NoCompensate: c.Bool("no-compensate")}
			switch {
			case c.NArg() > 1:
				return usageError("e.g. mulligan revert k3f9/fix-tests@2", "revert takes one address")
			case c.NArg() == 0 && !opts.Base:
				return usageError("e.g. mulligan revert fix-tests@2, or mulligan revert RUN --base", "revert needs an address")
			case opts.Base && opts.Pre:
				return usageError("--base takes a run, --pre an attempt's address", "--base and --pre cannot go together")
			}
			return runRevert(c.Context, g, opts)
		},
	}
}

func runRevert(ctx context.Context, g *globals, opts revertOptions) error {
	st, err := openState(g)
	if err != nil {
		return err
	}
	if opts.DryRun {
		st.noHooks = true // a dry run acts on nothing, hooks included
	}
	defer st.Close()
	po := plan.RevertOptions{Base: opts.Base, Pre: opts.Pre, Force: opts.Force, NoCompensate: opts.NoCompensate}
	if opts.Base {
		if po.Run, err = st.resolveRun(ctx, opts.Target); err != nil {
			return err
		}
	} else {
		run, a, err := st.resolveAddress(ctx, opts.Target)
		if err != nil {
			return err
		}
		po.Run, po.Task, po.N = run.ID, a.TaskID, a.N
	}
	p, err := plan.PlanRevert(ctx, st.planEnv(), po)
	if err != nil {
		return refuseActive(err, po.Run)
	}
	if opts.DryRun {
		return printPlan(g, p)
	}
	res, err := p.Execute(ctx)
	compensated, failed := compensationList(g.io.ErrOut, res.Compensations)
	if err != nil {
		return err
	}
	printSubmoduleTrees(g.io.ErrOut, p.SubmoduleRef, res.Submodules)
	if err := printRestore(g, p.Tree, res.Restore, false, compensated, res.Git); err != nil {
		return err
	}
	if failed {
		return exitError{ExitFailed}
	}
	return nil
}

// printGitRevert says what going back to an attempt's pre did (or would do) to HEAD, refs, the
// stash and the index, and what it left as it is.
func printGitRevert(w io.Writer, git *attempt.GitRevert, dryRun bool) {
	if git.Attempt == "" {
		fmt.Fprintln(w, "! git: no HEAD, refs or index were recorded for it: left as they are")
		return
	}
	if len(git.Restored) > 0 {
		verb := "put back"
		if dryRun {
			verb = "would put back"
		}
		fmt.Fprintf(w, "git: %s what %s started from: %s\n", verb, git.Attempt, git.DescribeRestored())
	}
	for _, l := range git.Left {
		fmt.Fprintf(w, "! git: left %s: %s\n", describeLeft(l.Change, git.Attempt), l.Reason)
	}
	if len(git.Restored) > 0 && !dryRun {
		fmt.Fprintln(w, "hint: `mulligan undo` brings back the tree only; the refs' previous values are in their reflogs (git reflog REF)")
	}
}

// describeLeft names a thing a revert left as it is (c.From: what the attempt started from, c.To:
// its value now), with the git command that would put it back by hand where there is one.
func describeLeft(c snapshot.GitChange, attempt string) string {
	switch {
	case c.Index:
		return "the index as it is (it differs from the one " + attempt + " started from)"
	case c.Op != "":
		return "the git operations in progress as they are (" + c.Op + " since " + attempt + " started)"
	case c.Stash != "":
		return "the stash list as it is (it differs from the one " + attempt + " started from)"
	case c.Ref == "HEAD":
		return fmt.Sprintf("HEAD at %s (%s started from %s)", shortID(c.To), attempt, shortID(c.From))
	case c.From == "":
		return fmt.Sprintf("%s at %s (it did not exist when %s started)", c.Ref, shortID(c.To), attempt)
	case c.To == "":
		return fmt.Sprintf("%s deleted (it was at %s when %s started; `git update-ref %s %s` brings it back)", c.Ref, shortID(c.From), attempt, c.Ref, c.From)
	}
	return fmt.Sprintf("%s at %s (%s started from %s; `git update-ref %s %s` puts it back)", c.Ref, shortID(c.To), attempt, shortID(c.From), c.Ref, c.From)
}

// shortID abbreviates an object id as git does; a ref name stays whole.
func shortID(v string) string {
	if len(v) == 40 {
		return v[:7]
	}
	return v
}

// printSubmoduleTrees says which submodules' working trees a decision set back as ref kept them
// (in their own repositories), and where what they held is kept.
func printSubmoduleTrees(w io.Writer, ref string, subs []snapshot.SubmoduleResult) {
	for _, sm := range subs {
		if sm.Skipped != "" {
			fmt.Fprintf(w, "! submodule %s: its working tree was not set back as %s kept it: %s\n", sm.Path, ref, sm.Skipped)
			continue
		}
		fmt.Fprintf(w, "submodule %s: working tree set back as %s kept it (%d path%s changed); what it held is in its %s (git -C %s show %s)\n",
			sm.Path, ref, len(sm.Changes), plural(len(sm.Changes)), sm.UndoRef, sm.Path, sm.UndoRef)
	}
}
