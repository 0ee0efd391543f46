package cmd

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/fatih/color"
	"github.com/mattn/go-runewidth"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/store"
)

// progress renders a run as it happens on standard error: on a terminal one live status line
// per running attempt (task, attempt n/max, agent, elapsed, last output line) above which
// finished steps scroll — tasks that run at once (parallel isolated tasks, racing lanes) each
// have their own; elsewhere plain lines, the agent's output prefixed with its address.
type progress struct {
	w     io.Writer
	tty   bool
	quiet bool // -o json: no agent output echoed, only the step lines

	mu      sync.Mutex
	running []*liveAttempt // in the order they started
	stop    chan struct{}

	termWidth  func() int // the terminal's width now; nil: 80
	drawnCells []int      // display cells of each status line drawn last (nil: none drawn)
}

// liveAttempt is one running attempt's status line, and its unfinished output line (plain mode).
type liveAttempt struct {
	task     string
	n, max   int
	lane     int // a racing lane (best_of), 0 outside a race
	agent    string
	started  time.Time
	lastLine string
	partial  []byte
}

func newProgress(ios *IOStreams, quiet bool) *progress {
	return &progress{w: ios.ErrOut, tty: ios.IsStderrTTY(), quiet: quiet, termWidth: ios.StderrWidth}
}

// attempt is the running attempt task@n, or nil.
func (p *progress) attempt(task string, n int) *liveAttempt {
	for _, a := range p.running {
		if a.task == task && a.n == n {
			return a
		}
	}
	return nil
}

// finish forgets the running attempt task@n, printing its unfinished output line first.
func (p *progress) finish(task string, n int) {
	for i, a := range p.running {
		if a.task == task && a.n == n {
			p.flushPartial(a)
			p.running = append(p.running[:i], p.running[i+1:]...)
			return
		}
	}
}

