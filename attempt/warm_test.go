package attempt

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

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

// The patterns that classify a failed agent's output are compiled beside an agent that runs
// longer than warmAfter, with the caller's idle work; an agent that ends sooner leaves them to
// be compiled on first use.
func TestWarmWhileAgentRuns(t *testing.T) {
	var compiled atomic.Bool
	warm := func() { compiled.Store(true) }
	idle := make(chan struct{})
	r := &runner{runWriter: runWriter{env: Env{Idle: func() { close(idle) }}}}
	warmed.Store(false) // (another test's run may have warmed this process already)
	idled.Store(false)

	stop := r.warmWhileAgentRuns(warm)
	stop() // the agent ended at once
	time.Sleep(2 * warmAfter)
	if compiled.Load() {
		t.Fatal("an agent that ended before warmAfter had the patterns compiled beside it")
	}

	stop = r.warmWhileAgentRuns(warm)
	select {
	case <-idle:
	case <-time.After(5 * time.Second):
		t.Fatal("the caller's idle work did not run beside an agent running past warmAfter")
	}
	stop()
	if !compiled.Load() {
		t.Fatal("the preset's patterns were not compiled beside the agent")
	}
}

// The idle work starts as soon as the run's base is taken, once per process; an agent that
// then runs past warmAfter does not start it again.
func TestWarmIdleOnce(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: the idle work waits for an agent that runs warmAfter")
	}
	calls := make(chan struct{}, 4)
	r := &runner{runWriter: runWriter{env: Env{Idle: func() { calls <- struct{}{} }}}}
	idled.Store(false)
	warmed.Store(false)
	r.warmIdle()
	select {
	case <-calls:
	case <-time.After(5 * time.Second):
		t.Fatal("the idle work did not start once the base was taken")
	}
	r.warmIdle()
	stop := r.warmWhileAgentRuns(func() {})
	time.Sleep(3 * warmAfter)
	stop()
	select {
	case <-calls:
		t.Fatal("the idle work ran twice in one process")
	default:
	}
}
