package attempt

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Class is a failure class of SPEC §4. Its string is part of the JSON contract.
type Class string

// The failure classes, in the order of the spec's table.
const (
	ClassTransport        Class = "transport"
	ClassAttemptTimeout   Class = "attempt_timeout"
	ClassHeartbeatTimeout Class = "heartbeat_timeout"
	ClassAgentExit        Class = "agent_exit"
	ClassQuota            Class = "quota"
	ClassAuth             Class = "auth"
	ClassAgentMissing     Class = "agent_missing"
	ClassPayloadDeclared  Class = "payload_declared"
	ClassSchemaInvalid    Class = "schema_invalid"
	ClassQualityRejection Class = "quality_rejection"
	ClassBudgetExhausted  Class = "budget_exhausted"
	ClassCancellation     Class = "cancellation"
	ClassRunnerDied       Class = "runner_died"
	ClassAuthoring        Class = "authoring"
	ClassInternal         Class = "internal"
)

// Classes lists every class in the spec's order.
var Classes = []Class{
	ClassTransport, ClassAttemptTimeout, ClassHeartbeatTimeout, ClassAgentExit, ClassQuota,
	ClassAuth, ClassAgentMissing, ClassPayloadDeclared, ClassSchemaInvalid, ClassQualityRejection,
	ClassBudgetExhausted, ClassCancellation, ClassRunnerDied, ClassAuthoring, ClassInternal,
}

// widenable are the only classes retry_on may add: the agent ran and finished, and only its
// result was judged. Widening anything else would retry what the spec says must not be
// (auth, a missing agent) or what has its own path (quota).
var widenable = []Class{ClassQualityRejection, ClassPayloadDeclared, ClassSchemaInvalid}

// userClassifiable are the classes a task's classify rules may assign. The others are
// facts only mulligan observes (a timeout it enforced, its own death, a cancel it sent).
var userClassifiable = []Class{
	ClassTransport, ClassAgentExit, ClassQuota, ClassAuth, ClassAgentMissing,
	ClassPayloadDeclared, ClassSchemaInvalid, ClassQualityRejection,
}

// retriedByDefault is the "retried by default" column. quota is absent because a quota
// wall is never retried as an attempt (it fails over or parks); runner_died is present
// because its attempt is run again, outside the retry budget.
var retriedByDefault = []Class{
	ClassTransport, ClassAttemptTimeout, ClassHeartbeatTimeout, ClassAgentExit, ClassRunnerDied,
}

// ParseClass reads a class name as written in a task file.
func ParseClass(s string) (Class, error) {
	c := Class(s)
	if slices.Contains(Classes, c) {
		return c, nil
	}
	return "", fmt.Errorf("unknown failure class %q", s)
}

// Eligible reports whether a failure of class c may be retried under a task's lists:
// non_retryable only removes classes, retry_on only adds quality_rejection,
// payload_declared and schema_invalid (other entries are ignored here; the loader refuses
// them). A class in both lists is not retried: the narrowing is the safer reading.
func Eligible(c Class, nonRetryable, retryOn []Class) bool {
	if slices.Contains(nonRetryable, c) {
		return false
	}
	if slices.Contains(retriedByDefault, c) {
		return true
	}
	return slices.Contains(widenable, c) && slices.Contains(retryOn, c)
}

// Failure is a classified failed attempt.
type Failure struct {
	Class         Class
	Code          string // short, stable, machine-readable detail of the class
	Message       string
	Hint          string
	RetryAfter    time.Duration // the failure's own floor for the next delay
	ResetAt       time.Time     // quota: when the wall lifts, if the output said
	RetryEligible bool
	// NoRetry: the failure meets the same wall on every retry (an untrusted folder, a
	// context window, no credit), whatever the class's default.
	NoRetry bool
}

func (f *Failure) Error() string { return string(f.Class) + ": " + f.Message }

// Observation is what the runner saw of one finished attempt.
type Observation struct {
	Cancelled    bool
	CancelReason string
	TimedOut     bool
	Silent       bool  // heartbeat: no output for too long
	StartErr     error // the process did not start: not found / permission → agent_missing
	ExitCode     int
	Output       []byte // tail of stdout+stderr, bounded by the runner
	// DeadlineExceeded: the attempt was cut short by the task's deadline.
	DeadlineExceeded bool
	RunnerDied       bool
	Internal         error
	// Looped is the line of the preset's "cannot reach the service" loop that ended the
	// attempt (ProcSpec.Watch); Loop is the preset that recognised it.
	Looped string
	Loop   *Preset
}

// PresetRules is the seam for agent presets: their quota, auth and transport banners and
// their result checks. A nil *Failure means the preset has nothing to say.
type PresetRules interface {
	ClassifyOutput(exitCode int, output []byte) *Failure
}

// ClassifyRule is one user `classify` entry of a task.
type ClassifyRule struct {
	Pattern    string
	Re         *regexp.Regexp
	Class      Class
	RetryAfter time.Duration
}

// Failure codes Classify assigns. Presets and the output checks add their own.
const (
	CodeCancelled        = "cancelled"
	CodeDeadline         = "deadline"
	CodeTimeout          = "timeout"
	CodeSilent           = "silent"
	CodeNotFound         = "not_found"
	CodeNotExecutable    = "not_executable"
	CodeStartFailed      = "start_failed"
	CodeUserRule         = "classify_rule"
	CodeNonZeroExit      = "nonzero_exit"
	CodeSignal           = "signal"
	CodeRunnerDied       = "runner_died"
	CodeInternal         = "internal"
	CodeBadPresetVerdict = "bad_preset_verdict"
)

