package autopsy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/mulligan-dev/mulligan/scrub"
	"github.com/mulligan-dev/mulligan/store"
)

// The corpus: failed (and not failed) runs in testdata/scenarios/*.txtar, one a file, built from
// what real tools print (each file names its source), scored as a whole by TestCorpus, which
// prints the precision of each verdict category (docs/autopsy.md holds the table).
//
// A file is a txtar archive. Its comment is YAML:
//
//	source: where the texts come from
//	want: environment | workflow-bug | agent-flake | tool-bug | unknown | no-failure
//	cmd: a pattern the first suggested command must match
//	not: a pattern no suggested command may match (optional)
//	not_first: a pattern the first suggested command may not match (optional; the blind sets')
//	run: blocked | failed | waiting_quota | waiting_approval | succeeded (default blocked)
//	task: the fix task's state (default: the run's); reason (default retries-exhausted if blocked)
//	resume_at: a duration from now, for a parked task
//	agents: the fix task's chain (default [claude]); prompt; verify (argv, [] for none);
//	timeout; heartbeat; isolation
//	lacks: paths the task's base tree does not have
//	base: the verify's exit status on the base tree (its output in the archive's "base" file)
//	attempts: a list of {class, code, msg, exit, vexit, files, dur, agent, task, tree}; no class
//	  is a success; a quality_rejection without msg gets the runner's message from vexit and its
//	  verify output
//
// and its files are "N.out" (attempt N's log) and "N.verify" (its verify log), N from 1.
type corpusFile struct {
	Source    string            `yaml:"source"`
	Want      string            `yaml:"want"`
	Cmd       string            `yaml:"cmd"`
	Not       string            `yaml:"not"`
	NotFirst  string            `yaml:"not_first"`
	Run       string            `yaml:"run"`
	Task      string            `yaml:"task"`
	Reason    string            `yaml:"reason"`
	ResumeAt  string            `yaml:"resume_at"`
	Agents    []string          `yaml:"agents"`
	Prompt    string            `yaml:"prompt"`
	Verify    *[]string         `yaml:"verify"`
	Timeout   string            `yaml:"timeout"`
	Heartbeat string            `yaml:"heartbeat"`
	Isolation string            `yaml:"isolation"`
	Lacks     []string          `yaml:"lacks"`
	Base      *int              `yaml:"base"`
	Attempts  []corpusAttempt   `yaml:"attempts"`
	Extra     map[string]string `yaml:"extra"`
}

type corpusAttempt struct {
	Class string `yaml:"class"`
	Code  string `yaml:"code"`
	Msg   string `yaml:"msg"`
	Exit  *int   `yaml:"exit"`
	VExit int    `yaml:"vexit"`
	Files int    `yaml:"files"`
	Dur   string `yaml:"dur"`
	Agent string `yaml:"agent"`
	Task  string `yaml:"task"`
	Tree  string `yaml:"tree"`
}

const corpusAgents = `agents:
  claude: {preset: claude}
  claude-ask: {preset: claude, command: [claude, -p, "{{prompt}}", --output-format, json]}
  codex: {preset: codex}
  gemini: {preset: gemini}
  opencode: {preset: opencode}
  aider: {preset: aider}
  script: {command: [./agent.sh, "{{prompt}}"]}
`

