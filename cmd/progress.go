package cmd

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/fatih/color"

	"github.com/mulligan-dev/mulligan/attempt"
)

// progress renders a run as it happens on standard error: on a terminal one live status line
// per running attempt (task, attempt n/max, agent, elapsed, last output line) above which
// finished steps scroll; elsewhere plain lines, the agent's output prefixed with its address.
type progress struct {
	w     io.Writer
	tty   bool
	quiet bool // -o json: no agent output echoed, only the step lines

	mu       sync.Mutex
	task     string
	n, max   int
	agent    string
	started  time.Time
	lastLine string
	partial  []byte // an unfinished output line (plain mode)
	drawn    bool
	stop     chan struct{}
}

func newProgress(ios *IOStreams, quiet bool) *progress {
	return &progress{w: ios.ErrOut, tty: ios.IsStderrTTY(), quiet: quiet}
}

func (p *progress) Event(ev attempt.ProgressEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Kind {
	case attempt.KindAttemptStarted:
		p.flushPartial()
		p.task, p.n, p.max, p.agent, p.started, p.lastLine = ev.Task, ev.N, ev.Max, ev.Agent, time.Now(), ""
		if p.tty {
			p.startTicker()
			p.draw()
		} else {
			p.line("%s %s@%d started (attempt %d of %d, agent %s)", bullet("▶"), ev.Task, ev.N, ev.N, ev.Max, ev.Agent)
		}
	case attempt.KindAttemptFinished:
		p.flushPartial()
		p.stopTicker()
		if ev.Failure == nil {
			p.line("%s %s@%d succeeded in %s (%d files changed)", color.GreenString("✓"), ev.Task, ev.N, roundDuration(ev.Duration), ev.Files)
		} else {
			p.line("%s %s@%d failed in %s: %s: %s", color.RedString("✗"), ev.Task, ev.N, roundDuration(ev.Duration),
				color.New(color.Bold).Sprint(ev.Failure.Class), firstLine(ev.Failure.Message))
		}
		p.task = ""
	case attempt.KindRetry:
		p.line("%s retrying %s as %s@%d in %s", bullet("↻"), ev.Task, ev.Task, ev.N, roundDuration(ev.Delay))
	case attempt.KindTaskState:
		if ev.Reason != "" {
			p.line("%s task %s %s (%s)", bullet("•"), ev.Task, stateColor(ev.State), ev.Reason)
		} else {
			p.line("%s task %s %s", bullet("•"), ev.Task, stateColor(ev.State))
		}
	case attempt.KindRunState:
		p.stopTicker()
	case attempt.KindNote:
		if ev.Task == "" { // about the run as a whole
			p.line("%s %s", bullet("!"), ev.Message)
		} else {
			p.line("%s %s: %s", bullet("!"), ev.Task, ev.Message)
		}
	}
}

func (p *progress) Output(task string, n int, chunk []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := lastNonEmptyLine(chunk); l != "" {
		p.lastLine = l
	}
	if p.tty {
		p.draw()
		return
	}
	if p.quiet {
		return
	}
	data := append(p.partial, chunk...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(p.w, "%s@%d | %s\n", task, n, strings.TrimRight(string(data[:i]), "\r"))
		data = data[i+1:]
	}
	p.partial = append([]byte(nil), data...)
	if len(p.partial) > 4096 { // a line that never ends is still shown
		fmt.Fprintf(p.w, "%s@%d | %s\n", task, n, p.partial)
		p.partial = nil
	}
}

func (p *progress) flushPartial() {
	if len(p.partial) > 0 && !p.tty && !p.quiet {
		fmt.Fprintf(p.w, "%s@%d | %s\n", p.task, p.n, p.partial)
	}
	p.partial = nil
}

// line prints a finished step, above the live status line on a terminal.
func (p *progress) line(format string, args ...any) {
	if p.tty && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
	fmt.Fprintf(p.w, format+"\n", args...)
	if p.tty && p.task != "" {
		p.draw()
	}
}

func (p *progress) draw() {
	if p.task == "" {
		return
	}
	elapsed := time.Since(p.started).Truncate(time.Second)
	status := fmt.Sprintf("%s %s@%d/%d %s %s", color.CyanString("●"), p.task, p.n, p.max, p.agent, elapsed)
	if p.lastLine != "" {
		status += " │ " + clip(p.lastLine, 80)
	}
	fmt.Fprint(p.w, "\r\033[K"+status)
	p.drawn = true
}

func (p *progress) startTicker() {
	if p.stop != nil {
		return
	}
	p.stop = make(chan struct{})
	stop := p.stop
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.draw()
				p.mu.Unlock()
			}
		}
	}()
}

func (p *progress) stopTicker() {
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	if p.tty && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func bullet(s string) string { return color.New(color.Faint).Sprint(s) }

func stateColor(state string) string {
	switch state {
	case "succeeded":
		return color.GreenString(state)
	case "failed", "cancelled", "skipped":
		return color.RedString(state)
	case "blocked", "waiting_quota", "paused":
		return color.YellowString(state)
	}
	return state
}

func lastNonEmptyLine(b []byte) string {
	s := strings.TrimRight(string(b), "\r\n \t")
	if i := strings.LastIndexAny(s, "\r\n"); i >= 0 {
		s = s[i+1:]
	}
	return strings.ToValidUTF8(s, "")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
