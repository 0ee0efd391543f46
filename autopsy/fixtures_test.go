package autopsy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// The real CLIs' output that agentcli keeps as fixtures (captured from the pinned CLIs against a
// model API answering each error), classified by the runner's own classifier, then judged: the
// autopsy and the runner read the same bytes, and agree.
func TestRealCLIFailures(t *testing.T) {
	agents := map[string]string{taskfile.PresetClaude: "claude", taskfile.PresetCodex: "codex", taskfile.PresetGemini: "gemini", taskfile.PresetOpencode: "opencode"}
	cases := []struct {
		file, preset string
		exit         int
		want, cmd    string
		not          string
	}{
		{"claude_api_401.json", taskfile.PresetClaude, 1, Environment, `console.anthropic.com/settings/keys`, ""},
		{"codex_api_auth.jsonl", taskfile.PresetCodex, 1, Environment, `^codex login$`, ""},
		{"gemini_api_auth.txt", taskfile.PresetGemini, 144, Environment, `aistudio.google.com/apikey`, `claude`},
		{"opencode_api_auth.jsonl", taskfile.PresetOpencode, 1, Environment, `^opencode auth login$`, ""},
		{"claude_api_credit.json", taskfile.PresetClaude, 1, Environment, `billing`, `supervise|resume`},
		{"codex_api_credit.jsonl", taskfile.PresetCodex, 1, Environment, `billing`, `supervise|resume`},
		{"opencode_api_credit.jsonl", taskfile.PresetOpencode, 1, Environment, `billing`, `supervise|resume`},
		{"claude_api_529.json", taskfile.PresetClaude, 1, AgentFlake, `^mulligan retry-task k3f9abcd fix$`, ""},
		{"codex_api_server.jsonl", taskfile.PresetCodex, 1, AgentFlake, `^mulligan retry-task k3f9abcd fix$`, ""},
		{"gemini_api_overloaded.txt", taskfile.PresetGemini, 247, AgentFlake, `^mulligan retry-task k3f9abcd fix$`, ""},
		{"claude_api_prompt_too_long.json", taskfile.PresetClaude, 1, WorkflowBug, `^\$\{EDITOR:-vi\} .*mulligan\.yaml$`, ""},
		{"codex_api_prompt_too_long.jsonl", taskfile.PresetCodex, 1, WorkflowBug, `^\$\{EDITOR:-vi\} .*mulligan\.yaml$`, ""},
		{"gemini_api_prompt_too_long.txt", taskfile.PresetGemini, 144, WorkflowBug, `^\$\{EDITOR:-vi\} .*mulligan\.yaml$`, ""},
		{"claude_no_network.json", taskfile.PresetClaude, 1, Environment, `retry-task|curl`, `network_access`},
		{"codex_json_no_network.jsonl", taskfile.PresetCodex, 1, Environment, `retry-task|curl`, `network_access`},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("..", "agentcli", "testdata", "presets", c.file))
			if err != nil {
				t.Skip(err)
			}
			fail := agentcli.Classify(agentcli.Observation{ExitCode: c.exit, Output: out}, nil, agentcli.PresetFor(c.preset))
			if fail == nil {
				t.Fatalf("%s: the classifier saw no failure", c.file)
			}
			a := scAttempt{class: string(fail.Class), code: fail.Code, msg: fail.Message, exit: c.exit, out: string(out), dur: 20 * time.Second}.on(agents[c.preset])
			file := strings.Replace(scFile, "agent: [claude]\n    on_failure: retry\n    retries: 2\n    timeout", "agent: ["+agents[c.preset]+"]\n    on_failure: retry\n    retries: 2\n    timeout", 1)
			s := scenario{name: c.file, file: file, runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
				atts: []scAttempt{a, a}, want: c.want, cmd: c.cmd, notCmd: c.not}
			if fail.Class == taskfile.ClassQuota {
				s.atts = s.atts[:1]
				if fail.Code != agentcli.CodeBilling {
					at := scNow.Add(2 * time.Hour)
					s.runState, s.taskState, s.reason, s.resumeAt = store.RunWaitingQuota, store.TaskWaitingQuota, "quota", &at
				} else {
					s.reason = "billing"
				}
			}
			r, bad := judgeScenario(t, s, nil)
			for _, b := range bad {
				t.Errorf("%s (%s/%s): %s; why: %s; commands %q", c.file, fail.Class, fail.Code, b, r.Verdict.Why, r.Suggestion.Commands)
			}
			if c.not != "" {
				for _, cmd := range r.Suggestion.Commands {
					if regexp.MustCompile(c.not).MatchString(cmd) {
						t.Errorf("%s suggests %q", c.file, cmd)
					}
				}
			}
		})
	}
}
