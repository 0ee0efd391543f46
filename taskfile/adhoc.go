package taskfile

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/shlex"
)

// AdHocOptions are the flags of `mulligan run [flags] -- CMD…`.
type AdHocOptions struct {
	Command                      []string
	Prompt, PromptFile           string
	OnFailure                    string
	Backoff                      string // KIND[:INITIAL[:MAX[:JITTER]]], like "exponential:1s:5m" or "fixed:2s"
	Retries                      *int
	Timeout, Heartbeat, Deadline string
	Verify                       string // split like a shell would (github.com/google/shlex), never run by one
	Preset                       string
	Fallback                     string // a second agent, split like Verify
}

// AdHoc builds the one-task file of an ad-hoc run: task `main` on agent `main` (and
// `fallback`, second in the chain, with --fallback). --preset applies to both agents.
//
// The flags are checked first so that errors name them; the task is then written out as
// YAML and read back with Parse, so Content is a task file like any other: the run stores
// it, and resume reads it with Parse(f.Path, f.Content) like any stored definition. Unlike
// a file task, an ad-hoc task needs no prompt (`mulligan run --retries 3 -- go test ./...`),
// unless its command asks for {{prompt}} or {{prompt_file}}.
func AdHoc(o AdHocOptions) (*File, error) {
	c := &adHocCheck{o: o}
	c.check()
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	f, err := Parse("", []byte(c.yaml()))
	if err != nil {
		// The flags were all checked: this is our bug, not the user's.
		return nil, fmt.Errorf("internal error: the ad-hoc task does not read back: %v", err)
	}
	return f, nil
}

// adHocCheck checks the flags of an ad-hoc run, collecting every authoring error, and keeps what
// they give for the task file it writes.
type adHocCheck struct {
	o    AdHocOptions
	errs AuthoringErrors

	fallback, verify []string
	preset           string
	onFailure        string
	backoff          *Backoff
}

func (c *adHocCheck) fail(hint, format string, args ...any) {
	c.errs = append(c.errs, &AuthoringError{Msg: fmt.Sprintf(format, args...), Hint: hint})
}

func (c *adHocCheck) check() {
	o := c.o
	if len(o.Command) == 0 {
		c.fail(`put the agent command after --, like: mulligan run --prompt "fix it" -- claude -p "{{prompt}}"`, "no command to run")
	} else if o.Command[0] == "" {
		c.fail("", "the command's program name is empty")
	}
	c.checkArgv("command", o.Command, TemplateVars)
	c.fallback = c.splitFlag("--fallback", o.Fallback)
	c.verify = c.splitFlag("--verify", o.Verify)

	c.preset = PresetGeneric
	if o.Preset != "" {
		if !slices.Contains(Presets, o.Preset) {
			hint := "presets: " + strings.Join(Presets, ", ")
			if g := suggest(o.Preset, Presets); g != "" {
				hint = "did you mean `" + g + "`?"
			}
			c.fail(hint, "--preset: unknown preset %q", o.Preset)
		} else {
			c.preset = o.Preset
		}
	}
	c.checkPrompt()
	c.checkRetries()
	c.checkTimes()
}

func (c *adHocCheck) checkArgv(what string, argv []string, allowed []string) {
	for i, a := range argv {
		if !utf8.ValidString(a) {
			c.fail("", "%s argument %d is not valid UTF-8", what, i+1)
			continue
		}
		if te := checkTemplate(a, allowed); te != nil {
			c.fail(te.hint(), "%s argument %d: %s", what, i+1, te)
		}
	}
}

// splitFlag splits a command given as one flag value the way a shell would.
func (c *adHocCheck) splitFlag(flag, value string) []string {
	if value == "" {
		return nil
	}
	argv, err := shlex.Split(value)
	if err != nil {
		c.fail("", "%s: %s", flag, err)
		return nil
	}
	if len(argv) == 0 {
		c.fail("", "%s is empty", flag)
		return nil
	}
	c.checkArgv(flag, argv, TemplateVars)
	return argv
}

func (c *adHocCheck) checkPrompt() {
	o := c.o
	switch {
	case o.Prompt != "" && o.PromptFile != "":
		c.fail("keep one of them", "--prompt and --prompt-file cannot be used together")
	case o.Prompt != "":
		if !utf8.ValidString(o.Prompt) {
			c.fail("", "--prompt is not valid UTF-8")
		} else if te := checkTemplate(o.Prompt, promptVars); te != nil {
			c.fail(te.hint(), "--prompt: %s", te)
		}
	case o.PromptFile != "":
		if !utf8.ValidString(o.PromptFile) {
			c.fail("", "--prompt-file is not valid UTF-8")
		}
	default:
		for _, argv := range [][]string{o.Command, c.fallback} {
			if slices.ContainsFunc(argv, func(a string) bool { return usesVar(a, VarPrompt, VarPromptFile) }) {
				c.fail("add --prompt TEXT or --prompt-file PATH", "the command uses {{prompt}} or {{prompt_file}} but no prompt was given")
				break
			}
		}
	}
}

