package agentcli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/taskfile"
)

type clsPreset struct {
	f     *Failure
	calls int
}

func (p *clsPreset) ClassifyOutput(exitCode int, output []byte) *Failure {
	p.calls++
	return p.f
}

func clsRule(pattern string, c taskfile.Class, after time.Duration) taskfile.ClassifyRule {
	return taskfile.ClassifyRule{Pattern: pattern, Re: regexp.MustCompile(pattern), Class: c, RetryAfter: after}
}

// startErr returns the real error of starting path, as the runner would see it.
func clsStartErr(t *testing.T, path string) error {
	t.Helper()
	err := exec.Command(path).Start()
	if err == nil {
		t.Fatalf("%s started", path)
	}
	return err
}

func TestClassifyEachClass(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "agent.sh")
	os.WriteFile(notExec, []byte("#!/bin/sh\necho hi\n"), 0o644)
	garbage := filepath.Join(dir, "garbage")
	os.WriteFile(garbage, []byte("\x00\x01\x02 not a program"), 0o755)

	tests := []struct {
		name  string
		o     Observation
		class taskfile.Class
		code  string
		msg   string // substring
	}{
		{"runner died", Observation{RunnerDied: true, ExitCode: 1}, taskfile.ClassRunnerDied, CodeRunnerDied, "died"},
		{"internal", Observation{Internal: errors.New("snapshot failed")}, taskfile.ClassInternal, CodeInternal, "snapshot failed"},
		{"cancelled", Observation{Cancelled: true, ExitCode: -1}, taskfile.ClassCancellation, CodeCancelled, "cancelled"},
		{"cancelled with reason", Observation{Cancelled: true, CancelReason: "pause"}, taskfile.ClassCancellation, "pause", "cancelled (pause)"},
		{"deadline", Observation{DeadlineExceeded: true, TimedOut: true}, taskfile.ClassBudgetExhausted, CodeDeadline, "deadline"},
		{"timeout", Observation{TimedOut: true, ExitCode: -1, Output: []byte("working...\n")}, taskfile.ClassAttemptTimeout, CodeTimeout, "timeout: working..."},
		{"heartbeat", Observation{Silent: true, ExitCode: -1}, taskfile.ClassHeartbeatTimeout, CodeSilent, "printed nothing"},
		{"not in PATH", Observation{StartErr: clsStartErr(t, "mulligan-no-such-agent-xyz"), ExitCode: -1}, taskfile.ClassAgentMissing, CodeNotFound, "not found"},
		{"no such file", Observation{StartErr: clsStartErr(t, filepath.Join(dir, "nope"))}, taskfile.ClassAgentMissing, CodeNotFound, "not found"},
		{"not executable", Observation{StartErr: clsStartErr(t, notExec)}, taskfile.ClassAgentMissing, CodeNotExecutable, "not executable"},
		{"exec format", Observation{StartErr: clsStartErr(t, garbage)}, taskfile.ClassAgentMissing, CodeNotExecutable, "not executable"},
		{"other start error", Observation{StartErr: errors.New("too many open files")}, taskfile.ClassInternal, CodeStartFailed, "could not start"},
		{"exit status", Observation{ExitCode: 3, Output: []byte("step 1\nerror: tests failed  \n\n")}, taskfile.ClassAgentExit, CodeNonZeroExit, "agent exited with status 3: error: tests failed"},
		{"exit status, no output", Observation{ExitCode: 1}, taskfile.ClassAgentExit, CodeNonZeroExit, "agent exited with status 1"},
		{"signal", Observation{ExitCode: -1}, taskfile.ClassAgentExit, CodeSignal, "killed by a signal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Classify(tt.o, nil, nil)
			if f == nil {
				t.Fatal("no failure")
			}
			if f.Class != tt.class || f.Code != tt.code || !strings.Contains(f.Message, tt.msg) {
				t.Errorf("got %s/%s %q, want %s/%s containing %q", f.Class, f.Code, f.Message, tt.class, tt.code, tt.msg)
			}
			if f.RetryEligible != taskfile.Eligible(f.Class, nil, nil) {
				t.Errorf("RetryEligible = %v for %s", f.RetryEligible, f.Class)
			}
		})
	}
	if f := Classify(Observation{ExitCode: 1}, nil, nil); f.Message != "agent exited with status 1" {
		t.Errorf("message without output = %q", f.Message)
	}
}

