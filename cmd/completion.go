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
# Commands and flags are completed from this script; run ids, task addresses, preset names and
# states from the repository's history (mulligan __complete, read-only). After -- nothing of
# mulligan's is offered: the words there belong to the agent's command.
_mulligan() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd="" i opts
  local -a pos=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      --) COMPREPLY=(); return 0 ;;
      -C|-o|--output) ((i++)) ;;
      -*) ;;
      *) if [[ -z $cmd ]]; then cmd=${COMP_WORDS[i]}; else pos+=("${COMP_WORDS[i]}"); fi ;;
    esac
  done
  case $prev in
    --preset|--state|--on-failure|-o|--output)
      COMPREPLY=($(compgen -W "$(mulligan __complete --flag "$prev" "$cur" 2>/dev/null)" -- "$cur")); return 0 ;;
  esac
  case $cmd in
%s    *) opts=%q ;;
  esac
  if [[ -n $cmd && $cur != -* ]]; then
    local IFS=$'\n'
    COMPREPLY=($(mulligan __complete "$cmd" "${pos[@]}" "$cur" 2>/dev/null))
    if [[ ${COMPREPLY[0]} == */ ]]; then compopt -o nospace 2>/dev/null; fi
    return 0
  fi
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
		if strings.Contains(c.ArgsUsage, "RUN") || strings.Contains(c.ArgsUsage, "ADDR") {
			fmt.Fprintf(w, "complete -c mulligan -n '__fish_seen_subcommand_from %s; and not __fish_seen_argument -- --' -f -a '(mulligan __complete %s (commandline -ct))'\n", c.Name, c.Name)
		}
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
	for _, f := range []string{"preset", "state", "on-failure"} {
		fmt.Fprintf(w, "complete -c mulligan -l %s -x -a '(mulligan __complete --flag %s)'\n", f, f)
	}
	return nil
}
