package attempt

import (
	"testing"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// A retry is warm only with retry_mode resume, on the agent that failed, with the session it
// reported, for a CLI that can resume; the resumed call's cost is the session's less what the
// earlier attempts of that session recorded.
func TestWarmSession(t *testing.T) {
	claude := &taskfile.Agent{Name: "c", Preset: taskfile.PresetClaude}
	codex := &taskfile.Agent{Name: "x", Preset: taskfile.PresetCodex}
	resume := &taskfile.Task{RetryMode: taskfile.RetryResume}
	cold := &taskfile.Task{RetryMode: taskfile.RetryCold}
	prev := &store.Attempt{N: 1, Agent: "c", AgentSession: "s-1"}
	cases := []struct {
		name  string
		def   *taskfile.Task
		agent *taskfile.Agent
		prev  *store.Attempt
		want  string
	}{
		{"resume", resume, claude, prev, "s-1"},
		{"cold mode", cold, claude, prev, ""},
		{"first attempt", resume, claude, nil, ""},
		{"another agent", resume, &taskfile.Agent{Name: "d", Preset: taskfile.PresetClaude}, prev, ""},
		{"no session", resume, claude, &store.Attempt{N: 1, Agent: "c"}, ""},
		{"a CLI taken cold", resume, codex, &store.Attempt{N: 1, Agent: "x", AgentSession: "t-1"}, ""},
		{"opencode", resume, &taskfile.Agent{Name: "o", Preset: taskfile.PresetOpencode}, &store.Attempt{N: 1, Agent: "o", AgentSession: "ses_1"}, "ses_1"},
	}
	for _, c := range cases {
		if got := warmSession(c.def, c.agent, c.prev); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	argv := resumeArgs(taskfile.PresetClaude, []string{"claude", "-p", "x"}, "s-1")
	if len(argv) != 5 || argv[3] != "--resume" || argv[4] != "s-1" {
		t.Errorf("claude resume argv: %q", argv)
	}

	argv = resumeArgs(taskfile.PresetOpencode, []string{"opencode", "run", "--format", "json", "x"}, "ses_1")
	if len(argv) != 7 || argv[5] != "--session" || argv[6] != "ses_1" {
		t.Errorf("opencode resume argv: %q", argv)
	}

	f := func(v float64) *float64 { return &v }
	history := []store.Attempt{{AgentSession: "s-1", CostUSD: f(0.06)}, {AgentSession: "s-0", CostUSD: f(1)}, {AgentSession: "s-1"}}
	if got := warmCost(f(0.07), taskfile.PresetClaude, "s-1", history); got == nil || *got < 0.0099 || *got > 0.0101 {
		t.Errorf("warm cost: %v, want 0.01", got)
	}
	if got := warmCost(f(0.07), taskfile.PresetClaude, "", history); *got != 0.07 {
		t.Errorf("cold cost: %v, want 0.07", *got)
	}
	if got := warmCost(f(0.01), taskfile.PresetClaude, "s-1", history); *got != 0 {
		t.Errorf("cost below the earlier share: %v, want 0", *got)
	}
	if got := warmCost(f(0.002), taskfile.PresetOpencode, "s-1", history); *got != 0.002 {
		t.Errorf("opencode's resumed run: %v, want its own 0.002", *got)
	}
	if warmCost(nil, taskfile.PresetClaude, "s-1", history) != nil {
		t.Errorf("no cost reported: want none")
	}
}