func TestClassifySuccess(t *testing.T) {
	if f := Classify(Observation{ExitCode: 0, Output: []byte("done")}, nil, nil); f != nil {
		t.Errorf("exit 0 = %+v", f)
	}
	p := &clsPreset{}
	if f := Classify(Observation{ExitCode: 0}, []taskfile.ClassifyRule{clsRule("nomatch", taskfile.ClassTransport, 0)}, p); f != nil || p.calls != 1 {
		t.Errorf("exit 0 with quiet rules = %+v (preset calls %d)", f, p.calls)
	}
}

func TestClassifyOrder(t *testing.T) {
	dir := t.TempDir()
	missing := clsStartErr(t, filepath.Join(dir, "nope"))
	quota := &clsPreset{f: &Failure{Class: taskfile.ClassQuota, Code: "usage_limit", Message: "limit", ResetAt: time.Unix(1700000000, 0)}}
	transportRule := []taskfile.ClassifyRule{clsRule("ECONNRESET", taskfile.ClassTransport, 0)}
	out := []byte("read tcp: ECONNRESET\n")

	tests := []struct {
		name  string
		o     Observation
		user  []taskfile.ClassifyRule
		class taskfile.Class
	}{
		{"cancel beats timeout", Observation{Cancelled: true, TimedOut: true, Silent: true}, nil, taskfile.ClassCancellation},
		{"timeout beats heartbeat", Observation{TimedOut: true, Silent: true}, nil, taskfile.ClassAttemptTimeout},
		{"timeout beats user rules", Observation{TimedOut: true, Output: out}, transportRule, taskfile.ClassAttemptTimeout},
		{"heartbeat beats agent_missing", Observation{Silent: true, StartErr: missing}, nil, taskfile.ClassHeartbeatTimeout},
		{"agent_missing beats user rules", Observation{StartErr: missing, Output: out}, transportRule, taskfile.ClassAgentMissing},
		{"user rule beats preset", Observation{ExitCode: 1, Output: out}, transportRule, taskfile.ClassTransport},
		{"preset beats agent_exit", Observation{ExitCode: 1, Output: []byte("x")}, transportRule, taskfile.ClassQuota},
		{"user rule on exit 0", Observation{ExitCode: 0, Output: out}, transportRule, taskfile.ClassTransport},
		{"preset on exit 0", Observation{ExitCode: 0}, nil, taskfile.ClassQuota},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Classify(tt.o, tt.user, quota)
			if f == nil || f.Class != tt.class {
				t.Errorf("got %+v, want %s", f, tt.class)
			}
		})
	}
	// The preset's verdict is copied, not shared, and keeps its details.
	f := Classify(Observation{ExitCode: 1}, nil, quota)
	f.Message = "changed"
	if quota.f.Message != "limit" || f.ResetAt != quota.f.ResetAt || f.Code != "usage_limit" || f.RetryEligible {
		t.Errorf("preset failure = %+v (preset now %+v)", f, quota.f)
	}
}

func TestClassifyUserRules(t *testing.T) {
	rules := []taskfile.ClassifyRule{
		clsRule("credit balance is too low", taskfile.ClassQuota, time.Hour),
		clsRule("(?i)overloaded", taskfile.ClassTransport, 0),
		{Pattern: "broken", Class: taskfile.ClassAuth}, // no compiled Re: skipped, not a panic
		clsRule("overloaded", taskfile.ClassAuth, 0),
	}
	out := []byte("starting\nAPI Error: Overloaded, try later\nbye\n")
	f := Classify(Observation{ExitCode: 1, Output: out}, rules, nil)
	if f.Class != taskfile.ClassTransport || f.Code != CodeUserRule || f.RetryAfter != 0 || !f.RetryEligible {
		t.Fatalf("first matching rule should win: %+v", f)
	}
	if want := "output matched classify rule 2 ((?i)overloaded): API Error: Overloaded, try later"; f.Message != want {
		t.Errorf("message = %q, want %q", f.Message, want)
	}
	f = Classify(Observation{ExitCode: 0, Output: []byte("Your credit balance is too low to continue")}, rules, nil)
	if f.Class != taskfile.ClassQuota || f.RetryAfter != time.Hour || f.RetryEligible {
		t.Errorf("quota rule = %+v", f)
	}
	// Quoted output lines are bounded.
	long := []byte("overloaded " + strings.Repeat("é", 500))
	f = Classify(Observation{ExitCode: 1, Output: long}, rules[1:2], nil)
	if len(f.Message) > 300 || !strings.HasSuffix(f.Message, "…") {
		t.Errorf("long line not clipped: %d bytes", len(f.Message))
	}
}

