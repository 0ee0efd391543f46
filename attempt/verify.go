package attempt

import (
	"context"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/proc"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// VerifyResult is what the verify gate saw.
type VerifyResult struct {
	Failure *agentcli.Failure // nil: the gate passed
	Output  []byte            // the tail of its stdout+stderr
}

// VerifyLimit is how long a task's verify may run: its own `timeout`, else the task's (the
// agent's default when the task sets none either). A verify that never ends by itself (`jest
// --watch`, a server started in the foreground) would otherwise hold the run all night. said is
// how a message names where the limit came from.
func VerifyLimit(def *taskfile.Task) (limit time.Duration, said string) {
	if def.Verify.Timeout > 0 {
		return def.Verify.Timeout, "its verify.timeout"
	}
	limit, _ = agentcli.AgentLimits(def)
	return limit, "the task's timeout; verify.timeout sets its own"
}

// RunVerify runs a task's verify command on the tree the attempt left (dir), within its limit
// (VerifyLimit) and what is left of the task's deadline (left; 0: none), writing its output to
// w. A failure is quality_rejection (budget_exhausted when the deadline ended it); the decisive
// lines go into the next attempt's prompt.
func RunVerify(ctx context.Context, def *taskfile.Task, left time.Duration, dir string, env []string, grace time.Duration, w io.Writer, kill <-chan struct{}) VerifyResult {
	v := def.Verify
	limit, said := VerifyLimit(def)
	deadlineBound := left > 0 && left < limit
	if deadlineBound {
		limit = left
	}
	pr := proc.Run(ctx, proc.Spec{Argv: v.Command, Dir: dir, Env: env, Timeout: limit, Grace: grace, Output: w, Kill: kill, MergeStreams: true})
	cmd := strings.Join(v.Command, " ")
	res := VerifyResult{Output: pr.Tail}
	switch {
	case pr.Cancelled || pr.Killed:
		res.Failure = &agentcli.Failure{Class: taskfile.ClassCancellation, Code: agentcli.CodeCancelled, Message: "the attempt was cancelled during verify"}
	case pr.StartErr != nil:
		res.Failure = verifyStartFailure(cmd, v.Command[0], pr.StartErr)
	case pr.TimedOut && deadlineBound:
		res.Failure = &agentcli.Failure{Class: taskfile.ClassBudgetExhausted, Code: agentcli.CodeDeadline,
			Message: fmt.Sprintf("the task's deadline (%s) passed during verify `%s`", taskfile.FormatDuration(def.Deadline), cmd) + agentcli.LastLineSuffix(pr.Tail)}
	case pr.TimedOut:
		res.Failure = &agentcli.Failure{Class: taskfile.ClassQualityRejection, Code: agentcli.CodeVerifyTimeout,
			Message: fmt.Sprintf("verify `%s` ran out of time after %s (%s)", cmd, taskfile.FormatDuration(limit), said) + agentcli.LastLineSuffix(pr.Tail)}
	case pr.ExitCode != 0:
		res.Failure = &agentcli.Failure{Class: taskfile.ClassQualityRejection, Code: agentcli.CodeVerifyFailed,
			Message: fmt.Sprintf("verify `%s` %s", cmd, exitSays(pr.ExitCode, pr.Signal)) + verifySummary(pr.Tail)}
	}
	return res
}

// verifyStartFailure is a verify whose program could not start, said of that program (the
// agent's words for it would send the user to the agent's command).
func verifyStartFailure(cmd, prog string, err error) *agentcli.Failure {
	f := &agentcli.Failure{Class: taskfile.ClassQualityRejection, Code: agentcli.CodeVerifyFailed,
		Message: fmt.Sprintf("verify `%s` could not start: %s", cmd, err), Hint: "fix verify.command in the task file"}
	code, says := agentcli.StartProblem(err)
	if code == agentcli.CodeStartFailed {
		return f
	}
	f.Message = fmt.Sprintf("verify `%s` could not start: %s %s (%s)", cmd, prog, says, err)
	if code == agentcli.CodeNotFound {
		f.Hint = fmt.Sprintf("install %s (or put it on PATH), or fix verify.command in the task file", prog)
	} else {
		f.Hint = fmt.Sprintf("check %s's mode (chmod +x) and its #! line, or fix verify.command in the task file", prog)
	}
	return f
}

// exitSays is how the verify ended: its status, and what 124 (coreutils timeout's) and 137 or
// SIGKILL (the out-of-memory killer, as a rule) mean, which the output rarely says.
func exitSays(code int, sig syscall.Signal) string {
	switch {
	case code == 124:
		return "exited with status 124 (timed out: `timeout` stopped it)"
	case code == 137:
		return "exited with status 137 (killed by SIGKILL, out of memory as a rule)"
	case code < 0 && sig == syscall.SIGKILL:
		return "was killed by SIGKILL (out of memory, as a rule)"
	case code < 0 && sig != 0:
		return "was killed by signal " + sig.String()
	}
	return fmt.Sprintf("exited with status %d", code)
}
