package cmd

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// normalized is a command line rearranged so urfave/cli v2 parses it the way a user means it.
//
// urfave/cli v2 stops parsing flags at the first positional argument and then silently takes a later
// `--dry-run` as an argument (urfave/cli #1177, #976). For a tool that rewrites working trees that
// is dangerous, so argv is normalised first: global flags move before the command, the command's
// flags before its positional arguments, everything after `--` is kept apart untouched, and an
// unknown flag anywhere is a usage error.
type normalized struct {
	Args []string // what to hand to cli.App.Run, program name first
	Rest []string // the arguments after `--`, nil when there was no `--`
}

func normalizeArgs(app *cli.App, argv []string) (normalized, error) {
	if len(argv) > 0 && argv[0] == "help" {
		return normalized{Args: append([]string{"mulligan"}, argv...)}, nil
	}
	var global, positional, rest []string
	var path []*cli.Command   // the command and its subcommands, outermost first
	var levelFlags [][]string // levelFlags[i]: the flags of path[i]

	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			rest = append([]string{}, argv[i+1:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if name == "" {
				return normalized{}, usageError("see 'mulligan --help'", "malformed flag %q", a)
			}
			var f cli.Flag
			isGlobal := false
			if len(path) > 0 {
				f, _ = findFlag(path[len(path)-1].Flags, name)
			}
			if f == nil {
				f, isGlobal = findFlag(app.Flags, name)
			}
			if f == nil && (name == "h" || name == "help") {
				if len(path) == 0 {
					global = append(global, a)
				} else {
					levelFlags[len(path)-1] = append(levelFlags[len(path)-1], a)
				}
				continue
			}
			if f == nil {
				where := "mulligan"
				if len(path) > 0 {
					where = "mulligan " + commandPath(path)
				}
				return normalized{}, usageError("see '"+where+" --help'", "unknown flag %s for %s", strings.SplitN(a, "=", 2)[0], where)
			}
			tokens := []string{a}
			if takesValue(f) && !hasValue {
				if i+1 >= len(argv) {
					return normalized{}, usageError("see 'mulligan --help'", "flag %s needs a value", a)
				}
				i++
				tokens = append(tokens, argv[i])
			}
			if isGlobal {
				global = append(global, tokens...)
			} else {
				levelFlags[len(path)-1] = append(levelFlags[len(path)-1], tokens...)
			}
			continue
		}
		// A positional argument names the command (or a subcommand) until the command is a leaf.
		if len(positional) == 0 {
			subs := app.Commands
			if len(path) > 0 {
				subs = path[len(path)-1].Subcommands
			}
			if c := findCommand(subs, a); c != nil {
				path = append(path, c)
				levelFlags = append(levelFlags, nil)
				continue
			}
		}
		positional = append(positional, a)
	}

	out := []string{"mulligan"}
	out = append(out, global...)
	for i, c := range path {
		out = append(out, c.Name)
		out = append(out, levelFlags[i]...)
	}
	// Only `run` gives `--` a meaning of its own (the command of an ad-hoc run), and `restore`
	// after its revision (`restore REV -- PATH…`, the paths to restore); elsewhere what follows
	// it is positional arguments, as in any Unix tool (`mulligan restore -- -odd-name`).
	keepRest := len(path) > 0 && (path[0].Name == "run" || path[0].Name == "restore" && len(positional) > 0)
	if rest != nil && !keepRest {
		positional = append(positional, rest...)
		rest = nil
	}
	if len(positional) > 0 {
		// The terminator keeps urfave/cli from reading a positional such as "-" as a flag.
		out = append(out, "--")
		out = append(out, positional...)
	}
	return normalized{Args: out, Rest: rest}, nil
}

func commandPath(path []*cli.Command) string {
	names := make([]string, len(path))
	for i, c := range path {
		names[i] = c.Name
	}
	return strings.Join(names, " ")
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func findFlag(flags []cli.Flag, name string) (cli.Flag, bool) {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f, true
			}
		}
	}
	return nil, false
}

func takesValue(f cli.Flag) bool {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		return d.TakesValue()
	}
	return true
}
