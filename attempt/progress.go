package attempt

import (
	"io"
	"time"

	"github.com/mulligan-dev/mulligan/agentcli"
)

// Progress receives what a run does as it happens, for the terminal. It must not block for long:
// it is called from the runner's loop and from the agent's output readers.
type Progress interface {
	Event(ProgressEvent)
	// Output is a chunk of the running attempt's stdout or stderr.
	Output(task string, n int, chunk []byte)
}

// Progress event kinds.
const (
	KindAttemptStarted  = "attempt.started"
	KindAttemptFinished = "attempt.finished"
	KindRetry           = "retry"
	KindTaskState       = "task.state"
	KindRunState        = "run.state"
	KindNote            = "note"   // something the operator should notice (printed with "!")
	KindVerify          = "verify" // the verify command starts (Message: its command line)
)

// ProgressEvent is one thing worth telling the operator.
type ProgressEvent struct {
	Kind     string
	Run      string
	Task     string
	N, Max   int
	Agent    string
	Failure  *agentcli.Failure // attempt.finished: nil on success
	Duration time.Duration
	Delay    time.Duration // retry: the backoff
	Files    int           // attempt.finished: files changed
	Lane     int           // attempt.started, attempt.finished: a racing lane (best_of), 0 outside a race
	State    string        // attempt.finished: the attempt's state; task.state, run.state: theirs
	Reason   string
	Message  string
}

type nopProgress struct{}

func (nopProgress) Event(ProgressEvent)        {}
func (nopProgress) Output(string, int, []byte) {}

// progressWriter tees an attempt's output into its log and the progress display.
type progressWriter struct {
	w    io.Writer
	p    Progress
	task string
	n    int
}

func (pw *progressWriter) Write(b []byte) (int, error) {
	n, err := pw.w.Write(b)
	pw.p.Output(pw.task, pw.n, b)
	return n, err
}