func TestClassifyBadPreset(t *testing.T) {
	p := &clsPreset{f: &Failure{Class: "weird"}}
	f := Classify(Observation{ExitCode: 1}, nil, p)
	if f.Class != taskfile.ClassInternal || f.Code != CodeBadPresetVerdict {
		t.Errorf("invalid preset class = %+v", f)
	}
}

func TestEligible(t *testing.T) {
	defaults := map[taskfile.Class]bool{
		taskfile.ClassTransport: true, taskfile.ClassAttemptTimeout: true, taskfile.ClassHeartbeatTimeout: true, taskfile.ClassAgentExit: true,
		taskfile.ClassRunnerDied: true, taskfile.ClassQualityRejection: true, // repaired with the verify's output
		taskfile.ClassQuota: false, taskfile.ClassAuth: false, taskfile.ClassAgentMissing: false, taskfile.ClassPayloadDeclared: false,
		taskfile.ClassSchemaInvalid: false, taskfile.ClassBudgetExhausted: false,
		taskfile.ClassCancellation: false, taskfile.ClassAuthoring: false, taskfile.ClassInternal: false,
	}
	if len(defaults) != len(taskfile.Classes) {
		t.Fatalf("table covers %d of %d classes", len(defaults), len(taskfile.Classes))
	}
	for c, want := range defaults {
		if got := taskfile.Eligible(c, nil, nil); got != want {
			t.Errorf("Eligible(%s) = %v, want %v", c, got, want)
		}
	}
	// non_retryable narrows.
	if taskfile.Eligible(taskfile.ClassAgentExit, []taskfile.Class{taskfile.ClassAgentExit}, nil) || !taskfile.Eligible(taskfile.ClassTransport, []taskfile.Class{taskfile.ClassAgentExit}, nil) {
		t.Error("non_retryable")
	}
	// retry_on widens, only with the three result classes.
	for _, c := range []taskfile.Class{taskfile.ClassQualityRejection, taskfile.ClassPayloadDeclared, taskfile.ClassSchemaInvalid} {
		if !taskfile.Eligible(c, nil, []taskfile.Class{c}) {
			t.Errorf("retry_on %s", c)
		}
	}
	for _, c := range []taskfile.Class{taskfile.ClassAuth, taskfile.ClassAgentMissing, taskfile.ClassQuota, taskfile.ClassCancellation, taskfile.ClassBudgetExhausted} {
		if taskfile.Eligible(c, nil, []taskfile.Class{c}) {
			t.Errorf("retry_on must not widen %s", c)
		}
	}
	if taskfile.Eligible(taskfile.ClassPayloadDeclared, nil, []taskfile.Class{taskfile.ClassSchemaInvalid}) {
		t.Error("retry_on widened a class it does not list")
	}
	// Listed in both: narrowing wins.
	if taskfile.Eligible(taskfile.ClassQualityRejection, []taskfile.Class{taskfile.ClassQualityRejection}, []taskfile.Class{taskfile.ClassQualityRejection}) {
		t.Error("non_retryable must beat retry_on")
	}
}

func TestParseClass(t *testing.T) {
	for _, c := range taskfile.Classes {
		if got, err := taskfile.ParseClass(string(c)); err != nil || got != c {
			t.Errorf("ParseClass(%s) = %v, %v", c, got, err)
		}
	}
	if _, err := taskfile.ParseClass("Transport"); err == nil || err.Error() != `unknown failure class "Transport"` {
		t.Errorf("ParseClass(Transport) = %v", err)
	}
}
