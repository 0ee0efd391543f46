// Package cmd is mulligan's command line: one file per command, flag parsing and printing only.
// The work itself lives in attempt, snapshot, compensate and autopsy; this package must never hold
// behaviour that a test of those packages could not reach.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/scrub"
)

// Main runs mulligan with the process's arguments and streams and returns the exit code.
func Main() int {
	ctx, stop := interruptible(context.Background())
	defer stop()
	return Run(ctx, os.Args[1:], System())
}

// globals are the flags every command takes (SPEC §6).
type globals struct {
	io     *IOStreams
	output string // "text" or "json"
	rest   []string
	// noAutopsy is --no-autopsy (run, resume, retry-task, prompt, stop, timetravel --resume):
	// foreground writes no autopsy when the run fails.
	noAutopsy bool
	// after is the state a command left open for the step after it (afterCommand).
	after *state
	// commandNames are the app's commands (set by newApp, which every command runs through),
	// for the autopsy's suggestions.
	commandNames []string
}

func (g *globals) json() bool { return g.output == "json" }

// Run runs one command line and returns its exit code. It never calls os.Exit, so deferred
// cleanup (closing the database, removing temporary indexes) always runs.
func Run(ctx context.Context, args []string, ios *IOStreams) int {
	restore := ios.scrub(scrub.New(os.Environ()))
	defer restore()
	g := &globals{io: ios, output: "text"}
	app := newApp(g)
	norm, err := normalizeArgs(app, versionFlag(args))
	if err == nil {
		g.rest = norm.Rest
		if len(norm.Args) > 1 && norm.Args[1] == "--" {
			err = unknownCommand(app, norm.Args[2])
		} else {
			err = app.RunContext(ctx, norm.Args)
		}
	}
	// After the command, a step of its own: the hooks left pending are delivered, on this
	// command's streams, before its error (if any) is printed.
	afterCommand(ctx, g)
	if err != nil {
		err = signalled(ctx, mapError(err))
		printError(ios.ErrOut, err)
	}
	return exitCode(err)
}

// versionFlag turns `mulligan --version` (before any command, as other tools take it) into the
// `version` command, keeping the global flags given with it (`-o json --version`).
func versionFlag(args []string) []string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--version":
			out := append(append([]string{}, args[:i]...), args[i+1:]...)
			return append(out, "version")
		case a == "--" || !strings.HasPrefix(a, "-"):
			return args // a command (or its arguments) came first
		case a == "-C" || a == "-o" || a == "--output":
			i++ // its value
		}
	}
	return args
}

func newApp(g *globals) *cli.App {
	app := &cli.App{
		Name:                  "mulligan",
		Usage:                 "run coding agents in a git working tree, with a snapshot of every attempt",
		HideVersion:           true,
		Writer:                g.io.Out,
		ErrWriter:             g.io.ErrOut,
		EnableBashCompletion:  false,
		CustomAppHelpTemplate: cli.AppHelpTemplate + "\n" + exitCodeHelp,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "C", Usage: "run as if started in `DIR`"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "text", Usage: "output format: text or json"},
			&cli.BoolFlag{Name: "no-color", Usage: "never color the output (also NO_COLOR, CLICOLOR=0)"},
			&cli.BoolFlag{Name: "no-scrub", Usage: "show secrets (tokens, values of *KEY*/*TOKEN*/*SECRET*/*PASSWORD* variables) instead of [scrubbed]"},
		},
		Before: func(c *cli.Context) error {
			if dir := c.String("C"); dir != "" {
				if err := os.Chdir(dir); err != nil {
					return usageError("", "cannot change to directory %s: %v", dir, unwrapPathError(err))
				}
			}
			switch o := c.String("output"); o {
			case "text", "json":
				g.output = o
			default:
				return usageError("use -o text or -o json", "unknown output format %q", o)
			}
			g.io.apply()
			if c.Bool("no-color") {
				g.io.DisableColor()
			}
			if c.Bool("no-scrub") {
				g.io.noScrub()
			}
			return nil
		},
		// Keep urfave/cli from exiting the process under deferred cleanup; Run maps errors itself.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(c *cli.Context, err error, isSubcommand bool) error {
			return usageError("see 'mulligan --help'", "%s", err.Error())
		},
		Commands: commands(g),
	}
	for _, c := range app.Commands {
		setUsageErrors(c)
	}
	g.commandNames = make([]string, len(app.Commands))
	for i, c := range app.Commands {
		g.commandNames[i] = c.Name
	}
	addCommandHelp(app.Commands)
	return app
}

func setUsageErrors(c *cli.Command) {
	c.OnUsageError = func(ctx *cli.Context, err error, isSubcommand bool) error {
		return usageError("see 'mulligan "+c.Name+" --help'", "%s", err.Error())
	}
	for _, s := range c.Subcommands {
		setUsageErrors(s)
	}
}

// commands is the list of commands, in the order `--help` shows them.
func commands(g *globals) []*cli.Command {
	return []*cli.Command{
		runCommand(g),
		initCommand(g),
		lsCommand(g),
		showCommand(g),
		logsCommand(g),
		eventsCommand(g),
		topCommand(g),
		diffCommand(g),
		resumeCommand(g),
		pauseCommand(g),
		cancelCommand(g),
		killCommand(g),
		superviseCommand(g),
		retryTaskCommand(g),
		snapshotCommand(g),
		restoreCommand(g),
		undoCommand(g),
		revertCommand(g),
		timetravelCommand(g),
		effectCommand(g),
		effectsCommand(g),
		compensateCommand(g),
		hooksCommand(g),
		promptCommand(g),
		stopCommand(g),
		approveCommand(g),
		rejectCommand(g),
		applyCommand(g),
		tasksCommand(g),
		gcCommand(g),
		autopsyCommand(g),
		reportCommand(g),
		bugCommand(g),
		versionCommand(g),
		completionCommand(g),
		completeCommand(g),
		handoffCommand(g),
		presetsCommand(g),
	}
}

func unknownCommand(app *cli.App, name string) error {
	e := usageError("see 'mulligan --help'", "unknown command %q", name)
	for _, c := range app.Commands {
		if strings.HasPrefix(c.Name, name) || levenshtein(c.Name, name) <= 2 {
			e.Hints = append([]string{fmt.Sprintf("did you mean 'mulligan %s'?", c.Name)}, e.Hints...)
			break
		}
	}
	return e
}

// mapError turns the errors of other packages into *Error values with their exit codes and hints.
func mapError(err error) error {
	var e *Error
	var multi *multiError
	if errors.As(err, &e) || errors.As(err, &multi) {
		return err
	}
	for _, m := range errorMappers {
		if mapped := m(err); mapped != nil {
			return mapped
		}
	}
	return err
}

// errorMappers are consulted in order; each command file may add the mapping of its packages.
var errorMappers []func(error) error

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
