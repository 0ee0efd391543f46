package cmd

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/attempt"
)

// screen is the little of a terminal the status lines use: text, \r, \n, and the CSI sequences
// K (clear to the end of the line), J (clear to the end of the screen), nA (up n rows) and m
// (colours, ignored).
type screen struct {
	rows     [][]rune
	row, col int
}

var csiRe = regexp.MustCompile(`^\x1b\[([0-9;]*)([A-Za-z])`)

func (s *screen) write(b []byte) {
	for len(b) > 0 {
		if m := csiRe.FindSubmatch(b); m != nil {
			n, _ := strconv.Atoi(string(m[1]))
			switch m[2][0] {
			case 'K':
				s.rows[s.row] = s.rows[s.row][:min(s.col, len(s.rows[s.row]))]
			case 'J':
				s.rows[s.row] = s.rows[s.row][:min(s.col, len(s.rows[s.row]))]
				s.rows = s.rows[:s.row+1]
			case 'A':
				s.row = max(0, s.row-n)
			}
			b = b[len(m[0]):]
			continue
		}
		for s.row >= len(s.rows) {
			s.rows = append(s.rows, nil)
		}
		r, size := utf8.DecodeRune(b)
		switch r {
		case '\r':
			s.col = 0
		case '\n':
			s.row, s.col = s.row+1, 0
			for s.row >= len(s.rows) {
				s.rows = append(s.rows, nil)
			}
		default:
			line := s.rows[s.row]
			for len(line) <= s.col {
				line = append(line, ' ')
			}
			line[s.col] = r
			s.rows[s.row] = line
			s.col++
		}
		b = b[size:]
	}
}

func (s *screen) Write(b []byte) (int, error) { s.write(b); return len(b), nil }

func (s *screen) text() string {
	lines := make([]string, len(s.rows))
	for i, r := range s.rows {
		lines[i] = string(r)
	}
	return strings.Join(lines, "\n")
}

// Attempts that run at once (parallel tasks, racing lanes) each have a status line of their
// own; finished steps scroll above them, and the lines go when their attempts finish.
func TestProgressLinePerRunningAttempt(t *testing.T) {
	scr := &screen{}
	p := &progress{w: scr, tty: true, termWidth: func() int { return 60 }}
	p.Event(attempt.ProgressEvent{Kind: attempt.KindAttemptStarted, Task: "api", N: 1, Max: 1, Agent: "claude"})
	p.Event(attempt.ProgressEvent{Kind: attempt.KindAttemptStarted, Task: "web", N: 1, Max: 2, Agent: "codex"})
	p.Output("api", 1, []byte("editing handlers.go\n"))
	p.Output("web", 1, []byte("running npm test\n"))
	live := scr.text()
	for _, want := range []string{"api@1 claude", "editing handlers.go", "web@1 codex", "running npm test", "1 retry left"} {
		if !strings.Contains(live, want) {
			t.Errorf("live lines lack %q:\n%s", want, live)
		}
	}
	if n := len(scr.rows); n != 2 {
		t.Errorf("%d rows while two attempts run, want 2:\n%s", n, live)
	}

	p.Event(attempt.ProgressEvent{Kind: attempt.KindAttemptFinished, Task: "api", N: 1, Files: 3})
	after := scr.text()
	if !strings.HasPrefix(string(scr.rows[0]), "✓ api@1 succeeded") || len(scr.rows) != 2 || !strings.Contains(string(scr.rows[1]), "web@1 codex") {
		t.Errorf("after api finished, want its step line then web's status line:\n%s", after)
	}
	p.Event(attempt.ProgressEvent{Kind: attempt.KindAttemptFinished, Task: "web", N: 1, Failure: &agentcli.Failure{Class: "agent_exit", Message: "exit 1"}})
	p.Event(attempt.ProgressEvent{Kind: attempt.KindRunState, State: "failed"})
	end := scr.text()
	if strings.Contains(end, "●") || !strings.Contains(end, "✗ web@1 failed") {
		t.Errorf("at the end no status line stays and both steps show:\n%s", end)
	}
}

// Without a terminal, two attempts' output interleaved in chunks still comes out whole lines,
// each with its own address.
func TestProgressPlainLinesPerAttempt(t *testing.T) {
	var out bytes.Buffer
	p := &progress{w: &out}
	p.Event(attempt.ProgressEvent{Kind: attempt.KindAttemptStarted, Task: "a", N: 1, Agent: "x"})
	p.Event(attempt.ProgressEvent{Kind: attempt.KindAttemptStarted, Task: "b", N: 1, Agent: "y"})
	p.Output("a", 1, []byte("hel"))
	p.Output("b", 1, []byte("wor"))
	p.Output("a", 1, []byte("lo\n"))
	p.Output("b", 1, []byte("ld\nrest"))
	p.Event(attempt.ProgressEvent{Kind: attempt.KindAttemptFinished, Task: "b", N: 1, Failure: &agentcli.Failure{Class: "agent_exit", Message: "x"}})
	got := out.String()
	for _, want := range []string{"a@1 | hello\n", "b@1 | world\n", "b@1 | rest\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("plain output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "a@1 | wor") {
		t.Errorf("b's output was printed as a's:\n%s", got)
	}
}

// Racing lanes (best_of) are named in their status lines and steps; a lane that lost says it was
// superseded, not failed; a lane's retry names the lane (the next number is not known).
func TestProgressLanes(t *testing.T) {
	scr := &screen{}
	p := &progress{w: scr, tty: true, termWidth: func() int { return 80 }}
	p.Event(attempt.ProgressEvent{Kind: attempt.KindAttemptStarted, Task: "fix", N: 1, Lane: 2, Agent: "claude"})
	p.Event(attempt.ProgressEvent{Kind: attempt.KindAttemptStarted, Task: "fix", N: 2, Lane: 1, Agent: "codex"})
	live := scr.text()
	for _, want := range []string{"fix@1 lane 2 claude", "fix@2 lane 1 codex"} {
		if !strings.Contains(live, want) {
			t.Errorf("live lines lack %q:\n%s", want, live)
		}
	}
	p.Event(attempt.ProgressEvent{Kind: attempt.KindAttemptFinished, Task: "fix", N: 1, Lane: 2, State: "succeeded", Files: 1})
	p.Event(attempt.ProgressEvent{Kind: attempt.KindAttemptFinished, Task: "fix", N: 2, Lane: 1, State: "superseded", Files: 2,
		Failure: &agentcli.Failure{Class: "cancellation", Message: "lane 1 was cancelled: lane 2 won the race with fix@1"}})
	p.Event(attempt.ProgressEvent{Kind: attempt.KindRetry, Task: "fix", Lane: 3})
	p.Event(attempt.ProgressEvent{Kind: attempt.KindRunState, State: "succeeded"})
	end := scr.text()
	for _, want := range []string{"✓ fix@1 succeeded in 0s (lane 2, 1 file changed)", "⊘ fix@2 superseded after 0s (lane 1, 2 files changed, kept in its ref): lane 1 was cancelled", "retrying fix in lane 3"} {
		if !strings.Contains(end, want) {
			t.Errorf("steps lack %q:\n%s", want, end)
		}
	}
	if strings.Contains(end, "failed") {
		t.Errorf("a superseded lane reads as failed:\n%s", end)
	}
}
