package attempt

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

type clsPreset struct {
	f     *Failure
	calls int
}

func (p *clsPreset) ClassifyOutput(exitCode int, output []byte) *Failure {
	p.calls++
	return p.f
}

func clsRule(pattern string, c Class, after time.Duration) ClassifyRule {
	return ClassifyRule{Pattern: pattern, Re: regexp.MustCompile(pattern), Class: c, RetryAfter: after}
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
		class Class
		code  string
		msg   string // substring
	}{
		{"runner died", Observation{RunnerDied: true, ExitCode: 1}, ClassRunnerDied, CodeRunnerDied, "died"},
		{"internal", Observation{Internal: errors.New("snapshot failed")}, ClassInternal, CodeInternal, "snapshot failed"},
		{"cancelled", Observation{Cancelled: true, ExitCode: -1}, ClassCancellation, CodeCancelled, "cancelled"},
		{"cancelled with reason", Observation{Cancelled: true, CancelReason: "pause"}, ClassCancellation, "pause", "cancelled (pause)"},
		{"deadline", Observation{DeadlineExceeded: true, TimedOut: true}, ClassBudgetExhausted, CodeDeadline, "deadline"},
		{"timeout", Observation{TimedOut: true, ExitCode: -1, Output: []byte("working...\n")}, ClassAttemptTimeout, CodeTimeout, "timeout: working..."},
		{"heartbeat", Observation{Silent: true, ExitCode: -1}, ClassHeartbeatTimeout, CodeSilent, "printed nothing"},
		{"not in PATH", Observation{StartErr: clsStartErr(t, "mulligan-no-such-agent-xyz"), ExitCode: -1}, ClassAgentMissing, CodeNotFound, "not found"},
		{"no such file", Observation{StartErr: clsStartErr(t, filepath.Join(dir, "nope"))}, ClassAgentMissing, CodeNotFound, "not found"},
		{"not executable", Observation{StartErr: clsStartErr(t, notExec)}, ClassAgentMissing, CodeNotExecutable, "not executable"},
		{"exec format", Observation{StartErr: clsStartErr(t, garbage)}, ClassAgentMissing, CodeNotExecutable, "not executable"},
		{"other start error", Observation{StartErr: errors.New("too many open files")}, ClassInternal, CodeStartFailed, "could not start"},
		{"exit status", Observation{ExitCode: 3, Output: []byte("step 1\nerror: tests failed  \n\n")}, ClassAgentExit, CodeNonZeroExit, "agent exited with status 3: error: tests failed"},
		{"exit status, no output", Observation{ExitCode: 1}, ClassAgentExit, CodeNonZeroExit, "agent exited with status 1"},
		{"signal", Observation{ExitCode: -1}, ClassAgentExit, CodeSignal, "killed by a signal"},
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
			if f.RetryEligible != Eligible(f.Class, nil, nil) {
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
	if f := Classify(Observation{ExitCode: 0}, []ClassifyRule{clsRule("nomatch", ClassTransport, 0)}, p); f != nil || p.calls != 1 {
		t.Errorf("exit 0 with quiet rules = %+v (preset calls %d)", f, p.calls)
	}
}

func TestClassifyOrder(t *testing.T) {
	dir := t.TempDir()
	missing := clsStartErr(t, filepath.Join(dir, "nope"))
	quota := &clsPreset{f: &Failure{Class: ClassQuota, Code: "usage_limit", Message: "limit", ResetAt: time.Unix(1700000000, 0)}}
	transportRule := []ClassifyRule{clsRule("ECONNRESET", ClassTransport, 0)}
	out := []byte("read tcp: ECONNRESET\n")

	tests := []struct {
		name  string
		o     Observation
		user  []ClassifyRule
		class Class
	}{
		{"cancel beats timeout", Observation{Cancelled: true, TimedOut: true, Silent: true}, nil, ClassCancellation},
		{"timeout beats heartbeat", Observation{TimedOut: true, Silent: true}, nil, ClassAttemptTimeout},
		{"timeout beats user rules", Observation{TimedOut: true, Output: out}, transportRule, ClassAttemptTimeout},
		{"heartbeat beats agent_missing", Observation{Silent: true, StartErr: missing}, nil, ClassHeartbeatTimeout},
		{"agent_missing beats user rules", Observation{StartErr: missing, Output: out}, transportRule, ClassAgentMissing},
		{"user rule beats preset", Observation{ExitCode: 1, Output: out}, transportRule, ClassTransport},
		{"preset beats agent_exit", Observation{ExitCode: 1, Output: []byte("x")}, transportRule, ClassQuota},
		{"user rule on exit 0", Observation{ExitCode: 0, Output: out}, transportRule, ClassTransport},
		{"preset on exit 0", Observation{ExitCode: 0}, nil, ClassQuota},
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
	rules := []ClassifyRule{
		clsRule("credit balance is too low", ClassQuota, time.Hour),
		clsRule("(?i)overloaded", ClassTransport, 0),
		{Pattern: "broken", Class: ClassAuth}, // no compiled Re: skipped, not a panic
		clsRule("overloaded", ClassAuth, 0),
	}
	out := []byte("starting\nAPI Error: Overloaded, try later\nbye\n")
	f := Classify(Observation{ExitCode: 1, Output: out}, rules, nil)
	if f.Class != ClassTransport || f.Code != CodeUserRule || f.RetryAfter != 0 || !f.RetryEligible {
		t.Fatalf("first matching rule should win: %+v", f)
	}
	if want := "output matched classify rule 2 ((?i)overloaded): API Error: Overloaded, try later"; f.Message != want {
		t.Errorf("message = %q, want %q", f.Message, want)
	}
	f = Classify(Observation{ExitCode: 0, Output: []byte("Your credit balance is too low to continue")}, rules, nil)
	if f.Class != ClassQuota || f.RetryAfter != time.Hour || f.RetryEligible {
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
	if f.Class != ClassInternal || f.Code != CodeBadPresetVerdict {
		t.Errorf("invalid preset class = %+v", f)
	}
}

func TestEligible(t *testing.T) {
	defaults := map[Class]bool{
		ClassTransport: true, ClassAttemptTimeout: true, ClassHeartbeatTimeout: true, ClassAgentExit: true,
		ClassRunnerDied: true,
		ClassQuota:      false, ClassAuth: false, ClassAgentMissing: false, ClassPayloadDeclared: false,
		ClassSchemaInvalid: false, ClassQualityRejection: false, ClassBudgetExhausted: false,
		ClassCancellation: false, ClassAuthoring: false, ClassInternal: false,
	}
	if len(defaults) != len(Classes) {
		t.Fatalf("table covers %d of %d classes", len(defaults), len(Classes))
	}
	for c, want := range defaults {
		if got := Eligible(c, nil, nil); got != want {
			t.Errorf("Eligible(%s) = %v, want %v", c, got, want)
		}
	}
	// non_retryable narrows.
	if Eligible(ClassAgentExit, []Class{ClassAgentExit}, nil) || !Eligible(ClassTransport, []Class{ClassAgentExit}, nil) {
		t.Error("non_retryable")
	}
	// retry_on widens, only with the three result classes.
	for _, c := range []Class{ClassQualityRejection, ClassPayloadDeclared, ClassSchemaInvalid} {
		if !Eligible(c, nil, []Class{c}) {
			t.Errorf("retry_on %s", c)
		}
	}
	for _, c := range []Class{ClassAuth, ClassAgentMissing, ClassQuota, ClassCancellation, ClassBudgetExhausted} {
		if Eligible(c, nil, []Class{c}) {
			t.Errorf("retry_on must not widen %s", c)
		}
	}
	if Eligible(ClassQualityRejection, nil, []Class{ClassSchemaInvalid}) {
		t.Error("retry_on widened a class it does not list")
	}
	// Listed in both: narrowing wins.
	if Eligible(ClassQualityRejection, []Class{ClassQualityRejection}, []Class{ClassQualityRejection}) {
		t.Error("non_retryable must beat retry_on")
	}
}

func TestParseClass(t *testing.T) {
	for _, c := range Classes {
		if got, err := ParseClass(string(c)); err != nil || got != c {
			t.Errorf("ParseClass(%s) = %v, %v", c, got, err)
		}
	}
	if _, err := ParseClass("Transport"); err == nil || err.Error() != `unknown failure class "Transport"` {
		t.Errorf("ParseClass(Transport) = %v", err)
	}
}