func (p *progress) Event(ev attempt.ProgressEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Kind {
	case attempt.KindAttemptStarted:
		p.finish(ev.Task, ev.N)
		p.running = append(p.running, &liveAttempt{task: ev.Task, n: ev.N, max: ev.Max, lane: ev.Lane, agent: ev.Agent, started: time.Now()})
		if p.tty {
			p.startTicker()
			p.draw()
		} else {
			p.line("%s %s@%d started (%sagent %s%s)", bullet("▶"), ev.Task, ev.N, laneOf(ev.Lane), ev.Agent, retriesLeft(ev.Max-ev.N))
		}
	case attempt.KindAttemptFinished:
		p.finish(ev.Task, ev.N)
		if len(p.running) == 0 {
			p.stopTicker()
		}
		switch {
		case ev.State == store.AttemptSuperseded:
			why := ""
			if ev.Failure != nil {
				why = ": " + firstLine(ev.Failure.Message)
			}
			p.line("%s %s@%d superseded after %s (%s%d file%s changed, kept in its ref)%s", bullet("⊘"), ev.Task, ev.N, roundDuration(ev.Duration),
				laneOf(ev.Lane), ev.Files, plural(ev.Files), why)
		case ev.State == store.AttemptCancelled:
			p.line("%s %s@%d cancelled after %s (%s%d file%s changed, kept in its ref)", bullet("⊘"), ev.Task, ev.N, roundDuration(ev.Duration),
				laneOf(ev.Lane), ev.Files, plural(ev.Files))
		case ev.Failure == nil:
			p.line("%s %s@%d succeeded in %s (%s%d file%s changed)", color.GreenString("✓"), ev.Task, ev.N, roundDuration(ev.Duration), laneOf(ev.Lane), ev.Files, plural(ev.Files))
		default:
			lane := ""
			if ev.Lane > 0 {
				lane = fmt.Sprintf(" (lane %d)", ev.Lane)
			}
			p.line("%s %s@%d failed in %s%s: %s: %s", color.RedString("✗"), ev.Task, ev.N, roundDuration(ev.Duration), lane,
				color.New(color.Bold).Sprint(ev.Failure.Class), firstLine(ev.Failure.Message))
		}
	case attempt.KindRetry:
		if ev.Lane > 0 { // the lanes share the task's numbers: the next one is not known yet
			p.line("%s retrying %s in lane %d in %s", bullet("↻"), ev.Task, ev.Lane, roundDuration(ev.Delay))
		} else {
			p.line("%s retrying %s as %s@%d in %s", bullet("↻"), ev.Task, ev.Task, ev.N, roundDuration(ev.Delay))
		}
	case attempt.KindTaskState:
		why := ""
		if ev.Message != "" { // why no retry follows, and what changes that
			why = ": " + ev.Message
		}
		if ev.Reason != "" {
			p.line("%s task %s %s (%s)%s", bullet("•"), ev.Task, stateColor(ev.State), ev.Reason, why)
		} else {
			p.line("%s task %s %s%s", bullet("•"), ev.Task, stateColor(ev.State), why)
		}
	case attempt.KindRunState:
		for _, a := range p.running {
			p.flushPartial(a)
		}
		p.running = nil
		p.stopTicker()
	case attempt.KindVerify:
		p.line("%s %s: verify: %s", bullet("…"), ev.Task, ev.Message)
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
	a := p.attempt(task, n)
	if a == nil { // output after its attempt was recorded finished: shown, not kept
		a = &liveAttempt{task: task, n: n}
		defer p.flushPartial(a)
	}
	if l := lastNonEmptyLine(chunk); l != "" {
		a.lastLine = l
	}
	if p.tty {
		p.draw()
		return
	}
	if p.quiet {
		return
	}
	// Line by line per attempt, so attempts that run at once never share a line.
	data := append(a.partial, chunk...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(p.w, "%s@%d | %s\n", task, n, strings.TrimRight(string(data[:i]), "\r"))
		data = data[i+1:]
	}
	a.partial = append([]byte(nil), data...)
	if len(a.partial) > 4096 { // a line that never ends is still shown
		fmt.Fprintf(p.w, "%s@%d | %s\n", task, n, a.partial)
		a.partial = nil
	}
}

func (p *progress) flushPartial(a *liveAttempt) {
	if len(a.partial) > 0 && !p.tty && !p.quiet {
		fmt.Fprintf(p.w, "%s@%d | %s\n", a.task, a.n, a.partial)
	}
	a.partial = nil
}

// line prints a finished step, above the live status lines on a terminal.
func (p *progress) line(format string, args ...any) {
	if p.tty {
		fmt.Fprint(p.w, p.erase(p.width()))
		p.drawnCells = nil
	}
	fmt.Fprintf(p.w, format+"\n", args...)
	if p.tty {
		p.draw()
	}
}

// draw redraws the live status lines, one per running attempt. None is ever longer than the
// terminal's width less one column (a line that fills the last column wraps on some terminals,
// and every redraw would then leave a stale copy behind), measured in display cells, with the
// agent's output stripped of escape sequences and control characters first. The cursor stays at
// the end of the last line.
func (p *progress) draw() {
	if len(p.running) == 0 {
		return
	}
	width := p.width()
	var b strings.Builder
	b.WriteString(p.erase(width))
	cells := make([]int, 0, len(p.running))
	for i, a := range p.running {
		elapsed := time.Since(a.started).Truncate(time.Second)
		lane := ""
		if a.lane > 0 {
			lane = fmt.Sprintf("lane %d ", a.lane)
		}
		head := fmt.Sprintf("%s@%d %s%s %s", a.task, a.n, lane, a.agent, elapsed)
		if left := retriesLeft(a.max - a.n); left != "" {
			head += " (" + strings.TrimPrefix(left, ", ") + ")"
		}
		line := statusLine(head, a.lastLine, width)
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(line)
		cells = append(cells, runewidth.StringWidth(ansiEscape.ReplaceAllString(line, "")))
	}
	fmt.Fprint(p.w, b.String())
	p.drawnCells = cells
}

// erase returns the sequence that removes the status lines drawn last: back to the first one's
// row and clear to the end of the screen. After the terminal was made narrower, terminals that
// reflow (tmux, VTE, iTerm2, kitty, Windows Terminal) have wrapped each line onto several rows:
// those rows are climbed too.
func (p *progress) erase(width int) string {
	if len(p.drawnCells) == 0 {
		return ""
	}
	up := len(p.drawnCells) - 1
	for _, c := range p.drawnCells {
		if c >= width {
			up += c / width
		}
	}
	if up == 0 {
		return "\r\033[K"
	}
	return fmt.Sprintf("\r\033[%dA\033[J", up)
}

// width is the terminal's width in columns, read again at each redraw so a resized window
// (SIGWINCH) is followed; 80 when it cannot be read.
func (p *progress) width() int {
	if p.termWidth != nil {
		if w := p.termWidth(); w > 0 {
			return w
		}
	}
	return 80
}

// statusLine fits "● HEAD │ LAST" into width-1 display cells: the last output line is cut first,
// then the head itself.
func statusLine(head, last string, width int) string {
	room := width - 1 - 2 // "● "
	if room < 1 {
		return ""
	}
	head = fitWidth(head, room)
	line := color.CyanString("●") + " " + head
	last = cleanLine(last)
	if rest := room - runewidth.StringWidth(head) - 3; last != "" && rest >= 8 { // " │ "
		line += " │ " + fitWidth(last, rest)
	}
	return line
}

// fitWidth cuts s to at most n display cells, marking a cut with "…".
func fitWidth(s string, n int) string {
	if runewidth.StringWidth(s) <= n {
		return s
	}
	return runewidth.Truncate(s, n, "…")
}

// ansiEscape matches CSI and OSC escape sequences an agent's output may carry (colors, cursor moves,
// titles).
var ansiEscape = lazyre.New(`\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)

// cleanLine removes escape sequences and control characters (tabs become spaces) so the status line
// is exactly what its width says.
func cleanLine(s string) string {
	s = ansiEscape.ReplaceAllString(s, "")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return -1
		}
		return r
	}, s)
}

// startTicker redraws the status line once a second and at once when the terminal is resized.
func (p *progress) startTicker() {
	if p.stop != nil {
		return
	}
	p.stop = make(chan struct{})
	stop := p.stop
	winch, unwatch := watchResize()
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		defer unwatch()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			case <-winch:
			}
			p.mu.Lock()
			if p.stop == stop { // not stopped while waiting for the lock
				p.draw()
			}
			p.mu.Unlock()
		}
	}()
}

func (p *progress) stopTicker() {
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	if p.tty {
		fmt.Fprint(p.w, p.erase(p.width()))
		p.drawnCells = nil
	}
}

// retriesLeft says how many automatic retries remain after this attempt, when any do. (The attempt
// count itself is not a fixed "n of m": attempts parked on a quota wall do not use up a retry.)
// laneOf names a racing lane ("lane 2, "), "" outside a race.
func laneOf(lane int) string {
	if lane == 0 {
		return ""
	}
	return fmt.Sprintf("lane %d, ", lane)
}

func retriesLeft(n int) string {
	switch {
	case n <= 0:
		return ""
	case n == 1:
		return ", 1 retry left"
	}
	return fmt.Sprintf(", %d retries left", n)
}

func bullet(s string) string { return color.New(color.Faint).Sprint(s) }

// stateColor paints a state by its first word, so "blocked (circuit-tripped)" is painted too.
func stateColor(state string) string {
	word, _, _ := strings.Cut(state, " ")
	switch word {
	case "succeeded":
		return color.GreenString(state)
	case "failed", "cancelled", "skipped":
		return color.RedString(state)
	case "blocked", "waiting_quota", "waiting_approval", "paused":
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