// checkRetries checks --on-failure, --retries and --backoff: --retries alone means retry.
func (c *adHocCheck) checkRetries() {
	o := c.o
	c.onFailure = o.OnFailure
	switch c.onFailure {
	case "", OnFailureFail, OnFailureAsk, OnFailureRetry:
	default:
		c.fail("use fail, ask or retry", "--on-failure: unknown value %q", c.onFailure)
	}
	if o.Retries != nil {
		switch {
		case *o.Retries < 0:
			c.fail("", "--retries must be 0 or more")
		case *o.Retries > math.MaxInt32:
			c.fail("", "--retries is too large")
		}
		switch c.onFailure {
		case "":
			c.onFailure = OnFailureRetry
		case OnFailureFail, OnFailureAsk:
			c.fail("use --on-failure retry, or drop --retries", "--retries only applies with --on-failure retry")
		}
	} else if c.onFailure == OnFailureRetry {
		c.fail("there is no unlimited default: add --retries 3 (or any number)", "--on-failure retry needs --retries")
	}
	if o.Backoff != "" {
		b, err := parseBackoffSpec(o.Backoff)
		if err != nil {
			c.fail("write it as KIND[:INITIAL[:MAX[:JITTER]]], like exponential:1s:5m or fixed:2s", "--backoff: %s", err)
		} else {
			c.backoff = &b
		}
	}
}

// checkTimes checks --timeout, --heartbeat and --deadline, and that a timeout fits the deadline.
func (c *adHocCheck) checkTimes() {
	o := c.o
	for _, d := range []struct{ flag, value string }{{"--timeout", o.Timeout}, {"--heartbeat", o.Heartbeat}, {"--deadline", o.Deadline}} {
		if d.value == "" {
			continue
		}
		if _, err := ParseDuration(d.value); err != nil {
			c.fail("write durations like 90s, 20m, 2h or 1d", "%s: %s", d.flag, err)
		}
	}
	if o.Timeout != "" && o.Deadline != "" {
		timeout, err1 := ParseDuration(o.Timeout)
		deadline, err2 := ParseDuration(o.Deadline)
		if err1 == nil && err2 == nil && deadline > 0 && timeout > deadline {
			c.fail(fmt.Sprintf("make --timeout at most the deadline (%s), or raise --deadline", deadline),
				"--timeout (%s) is longer than --deadline (%s)", timeout, deadline)
		}
	}
}

// yaml writes the checked flags as the task file of the ad-hoc run.
func (c *adHocCheck) yaml() string {
	o := c.o
	var y strings.Builder
	y.WriteString("# the ad-hoc task of `mulligan run [flags] -- CMD…`\nversion: 1\nagents:\n")
	// Each rung has its own preset: --preset names main's; a command that runs a known CLI
	// (--fallback 'gemini …' under --preset claude) is that CLI's.
	mainPreset := c.preset
	if o.Preset == "" {
		mainPreset = presetForCommand(o.Command, c.preset)
	}
	fmt.Fprintf(&y, "  main:\n    preset: %s\n    command: %s\n", mainPreset, yamlList(o.Command))
	chain := "[main]"
	if c.fallback != nil {
		fmt.Fprintf(&y, "  fallback:\n    preset: %s\n    command: %s\n", presetForCommand(c.fallback, c.preset), yamlList(c.fallback))
		chain = "[main, fallback]"
	}
	fmt.Fprintf(&y, "tasks:\n  - id: main\n    agent: %s\n", chain)
	if o.PromptFile != "" {
		fmt.Fprintf(&y, "    prompt_file: %s\n", yamlQuote(o.PromptFile))
	} else {
		fmt.Fprintf(&y, "    prompt: %s\n", yamlQuote(o.Prompt))
	}
	if c.onFailure != "" {
		fmt.Fprintf(&y, "    on_failure: %s\n", c.onFailure)
	}
	if o.Retries != nil {
		fmt.Fprintf(&y, "    retries: %d\n", *o.Retries)
	}
	if b := c.backoff; b != nil {
		fmt.Fprintf(&y, "    backoff: {kind: %s, initial: %s, max: %s, jitter: %s}\n",
			b.Kind, yamlQuote(b.Initial.String()), yamlQuote(b.Max.String()), b.Jitter)
	}
	for _, d := range []struct{ key, value string }{{"timeout", o.Timeout}, {"heartbeat", o.Heartbeat}, {"deadline", o.Deadline}} {
		if d.value != "" {
			fmt.Fprintf(&y, "    %s: %s\n", d.key, yamlQuote(strings.TrimSpace(d.value)))
		}
	}
	if c.verify != nil {
		fmt.Fprintf(&y, "    verify:\n      command: %s\n", yamlList(c.verify))
	}
	return y.String()
}

func yamlList(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = yamlQuote(a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// yamlQuote writes s as a YAML double-quoted scalar on one line. Everything outside
// printable text is escaped, so any valid UTF-8 string reads back byte for byte.
func yamlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r < 0x80 || !unicode.IsPrint(r) || r == 0xFEFF:
			if r > 0xFFFF {
				fmt.Fprintf(&b, `\U%08X`, r)
			} else {
				fmt.Fprintf(&b, `\u%04X`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// presetForCommand is the preset of the CLI argv runs (claude, codex, gemini, aider, opencode, by
// the program's name), else def.
func presetForCommand(argv []string, def string) string {
	if len(argv) > 0 {
		name := argv[0]
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[i+1:]
		}
		for _, p := range Presets {
			if p == name && p != PresetGeneric {
				return p
			}
		}
	}
	return def
}
