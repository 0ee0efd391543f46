package cmd

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"
)

func completionCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: completion bash|zsh|fish",
		ArgsUsage: "bash|zsh|fish",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("e.g. source <(mulligan completion bash)", "completion takes one shell: bash, zsh or fish")
			}
			words := completionWords(c.App)
			switch c.Args().First() {
			case "bash":
				return bashCompletion(g.io.Out, words)
			case "zsh":
				fmt.Fprintln(g.io.Out, "#compdef mulligan\nautoload -U bashcompinit && bashcompinit")
				return bashCompletion(g.io.Out, words)
			case "fish":
				return fishCompletion(g.io.Out, c.App, words)
			}
			return usageError("the shells are bash, zsh and fish", "unknown shell %q", c.Args().First())
		},
	}
}

// completionWords maps each command to the flags it takes ("" holds the commands and global flags).
func completionWords(app *cli.App) map[string][]string {
	flagNames := func(flags []cli.Flag) []string {
		var out []string
		for _, f := range flags {
			for _, n := range f.Names() {
				if len(n) == 1 {
					out = append(out, "-"+n)
				} else {
					out = append(out, "--"+n)
				}
			}
		}
		return out
	}
	words := map[string][]string{}
	global := flagNames(app.Flags)
	for _, c := range app.Commands {
		if c.Hidden {
			continue
		}
		words[""] = append(words[""], c.Name)
		words[c.Name] = append(flagNames(c.Flags), global...)
	}
	words[""] = append(words[""], global...)
	for k := range words {
		sort.Strings(words[k])
	}
	return words
}

func bashCompletion(w io.Writer, words map[string][]string) error {
	var cases strings.Builder
	names := make([]string, 0, len(words))
	for k := range words {
		if k != "" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&cases, "    %s) opts=%q ;;\n", n, strings.Join(words[n], " "))
	}
	_, err := fmt.Fprintf(w, `# mulligan completion for bash: source <(mulligan completion bash)
_mulligan() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd="" i opts
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in -*) ;; *) cmd=${COMP_WORDS[i]}; break ;; esac
  done
  case $cmd in
%s    *) opts=%q ;;
  esac
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o default -F _mulligan mulligan
`, cases.String(), strings.Join(words[""], " "))
	return err
}

func fishCompletion(w io.Writer, app *cli.App, words map[string][]string) error {
	fmt.Fprintln(w, "# mulligan completion for fish: mulligan completion fish | source")
	for _, c := range app.Commands {
		if c.Hidden {
			continue
		}
		fmt.Fprintf(w, "complete -c mulligan -n __fish_use_subcommand -a %s -d %q\n", c.Name, c.Usage)
		for _, f := range c.Flags {
			for _, n := range f.Names() {
				opt := "-l"
				if len(n) == 1 {
					opt = "-s"
				}
				fmt.Fprintf(w, "complete -c mulligan -n '__fish_seen_subcommand_from %s' %s %s\n", c.Name, opt, n)
			}
		}
	}
	return nil
}