// loadCorpus reads one corpus file as a scenario, with the paths its base tree lacks.
func loadCorpus(t *testing.T, path string) (scenario, corpusFile) {
	t.Helper()
	ar, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c corpusFile
	if err := yaml.Unmarshal(ar.Comment, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if c.Source == "" || c.Want == "" || c.Cmd == "" {
		t.Fatalf("%s: source, want and cmd are required", path)
	}
	files := map[string]string{}
	for _, f := range ar.Files {
		files[f.Name] = string(f.Data)
	}
	agents := c.Agents
	if len(agents) == 0 {
		agents = []string{"claude"}
	}
	prompt := c.Prompt
	if prompt == "" {
		prompt = "Fix the failing tests."
	}
	verify := []string{"go", "test", "./..."}
	if c.Verify != nil {
		verify = *c.Verify
	}
	var tf strings.Builder
	tf.WriteString("version: 1\n" + corpusAgents + "tasks:\n")
	fmt.Fprintf(&tf, "  - id: fix\n    prompt: %q\n    agent: [%s]\n    on_failure: retry\n    retries: 2\n", prompt, strings.Join(agents, ", "))
	for _, d := range [][2]string{{"timeout", c.Timeout}, {"heartbeat", c.Heartbeat}, {"isolation", c.Isolation}} {
		if d[1] != "" {
			fmt.Fprintf(&tf, "    %s: %s\n", d[0], d[1])
		}
	}
	if len(verify) > 0 {
		q := make([]string, len(verify))
		for i, a := range verify {
			q[i] = fmt.Sprintf("%q", a)
		}
		fmt.Fprintf(&tf, "    verify: {command: [%s]}\n", strings.Join(q, ", "))
	}
	fmt.Fprintf(&tf, "  - id: docs\n    prompt: Update the docs.\n    agent: [%s]\n    on_failure: retry\n    retries: 2\n", agents[0])

	s := scenario{name: strings.TrimSuffix(filepath.Base(path), ".txtar"), file: tf.String(), want: c.Want, cmd: c.Cmd, notCmd: c.Not, notFirst: c.NotFirst}
	s.runState = orWord(c.Run, store.RunBlocked)
	s.taskState = orWord(c.Task, s.runState)
	s.reason = c.Reason
	if s.reason == "" && s.taskState == store.TaskBlocked {
		s.reason = "retries-exhausted"
	}
	if c.ResumeAt != "" {
		d, err := time.ParseDuration(c.ResumeAt)
		if err != nil {
			t.Fatalf("%s: resume_at: %v", path, err)
		}
		at := scNow.Add(d)
		s.resumeAt = &at
	}
	for i, a := range c.Attempts {
		n := fmt.Sprint(i + 1)
		sa := scAttempt{class: a.Class, code: a.Code, msg: a.Msg, exit: -1, files: a.Files, dur: 40 * time.Second,
			agent: a.Agent, task: a.Task, tree: a.Tree, out: files[n+".out"], verify: files[n+".verify"]}
		if a.Exit != nil {
			sa.exit = *a.Exit
		} else if a.Class == "" || a.Class == cQuality || a.Class == cPayload || a.Class == cSchema {
			sa.exit = 0
		}
		if a.Dur != "" {
			d, err := time.ParseDuration(a.Dur)
			if err != nil {
				t.Fatalf("%s: attempt %d: %v", path, i+1, err)
			}
			sa.dur = d
		}
		if a.Class == cQuality && a.Msg == "" {
			sa.msg = fmt.Sprintf("verify `%s` exited with status %d%s", strings.Join(verify, " "), a.VExit, lastLineSuffixOf(sa.verify))
			if sa.code == "" {
				sa.code = "verify_failed"
			}
		}
		if a.Class != "" && sa.msg == "" {
			t.Fatalf("%s: attempt %d has a class and no message", path, i+1)
		}
		s.atts = append(s.atts, sa)
	}
	if c.Base != nil {
		s.base = &baseVerify{ExitCode: *c.Base, Output: files["base"]}
	}
	return s, c
}

// judgeScenario takes the autopsy of a scenario as `mulligan autopsy` would and says what is
// wrong with it (nothing: right). lacks, when not nil, are the paths its base tree lacks.
//
// A blind set (firstOnly) holds the first command to account, the one the user runs: its
// `not` pattern is matched against that command only.
func judgeScenario(t *testing.T, s scenario, lacks []string, firstOnly ...bool) (*Report, []string) {
	run, _ := buildScenario(t, s, t.TempDir())
	in := Input{RunID: run.ID, Commands: scCommands, Scrub: scrub.New(), Now: func() time.Time { return scNow }}
	f := gather(in, run, nil)
	f.base = s.base
	if lacks != nil {
		f.missing = f.missingIn(func(p string) bool { return slices.Contains(lacks, p) })
	}
	r := f.report(in)
	first := ""
	if len(r.Suggestion.Commands) > 0 {
		first = r.Suggestion.Commands[0]
	}
	var bad []string
	if r.Verdict.Category != s.want {
		bad = append(bad, fmt.Sprintf("verdict %s (rule %s), want %s", r.Verdict.Category, r.Verdict.Rule, s.want))
	}
	if !regexp.MustCompile(s.cmd).MatchString(first) {
		bad = append(bad, fmt.Sprintf("first command %q does not match %q", first, s.cmd))
	}
	if s.notFirst != "" && regexp.MustCompile(s.notFirst).MatchString(first) {
		bad = append(bad, fmt.Sprintf("first command %q matches %q", first, s.notFirst))
	}
	if s.notCmd != "" {
		cmds := r.Suggestion.Commands
		if len(firstOnly) > 0 && firstOnly[0] && len(cmds) > 1 {
			cmds = cmds[:1]
		}
		for _, c := range cmds {
			if regexp.MustCompile(s.notCmd).MatchString(c) {
				bad = append(bad, fmt.Sprintf("suggests %q", c))
			}
		}
	}
	return r, bad
}

var categories = []string{Environment, WorkflowBug, AgentFlake, ToolBug, Unknown, NoFailure}

// scoreCorpus scores the scenarios under dir: right (verdict and first command), and per
// category the verdicts given and how many were right.
func scoreCorpus(t *testing.T, dir string, fail bool) (right, total int, given, correct, wanted map[string]int) {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.txtar"))
	given, correct, wanted = map[string]int{}, map[string]int{}, map[string]int{}
	for _, p := range paths {
		s, c := loadCorpus(t, p)
		r, bad := judgeScenario(t, s, c.Lacks, !fail)
		total++
		given[r.Verdict.Category]++
		wanted[s.want]++
		if r.Verdict.Category == s.want {
			correct[s.want]++
		}
		if testing.Verbose() {
			t.Logf("%-5v %-28s %-13s %s", len(bad) == 0, r.Verdict.Rule, r.Verdict.Category, s.name)
		}
		if len(bad) == 0 {
			right++
			continue
		}
		msg := fmt.Sprintf("%s (%s):\n  %s\n  why: %s\n  next: %s %q", s.name, c.Source, strings.Join(bad, "\n  "), r.Verdict.Why, r.Suggestion.Text, r.Suggestion.Commands)
		if fail {
			t.Error(msg)
		} else {
			t.Log(msg)
		}
	}
	return right, total, given, correct, wanted
}

func precisionTable(given, correct, wanted map[string]int) string {
	var b strings.Builder
	b.WriteString("| category | scenarios | verdicts given | right | precision |\n|---|---|---|---|---|\n")
	for _, c := range categories {
		p := "–"
		if given[c] > 0 {
			p = fmt.Sprintf("%.2f", float64(correct[c])/float64(given[c]))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s |\n", c, wanted[c], given[c], correct[c], p)
	}
	return b.String()
}

func TestCorpus(t *testing.T) {
	right, total, given, correct, wanted := scoreCorpus(t, "testdata/scenarios", true)
	t.Logf("corpus: %d of %d right (verdict and first command)\n%s", right, total, precisionTable(given, correct, wanted))
	if total < 60 {
		t.Errorf("the corpus has %d scenarios, want at least 60", total)
	}
	for _, c := range []string{Environment, WorkflowBug, AgentFlake, Unknown, NoFailure} {
		if wanted[c] < 5 {
			t.Errorf("category %s has %d scenarios, want at least 5", c, wanted[c])
		}
	}
}

// A run whose stored task file no longer parses still gets a report from every scenario's
// evidence: no rule may need the definition to be there.
func TestCorpusWithoutTaskFile(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "scenarios", "*.txtar"))
	for _, p := range paths {
		s, _ := loadCorpus(t, p)
		run, _ := buildScenario(t, s, t.TempDir())
		run.TaskFileContent = []byte("version: [\n")
		in := Input{RunID: run.ID, Commands: scCommands, Scrub: scrub.New(), Now: func() time.Time { return scNow }}
		f := gather(in, run, nil)
		f.base = s.base
		if r := f.report(in); r.Verdict.Category == "" || r.Suggestion.Commands == nil {
			t.Errorf("%s: %+v", p, r.Verdict)
		}
	}
}

// TestCorpusDir scores the scenarios of another directory the way TestCorpus does, without
// failing: MULLIGAN_CORPUS_DIR=DIR go test ./autopsy -run TestCorpusDir -v. It is how a set
// written blind (by someone who has not read the rules) is scored at first sight, before its
// files join testdata/scenarios.
func TestCorpusDir(t *testing.T) {
	dir := os.Getenv("MULLIGAN_CORPUS_DIR")
	if dir == "" {
		t.Skip("MULLIGAN_CORPUS_DIR names no directory of scenarios to score")
	}
	right, total, given, correct, wanted := scoreCorpus(t, dir, false)
	t.Logf("%s: %d of %d right (verdict and first command)\n%s", dir, right, total, precisionTable(given, correct, wanted))
}
