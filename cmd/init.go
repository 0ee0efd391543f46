package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/taskfile"
)

type initOptions struct {
	File string // where to write; "" for mulligan.yaml at the working tree root, "-" for stdout
	// lookPath finds an agent CLI (exec.LookPath; a test's fake PATH).
	lookPath func(string) (string, error)
}

func initCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "init",
		Usage: "write a commented mulligan.yaml for the agent CLIs on PATH (never over an existing one)",
		Description: "The file names one agent per CLI found (claude, codex, gemini, aider, opencode), a failover chain\n" +
			"through them, and a verify command guessed from the repository (go test ./..., cargo test,\n" +
			"npm test, pytest, make test), marked as a guess. Check it with `mulligan run --dry-run`.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "write `FILE` instead (- for stdout)"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError("see 'mulligan init --help'", "init takes no arguments")
			}
			return runInit(g, initOptions{File: c.String("file"), lookPath: exec.LookPath})
		},
	}
}

func runInit(g *globals, opts initOptions) error {
	repo, err := openRepo()
	if err != nil {
		return err
	}
	root := repo.Root()
	repo.Close()
	agents := foundAgents(opts.lookPath)
	verify, from := guessVerify(root)
	content := starterFile(agents, verify, from)
	if _, err := taskfile.Parse("mulligan.yaml", []byte(content)); err != nil {
		return fmt.Errorf("internal error: the starter task file does not validate: %w", err)
	}
	if opts.File == "-" {
		_, err := fmt.Fprint(g.io.Out, content)
		return err
	}
	path := opts.File
	if path == "" {
		path = filepath.Join(root, "mulligan.yaml")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return &Error{Code: ExitRefused, Msg: fmt.Sprintf("%s exists; init never overwrites a task file", displayPath(path)),
			Hints: []string{"check it with `mulligan run --dry-run`, or write the starter beside it: mulligan init -f mulligan.new.yaml"}}
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	names := make([]string, len(agents))
	for i, a := range agents {
		names[i] = a.Name
	}
	switch len(agents) {
	case 0:
		fmt.Fprintf(g.io.Out, "wrote %s; no agent CLI found on PATH, so it names claude: install one, or give your own command\n", displayPath(path))
	case 1:
		fmt.Fprintf(g.io.Out, "wrote %s for %s\n", displayPath(path), names[0])
	default:
		fmt.Fprintf(g.io.Out, "wrote %s for %s (a failover chain in that order)\n", displayPath(path), strings.Join(names, ", "))
	}
	if verify != nil {
		fmt.Fprintf(g.io.Out, "verify: %s, a guess from %s: check it\n", shellLine(verify), from)
	}
	fmt.Fprintln(g.io.Out, "next: edit the prompt, then mulligan run --dry-run, then mulligan run")
	return nil
}

// foundAgents are the presets whose CLI is on PATH, in the presets' order.
func foundAgents(lookPath func(string) (string, error)) []*agentcli.Preset {
	var out []*agentcli.Preset
	for _, name := range taskfile.Presets {
		p, ok := agentcli.LookupPreset(name)
		if !ok || len(p.Command) == 0 {
			continue
		}
		if _, err := lookPath(p.Command[0]); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// guessVerify guesses the repository's test command from the files at its root, and says which
// file it read.
func guessVerify(root string) (argv []string, from string) {
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(root, name))
		return err == nil
	}
	switch {
	case has("go.mod"):
		return []string{"go", "test", "./..."}, "go.mod"
	case has("Cargo.toml"):
		return []string{"cargo", "test"}, "Cargo.toml"
	case npmTest(filepath.Join(root, "package.json")):
		return []string{"npm", "test"}, "package.json"
	}
	for _, name := range []string{"pyproject.toml", "pytest.ini", "setup.py", "setup.cfg", "tox.ini"} {
		if has(name) {
			return []string{"pytest"}, name
		}
	}
	if data, err := os.ReadFile(filepath.Join(root, "Makefile")); err == nil &&
		(strings.HasPrefix(string(data), "test:") || strings.Contains(string(data), "\ntest:")) {
		return []string{"make", "test"}, "Makefile"
	}
	return nil, ""
}

// npmTest says whether package.json has a test script other than npm's placeholder.
func npmTest(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(data, &pkg) != nil {
		return false
	}
	test := pkg.Scripts["test"]
	return test != "" && !strings.Contains(test, "no test specified")
}

// starterFile is the commented task file init writes.
func starterFile(agents []*agentcli.Preset, verify []string, from string) string {
	var b strings.Builder
	b.WriteString(`# The tasks mulligan runs (mulligan run). Written by mulligan init: edit the prompt, then
# check the file with mulligan run --dry-run. Every key is in mulligan's docs/taskfile.md.
version: 1

`)
	var names []string
	if len(agents) == 0 {
		p, _ := agentcli.LookupPreset(taskfile.PresetClaude)
		b.WriteString("# No agent CLI (claude, codex, gemini, aider, opencode) was found on PATH.\n")
		fmt.Fprintf(&b, "# For claude, %s.\n", p.Install)
		b.WriteString("# Any other program is an agent too: command: [my-agent, \"{{prompt}}\"]\n")
		b.WriteString("agents:\n  claude:\n    preset: claude\n\n")
		names = []string{taskfile.PresetClaude}
	} else {
		b.WriteString("# The agent CLIs found on PATH. Each runs its preset's headless command, which edits\n")
		b.WriteString("# the tree without asking (mulligan presets prints them); `command:` replaces it.\n")
		b.WriteString("agents:\n")
		for _, a := range agents {
			fmt.Fprintf(&b, "  %s:\n    preset: %s\n", a.Name, a.Name)
			names = append(names, a.Name)
		}
		b.WriteString("\n")
	}
	b.WriteString("tasks:\n  - id: fix-tests\n")
	b.WriteString("    prompt: Make the tests pass without changing what they test.\n")
	if len(names) > 1 {
		fmt.Fprintf(&b, "    # A failover chain: attempt 1 runs on %s; each failed attempt moves one agent on.\n", names[0])
		b.WriteString("    # A usage limit moves on too, without using up a retry.\n")
		fmt.Fprintf(&b, "    agent: [%s]\n", strings.Join(names, ", "))
	} else {
		fmt.Fprintf(&b, "    agent: %s\n", names[0])
	}
	b.WriteString(`    on_failure: retry     # fail | ask (hold it for you) | retry
    retries: 2            # attempts after the first; each starts from the tree the task started from
    timeout: 30m          # one attempt
    deadline: 2h          # all attempts and the waits between them
`)
	if verify != nil {
		fmt.Fprintf(&b, "    # A guess from %s: the command that says the work is done. Check it.\n", from)
		b.WriteString("    # An attempt it rejects is retried with its output in the prompt.\n")
		fmt.Fprintf(&b, "    verify:\n      command: %s\n      timeout: 10m\n", yamlFlow(verify))
	} else {
		b.WriteString("    # The command that says the work is done; an attempt it rejects is retried with its\n")
		b.WriteString("    # output in the prompt. No test command was found in the repository:\n")
		b.WriteString("    # verify:\n    #   command: [make, test]\n")
	}
	return b.String()
}

// yamlFlow writes argv as a YAML flow sequence of plain words (the guessed commands need no quotes).
func yamlFlow(argv []string) string {
	return "[" + strings.Join(argv, ", ") + "]"
}
