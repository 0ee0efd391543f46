package cmd

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Exit codes: the table of SPEC §8, and the only place that defines them.
const (
	ExitOK          = 0   // success
	ExitFailed      = 1   // the run failed (a task failed or was skipped), or a command failed
	ExitUsage       = 2   // usage or authoring error
	ExitBlocked     = 3   // a task waits for a decision (prompt / stop / retry-task)
	ExitParked      = 4   // parked: resumable without a decision (quota reset, pause, approval)
	ExitCancelled   = 5   // cancelled or killed
	ExitRefused     = 6   // unsafe without --force
	ExitInterrupted = 130 // interrupted (SIGINT)
)

// exitCodeHelp is printed at the end of `mulligan --help`.
const exitCodeHelp = `EXIT CODES:
   0    success
   1    the run failed (a task failed or was skipped)
   2    usage or authoring error
   3    blocked: a task waits for a decision (prompt / stop / retry-task)
   4    parked: resumable without a decision (a quota reset, a pause, an approval)
   5    cancelled or killed
   6    refused: unsafe without --force (unresolved side effects, active run, dirty tree conflict)
   130  interrupted (SIGINT)
`

// Error is an error a person can act on: a message, the exit code it maps to, and hint lines that
// name the command to run next.
type Error struct {
	Code  int
	Msg   string
	Hints []string
	Err   error // cause, for errors.Is/As; not printed separately
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// usageError is exit 2: the command line is wrong.
func usageError(hint string, format string, args ...any) *Error {
	e := &Error{Code: ExitUsage, Msg: fmt.Sprintf(format, args...)}
	if hint != "" {
		e.Hints = []string{hint}
	}
	return e
}

// withHint wraps err as an *Error with a code and hints, keeping err as its cause.
func withHint(code int, err error, hints ...string) *Error {
	return &Error{Code: code, Msg: err.Error(), Hints: hints, Err: err}
}

// multiError is several errors reported at once (every problem of a task file); its exit code
// is the first one's.
type multiError struct{ errs []*Error }

func (m *multiError) Error() string {
	lines := make([]string, len(m.errs))
	for i, e := range m.errs {
		lines[i] = e.Msg
	}
	return strings.Join(lines, "\n")
}

// exitError carries an exit code that is not an error to print (a run that ended blocked, say).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// exitCode maps any error to the exit-code table; classify is extended by each package's errors.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var m *multiError
	if errors.As(err, &m) && len(m.errs) > 0 {
		return m.errs[0].Code
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitFailed
}

// printError prints err in the house style: `mulligan: error: message` then `hint: …` lines.
func printError(w io.Writer, err error) {
	var ee exitError
	if err == nil || errors.As(err, &ee) {
		return
	}
	var m *multiError
	if errors.As(err, &m) {
		for _, e := range m.errs {
			printError(w, e)
		}
		return
	}
	msg := strings.TrimRight(err.Error(), ".\n ")
	fmt.Fprintf(w, "mulligan: error: %s\n", msg)
	var e *Error
	if errors.As(err, &e) {
		for _, h := range e.Hints {
			fmt.Fprintf(w, "hint: %s\n", h)
		}
	}
}
