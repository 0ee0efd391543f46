package attempt

import (
	"bytes"
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

// progressWriter tees an attempt's output into its log and the progress display. The log keeps
// what the agent printed; the display gets its JSON events rendered for a person (render, nil for
// a CLI that prints text): the agent's words and the tools it calls, not raw JSON.
type progressWriter struct {
	w       io.Writer
	p       Progress
	task    string
	n       int
	render  *agentcli.Renderer
	pending []byte // the start of a JSON line still to come
}

func (pw *progressWriter) Write(b []byte) (int, error) {
	n, err := pw.w.Write(b)
	if pw.render == nil {
		pw.p.Output(pw.task, pw.n, b)
		return n, err
	}
	data := append(pw.pending, b...)
	var out []byte
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		out = append(out, pw.render.Line(data[:i+1])...)
		data = data[i+1:]
	}
	// A partial line that is no JSON is shown as it comes (a prompt, a progress bar); a JSON
	// event waits for its end, unless it never ends.
	if t := bytes.TrimLeft(data, " \t"); len(t) > 0 && (t[0] != '{' || len(data) > 1<<20) {
		out = append(out, pw.render.Line(data)...)
		data = nil
	}
	pw.pending = append(pw.pending[:0], data...)
	if len(out) > 0 {
		pw.p.Output(pw.task, pw.n, out)
	}
	return n, err
}

// flush shows what the renderer still holds once the agent has ended.
func (pw *progressWriter) flush() {
	if pw.render == nil {
		return
	}
	out := append(pw.render.Line(pw.pending), pw.render.Flush()...)
	pw.pending = nil
	if len(out) > 0 {
		pw.p.Output(pw.task, pw.n, out)
	}
}