// Classify turns an observation into a failure, in the order of SPEC §4: the runner's
// own facts first (its death, its bugs, cancellation, the deadline, timeouts), then a
// command that never started, then the task's classify rules (first match), then the
// preset's rules; an exit 0 left after that is nil (the output checks — result contract,
// schema, verify — belong to the runner), any other exit is agent_exit.
//
// User rules run whatever the exit status: an agent that prints "credit balance is too
// low" and exits 0 is the case they exist for. RetryEligible carries the default column;
// the runner re-derives it with Eligible and the task's lists.
func Classify(o Observation, user []ClassifyRule, preset PresetRules) *Failure {
	f := classify(o, user, preset)
	if f != nil {
		f.RetryEligible = Eligible(f.Class, nil, nil) && !f.NoRetry
	}
	return f
}

func classify(o Observation, user []ClassifyRule, preset PresetRules) *Failure {
	switch {
	case o.RunnerDied:
		return &Failure{Class: ClassRunnerDied, Code: CodeRunnerDied,
			Message: "the mulligan process died during the attempt"}
	case o.Internal != nil:
		return &Failure{Class: ClassInternal, Code: CodeInternal, Message: o.Internal.Error(),
			Hint: "this is a mulligan bug: `mulligan bug` writes a report bundle"}
	case o.Cancelled:
		code := CodeCancelled
		msg := "the attempt was cancelled"
		if o.CancelReason != "" {
			code = o.CancelReason
			msg += " (" + o.CancelReason + ")"
		}
		return &Failure{Class: ClassCancellation, Code: code, Message: msg}
	case o.DeadlineExceeded:
		return &Failure{Class: ClassBudgetExhausted, Code: CodeDeadline,
			Message: "the task's deadline passed during the attempt"}
	case o.TimedOut:
		return &Failure{Class: ClassAttemptTimeout, Code: CodeTimeout,
			Message: "the attempt ran past its timeout" + lastLineSuffix(o.Output)}
	case o.Silent:
		return &Failure{Class: ClassHeartbeatTimeout, Code: CodeSilent,
			Message: "the agent printed nothing for longer than the heartbeat" + lastLineSuffix(o.Output)}
	case o.StartErr != nil:
		return startFailure(o.StartErr)
	case o.Looped != "" && o.Loop != nil:
		return o.Loop.loopFailure(o.Looped)
	}
	for i, r := range user {
		if r.Re == nil {
			continue
		}
		if loc := r.Re.FindIndex(o.Output); loc != nil {
			return &Failure{
				Class:      r.Class,
				Code:       CodeUserRule,
				Message:    fmt.Sprintf("output matched classify rule %d (%s): %s", i+1, r.Pattern, lineAt(o.Output, loc[0])),
				RetryAfter: r.RetryAfter,
			}
		}
	}
	if preset != nil {
		if f := preset.ClassifyOutput(o.ExitCode, o.Output); f != nil {
			if _, err := ParseClass(string(f.Class)); err != nil {
				return &Failure{Class: ClassInternal, Code: CodeBadPresetVerdict,
					Message: fmt.Sprintf("preset returned failure class %q", f.Class)}
			}
			g := *f // the preset's value is not ours to mutate
			return &g
		}
	}
	switch {
	case o.ExitCode == 0:
		return nil
	case o.ExitCode < 0:
		return &Failure{Class: ClassAgentExit, Code: CodeSignal,
			Message: "agent was killed by a signal" + lastLineSuffix(o.Output)}
	}
	suffix := lastLineSuffix(o.Output)
	if et, ok := preset.(interface{ ErrorText([]byte) string }); ok {
		// The CLI's own words (its result's error, a JSON line's message), not a raw line.
		if t := et.ErrorText(o.Output); t != "" {
			suffix = ": " + t
		}
	}
	return &Failure{Class: ClassAgentExit, Code: CodeNonZeroExit,
		Message: fmt.Sprintf("agent exited with status %d", o.ExitCode) + suffix}
}

// startFailure sorts a failed exec: a missing or non-executable command disables the
// agent for the run, so only errors that certainly mean that are agent_missing; anything
// else (out of file descriptors, a busy binary) is our problem, not the agent's.
func startFailure(err error) *Failure {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return &Failure{Class: ClassAgentMissing, Code: CodeNotFound,
			Message: "agent command not found: " + err.Error(),
			Hint:    "install the agent CLI or fix `command` in the task file"}
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC), errors.Is(err, exec.ErrDot):
		return &Failure{Class: ClassAgentMissing, Code: CodeNotExecutable,
			Message: "agent command is not executable: " + err.Error(),
			Hint:    "check the file's mode (chmod +x) and its #! line"}
	}
	return &Failure{Class: ClassInternal, Code: CodeStartFailed,
		Message: "could not start the agent: " + err.Error()}
}

// maxMessageLine bounds the output quoted in a message: messages go into the database,
// `show` tables and the next attempt's prompt.
const maxMessageLine = 200

// lastLineSuffix is ": <last non-blank output line>" or "" when there is none.
func lastLineSuffix(out []byte) string {
	l := lastLine(out)
	if l == "" {
		return ""
	}
	return ": " + l
}

func lastLine(out []byte) string {
	out = bytes.TrimRight(out, " \t\r\n")
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	return clipLine(out)
}

// lineAt returns the line of out holding byte offset at.
func lineAt(out []byte, at int) string {
	start := bytes.LastIndexByte(out[:at], '\n') + 1
	end := bytes.IndexByte(out[at:], '\n')
	if end < 0 {
		end = len(out)
	} else {
		end += at
	}
	return clipLine(out[start:end])
}

func clipLine(b []byte) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
	if len(s) <= maxMessageLine {
		return s
	}
	cut := maxMessageLine
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
