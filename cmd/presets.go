package cmd

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/agentcli"
)

// presetJSON is one row of `presets -o json`.
type presetJSON struct {
	Name    string   `json:"name"`
	Command []string `json:"command"` // the headless invocation used when a task gives none
	Install string   `json:"install,omitempty"`
	Permits string   `json:"permits,omitempty"` // what the command lets the agent do without a question
}

func presetsCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "presets",
		Usage: "the agent CLIs mulligan knows: each preset's headless command (used when a task gives none), what it permits the agent and how to install it",
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError("", "presets takes no arguments")
			}
			var rows []presetJSON
			for _, name := range agentcli.PresetNames() {
				p, _ := agentcli.LookupPreset(name)
				rows = append(rows, presetJSON{Name: name, Command: append([]string{}, p.Command...), Install: p.Install, Permits: p.Permits})
			}
			if g.json() {
				return writeJSON(g.io.Out, rows)
			}
			var tb table
			tb.header("PRESET", "COMMAND")
			for _, r := range rows {
				cmd := "(none: give the command)"
				if len(r.Command) > 0 {
					cmd = shellLine(r.Command)
				}
				tb.row(plain(r.Name), plain(cmd))
				if r.Permits != "" {
					tb.row(plain(""), plain("  permits: "+r.Permits))
				}
			}
			if err := tb.write(g.io.Out); err != nil {
				return err
			}
			fmt.Fprintln(g.io.Out, "\nA task (or `run --preset NAME --prompt TEXT`) that names a preset and no command runs its command.")
			return nil
		},
	}
}

// shellLine writes argv as a user would type it, quoting what a shell would split.
func shellLine(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}();&|<>!#~") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		} else {
			out[i] = a
		}
	}
	return strings.Join(out, " ")
}
