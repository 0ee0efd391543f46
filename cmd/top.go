package cmd

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sync"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/autopsy"
	"github.com/mulligan-dev/mulligan/cockpit"
	"github.com/mulligan-dev/mulligan/store"
)

func topCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "top",
		Usage: "a live full-screen view of the runs: tasks, lanes, attempts in flight, spend, quota walls, what waits for you; keys approve, reject, pause, cancel and resume",
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError("e.g. mulligan top", "top takes no argument")
			}
			if !g.io.outTTY || !isTerminal(os.Stdin) {
				return &Error{Code: ExitFailed, Msg: "top needs a terminal (standard input and output)",
					Hints: []string{"in a script, follow runs with mulligan events -f, or mulligan ls and mulligan show"}}
			}
			return runTop(c.Context, g)
		},
	}
}

func runTop(ctx context.Context, g *globals) error {
	st, err := openState(g)
	if err != nil {
		return err
	}
	defer st.Close()
	scrub := func(s string) string { return s }
	if sc := g.io.Scrubber(); sc != nil {
		scrub = sc.String
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	dbPath := store.DefaultPath(st.repo.CommonDir())
	loader := &cockpit.Loader{DB: st.db, Scrub: scrub, Recent: 5}
	// The stamp of what the last load read; a tick reloads only when it changed.
	var mu sync.Mutex
	var stamp string
	var last *cockpit.Board
	deps := cockpit.Deps{
		Load: func(ctx context.Context) (*cockpit.Board, error) {
			s := cockpit.DBStamp(dbPath) // before the load: a commit during it is seen next tick
			b, err := loader.Load(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				last = b
				stamp = s + cockpit.LogStamp(b)
			}
			return b, err
		},
		Changed: func() bool {
			mu.Lock()
			defer mu.Unlock()
			return last == nil || cockpit.DBStamp(dbPath)+cockpit.LogStamp(last) != stamp
		},
		Command: func(ctx context.Context, args ...string) (string, error) {
			return topCommandRun(ctx, g, exe, args)
		},
		Detail: func(ctx context.Context, b *cockpit.Board, run, task string) (string, error) {
			return cockpit.Detail(b, autopsy.Dir(st.repo.CommonDir()), run, task, scrub), nil
		},
		Log: func(path string) (string, int64) { return cockpit.ReadLog(path, scrub) },
	}
	opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithFPS(10)}
	color := g.io.ColorEnabled()
	if !color {
		opts = append(opts, tea.WithColorProfile(colorprofile.Ascii))
	}
	_, err = tea.NewProgram(cockpit.New(ctx, deps, color), opts...).Run()
	switch {
	case errors.Is(err, tea.ErrInterrupted):
		return exitError{ExitInterrupted}
	case errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil:
		return exitError{ExitInterrupted}
	}
	return err
}

// topCommandRun runs a mulligan command for top's keys, as the user would type it: this
// binary, in this directory, its output captured (scrubbed by the command itself) for the
// footer.
func topCommandRun(ctx context.Context, g *globals, exe string, args []string) (string, error) {
	c := exec.CommandContext(ctx, exe)
	c.Args = append([]string{"mulligan", "--no-color"}, args...)
	if g.io.Scrubber() == nil {
		c.Args = append([]string{"mulligan", "--no-color", "--no-scrub"}, args...)
	}
	out, err := c.CombinedOutput()
	return string(out), err
}
