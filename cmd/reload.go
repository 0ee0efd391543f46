package cmd

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// `--reload [-f FILE]` of resume and retry-task: take the edited task file instead of the
// definition the run stored (SPEC §4 item 7). The rules of a reload are attempt/reload.go's.

func reloadFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "reload", Usage: "read the run's task file again and continue with the edited definition (refused if a task with attempts is gone)"},
		&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "with --reload: the task `FILE` to take (default: the run's own, relative to its worktree)"},
	}
}

// reloadFlag returns whether --reload was given, refusing -f without it.
func reloadFlag(c *cli.Context, example string) (reload bool, file string, err error) {
	reload, file = c.Bool("reload"), c.String("file")
	if file != "" && !reload {
		return false, "", usageError("-f FILE goes with --reload, e.g. "+example, "-f needs --reload")
	}
	return reload, file, nil
}

// reloadPath is where the run's task file is read again: FILE when given (relative to the
// current directory, like `run -f`), else the path the run recorded. A relative recorded path is
// taken relative to the run's worktree root: `mulligan run` records the default mulligan.yaml
// that way, and so does a reload with -f (attempt.StoredTaskFile).
func reloadPath(run *store.Run, file string) (string, error) {
	if file != "" {
		return filepath.Abs(file)
	}
	if filepath.IsAbs(run.TaskFile) {
		return run.TaskFile, nil
	}
	return filepath.Join(run.Worktree, run.TaskFile), nil
}

// loadReload reads and validates the run's edited task file and checks that the run can take it,
// before anything changes: authoring errors and a refused reload are exit 2. again is the
// command line that retries it, for the hints. The file returned carries the path the run will
// store.
func loadReload(run *store.Run, file, again string) (*taskfile.File, *attempt.ReloadPlan, error) {
	if run.TaskFile == "" {
		return nil, nil, usageError(fmt.Sprintf("continue it as it is: %s (without --reload)", strings.Replace(again, " --reload", "", 1)),
			"run %s is an ad-hoc run: it has no task file to reload", run.ID)
	}
	abs, err := reloadPath(run, file)
	if err != nil {
		return nil, nil, err
	}
	f, err := taskfile.Load(displayPath(abs))
	if err != nil {
		return nil, nil, err
	}
	if err := attempt.CheckFiles(f, run.Worktree); err != nil {
		return nil, nil, err
	}
	old, _ := loadStoredFile(run) // the run's own definition always parses; nil is handled
	p, err := attempt.PlanReload(run, old, f)
	var conflict *attempt.ReloadConflictError
	if errors.As(err, &conflict) {
		gone := make([]string, len(conflict.Gone))
		for i, g := range conflict.Gone {
			gone[i] = g.ID
		}
		return nil, nil, &Error{Code: ExitUsage, Msg: err.Error(), Err: err, Hints: []string{
			fmt.Sprintf("put %s back in %s and run `%s` again", joinList(gone), f.Path, again),
			fmt.Sprintf("or continue with the definition the run stored: %s", strings.Replace(again, " --reload", "", 1)),
			fmt.Sprintf("or start a new run from the edited file: mulligan run -f %s", f.Path),
		}}
	}
	if err != nil {
		return nil, nil, err
	}
	f.Path = attempt.StoredTaskFile(run.Worktree, abs)
	return f, p, nil
}

// printReload tells the operator what a reload changes.
func printReload(w io.Writer, command string, f *taskfile.File, p *attempt.ReloadPlan) {
	var what []string
	for _, x := range []struct {
		verb string
		ids  []string
	}{{"added", p.Added}, {"removed", p.Removed}, {"changed", p.Changed}} {
		if len(x.ids) > 0 {
			what = append(what, x.verb+" "+joinList(x.ids))
		}
	}
	if p.RunHooks {
		what = append(what, "run hooks changed")
	}
	if len(what) == 0 {
		what = append(what, "no task changed")
	}
	fmt.Fprintf(w, "%s: reloaded %s (%.12s): %s\n", command, f.Path, f.Hash, strings.Join(what, "; "))
}
