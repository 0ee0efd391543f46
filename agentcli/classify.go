package agentcli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/mulligan-dev/mulligan/taskfile"
)

// Failure is a classified failed attempt.
type Failure struct {
	Class         taskfile.Class
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
func Classify(o Observation, user []taskfile.ClassifyRule, preset PresetRules) *Failure {
	f := classify(o, user, preset)
	if f != nil {
		f.RetryEligible = taskfile.Eligible(f.Class, nil, nil) && !f.NoRetry
	}
	return f
}

func classify(o Observation, user []taskfile.ClassifyRule, preset PresetRules) *Failure {
	switch {
	case o.RunnerDied:
		return &Failure{Class: taskfile.ClassRunnerDied, Code: CodeRunnerDied,
			Message: "the mulligan process died during the attempt"}
	case o.Internal != nil:
		return &Failure{Class: taskfile.ClassInternal, Code: CodeInternal, Message: o.Internal.Error(),
			Hint: "this is a mulligan bug: `mulligan bug` writes a report bundle"}
	case o.Cancelled:
		code := CodeCancelled
		msg := "the attempt was cancelled"
		if o.CancelReason != "" {
			code = o.CancelReason
			msg += " (" + o.CancelReason + ")"
		}
		return &Failure{Class: taskfile.ClassCancellation, Code: code, Message: msg}
	case o.DeadlineExceeded:
		return &Failure{Class: taskfile.ClassBudgetExhausted, Code: CodeDeadline,
			Message: "the task's deadline passed during the attempt"}
	case o.TimedOut:
		return &Failure{Class: taskfile.ClassAttemptTimeout, Code: CodeTimeout,
			Message: "the attempt ran past its timeout" + LastLineSuffix(o.Output)}
	case o.Silent:
		return &Failure{Class: taskfile.ClassHeartbeatTimeout, Code: CodeSilent,
			Message: "the agent printed nothing for longer than the heartbeat" + LastLineSuffix(o.Output)}
	case o.StartErr != nil:
		return StartFailure(o.StartErr)
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
				Message:    fmt.Sprintf("output matched classify rule %d (%s): %s", i+1, r.Pattern, matchedLine(o.Output, loc, r.Re.FindStringIndex)),
				RetryAfter: r.RetryAfter,
			}
		}
	}
	if preset != nil {
		if f := preset.ClassifyOutput(o.ExitCode, o.Output); f != nil {
			if _, err := taskfile.ParseClass(string(f.Class)); err != nil {
				return &Failure{Class: taskfile.ClassInternal, Code: CodeBadPresetVerdict,
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
		return &Failure{Class: taskfile.ClassAgentExit, Code: CodeSignal,
			Message: "agent was killed by a signal" + LastLineSuffix(o.Output)}
	}
	suffix := LastLineSuffix(o.Output)
	if et, ok := preset.(interface{ ErrorText([]byte) string }); ok {
		// The CLI's own words (its result's error, a JSON line's message), not a raw line.
		if t := et.ErrorText(o.Output); t != "" {
			suffix = ": " + t
		}
	}
	return &Failure{Class: taskfile.ClassAgentExit, Code: CodeNonZeroExit,
		Message: fmt.Sprintf("agent exited with status %d", o.ExitCode) + suffix}
}

// StartFailure sorts a failed exec: a missing or non-executable command disables the
// agent for the run, so only errors that certainly mean that are agent_missing; anything
// else (out of file descriptors, a busy binary) is our problem, not the agent's.
func StartFailure(err error) *Failure {
	switch code, _ := StartProblem(err); code {
	case CodeNotFound:
		return &Failure{Class: taskfile.ClassAgentMissing, Code: code,
			Message: "agent command not found: " + err.Error(),
			Hint:    "install the agent CLI or fix `command` in the task file"}
	case CodeNotExecutable:
		return &Failure{Class: taskfile.ClassAgentMissing, Code: code,
			Message: "agent command is not executable: " + err.Error(),
			Hint:    "check the file's mode (chmod +x) and its #! line"}
	}
	return &Failure{Class: taskfile.ClassInternal, Code: CodeStartFailed,
		Message: "could not start the agent: " + err.Error()}
}

// StartProblem says what a failed exec means for the program it named, whoever runs it (an
// agent, a verify command): code is CodeNotFound ("was not found": not on PATH, no such file,
// or its #! interpreter missing), CodeNotExecutable ("is not executable": its mode, its format)
// or CodeStartFailed ("" : something else, not the program's fault).
func StartProblem(err error) (code, says string) {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return CodeNotFound, "was not found"
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC), errors.Is(err, exec.ErrDot):
		return CodeNotExecutable, "is not executable"
	}
	return CodeStartFailed, ""
}

// maxMessageLine bounds the output quoted in a message: messages go into the database,
// `show` tables and the next attempt's prompt.
const maxMessageLine = 200

// LastLineSuffix is ": <the last thing the output says>" (LastWords) or "" when it says nothing.
func LastLineSuffix(out []byte) string {
	l := LastWords(out)
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

// lineAt returns the line of out holding byte offset at, clipped for a message.
func lineAt(out []byte, at int) string { return clipLine(wholeLineAt(out, at)) }

// wholeLineAt returns the line of out holding byte offset at, as it is.
func wholeLineAt(out []byte, at int) []byte {
	start := bytes.LastIndexByte(out[:at], '\n') + 1
	end := bytes.IndexByte(out[at:], '\n')
	if end < 0 {
		end = len(out)
	} else {
		end += at
	}
	return out[start:end]
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
