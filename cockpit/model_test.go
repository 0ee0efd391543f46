package cockpit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mulligan-dev/mulligan/store"
)

var t0 = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

// board is two active runs and a finished one: a race with two lanes in flight (one agent on
// its second rung, near its timeout), a task waiting for approval, a blocked task, a silent
// one, and an agent behind a quota wall.
func board() *Board {
	files := 3
	cost := 0.25
	return &Board{
		Now: t0,
		Runs: []RunView{
			{ID: "aaaa1111", State: store.RunRunning, StartedAt: t0.Add(-5 * time.Minute), CostUSD: &cost, MaxCost: store.Ptr(2.0),
				LastEvent: &store.Event{Time: t0.Add(-time.Second), Type: "attempt.started", Task: "fix", Attempt: 2},
				Tasks: []TaskView{
					{Run: "aaaa1111", ID: "fix", State: store.TaskRunning, BestOf: 2,
						Attempts: []store.Attempt{
							{N: 1, Lane: 1, Agent: "claude", State: store.AttemptRunning, Log: "/nonexistent/1.log"},
							{N: 2, Lane: 2, Agent: "codex", State: store.AttemptRunning, Log: "/nonexistent/2.log"},
						},
						Live: []Live{
							{N: 1, Lane: 1, Agent: "claude", Rung: 1, Rungs: 2, StartedAt: t0.Add(-90 * time.Second), Timeout: 10 * time.Minute, LastLine: "editing parser.go", FilesChanged: &files, CostUSD: &cost},
							{N: 2, Lane: 2, Agent: "codex", Rung: 2, Rungs: 2, StartedAt: t0.Add(-9 * time.Minute), Timeout: 10 * time.Minute, LastLine: "running go test ./..."},
						}},
					{Run: "aaaa1111", ID: "deploy", State: store.TaskWaitingApproval, Reason: "needs-approval",
						Attempts: []store.Attempt{{N: 3, Agent: "claude", State: store.AttemptSucceeded}}},
					{Run: "aaaa1111", ID: "docs", State: store.TaskRunning, SilentAt: store.Ptr(t0.Add(-2 * time.Minute)),
						Attempts: []store.Attempt{{N: 4, Agent: "claude", State: store.AttemptRunning}},
						Live:     []Live{{N: 4, Agent: "claude", StartedAt: t0.Add(-4 * time.Minute)}}},
				}},
			{ID: "bbbb2222", State: store.RunBlocked, StartedAt: t0.Add(-time.Hour),
				Tasks: []TaskView{
					{Run: "bbbb2222", ID: "merge", State: store.TaskBlocked, Reason: "apply-conflict"},
					{Run: "bbbb2222", ID: "lint", State: store.TaskWaitingQuota, ResumeAt: store.Ptr(t0.Add(12*time.Minute + 3*time.Second))},
				}},
			{ID: "cccc3333", State: store.RunSucceeded, StartedAt: t0.Add(-2 * time.Hour), FinishedAt: store.Ptr(t0.Add(-time.Hour)),
				Tasks: []TaskView{{Run: "cccc3333", ID: "main", State: store.TaskSucceeded,
					Attempts: []store.Attempt{{N: 1, Agent: "claude", State: store.AttemptSucceeded}}}}},
		},
		Walls: []Wall{{Agent: "gemini", Run: "bbbb2222", Until: t0.Add(12*time.Minute + 3*time.Second)}},
	}
}

// recorder is the Deps of a test: a fixed board, and the commands the model ran.
type recorder struct {
	b    *Board
	ran  [][]string
	out  string
	fail bool
}

func (r *recorder) deps() Deps {
	return Deps{
		Load: func(context.Context) (*Board, error) { return r.b, nil },
		Command: func(_ context.Context, args ...string) (string, error) {
			r.ran = append(r.ran, args)
			if r.fail {
				return r.out, errors.New("exit status 6")
			}
			return r.out, nil
		},
		Detail: func(_ context.Context, b *Board, run, task string) (string, error) {
			return "detail of " + run + "/" + task, nil
		},
		Log:  func(path string) (string, int64) { return "log line 1\nlog line 2", 20 },
		Tick: time.Millisecond, // the ticks a test runs are the ones it sends
	}
}

// open is the model as `top` opens it: the first board read, 80 columns by 40 rows.
func open(t *testing.T, r *recorder) *Model {
	t.Helper()
	m := New(context.Background(), r.deps(), false)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 40})
	m.Init()
	b, err := r.deps().Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m.Update(boardMsg{b: b})
	return m
}

// press sends keys and runs the command each returns (not the clock's tick), as the program
// would; quit says whether the last asked the program to quit.
func press(m *Model, keys ...string) (quit bool) {
	for _, k := range keys {
		var msg tea.KeyPressMsg
		switch k {
		case "enter":
			msg = tea.KeyPressMsg{Code: tea.KeyEnter}
		case "esc":
			msg = tea.KeyPressMsg{Code: tea.KeyEscape}
		case "down":
			msg = tea.KeyPressMsg{Code: tea.KeyDown}
		case "space":
			msg = tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
		default:
			msg = tea.KeyPressMsg{Code: []rune(k)[0], Text: k}
		}
		_, cmd := m.Update(msg)
		for cmd != nil {
			out := cmd()
			if _, ok := out.(tea.QuitMsg); ok {
				return true
			}
			_, cmd = m.Update(out)
		}
	}
	return false
}

func checkFrame(t *testing.T, m *Model) string {
	t.Helper()
	f := m.Frame()
	lines := strings.Split(f, "\n")
	if len(lines) != m.height {
		t.Errorf("the frame has %d lines, want %d", len(lines), m.height)
	}
	for _, l := range lines {
		if w := ansi.StringWidth(l); w > m.width {
			t.Errorf("line wider than %d columns (%d): %q", m.width, w, l)
		}
	}
	return f
}

func TestFrameOnOpen(t *testing.T) {
	m := open(t, &recorder{b: board()})
	f := checkFrame(t, m)
	if strings.Contains(f, "\x1b[") && !strings.Contains(f, "\x1b[7m") {
		t.Errorf("without color the frame holds escapes other than the selection's:\n%q", f)
	}
	f = ansi.Strip(f)
	want := []string{
		"mulligan top  2 active runs · 3 wait for you · spend $0.25",
		"WAITS FOR YOU",
		"▸ aaaa1111/deploy            waits for approval: a approve, r reject",
		"  aaaa1111/docs              silent since",
		"  bbbb2222/merge             blocked: its change conflicts with the tree",
		"RUNS",
		"  run aaaa1111  running  3 tasks  5m00s  $0.25 of $2.00",
		"    " + t0.Add(-time.Second).Local().Format(time.TimeOnly) + " attempt.started fix@2",
		"fix              running  races 2 lanes",
		"lane 1  @1 claude rung 1/2  1m30s of 10m00s  files 3  $0.25",
		"› editing parser.go",
		"lane 2  @2 codex rung 2/2  9m00s of 10m00s  files -  $-",
		"› running go test ./...",
		"deploy           waiting_approval (needs-approval)  !",
		"@4 claude  4m00s  files -  $-",
		"run bbbb2222  blocked",
		"lint             waiting_quota  resumes in 12m03s",
		"FINISHED",
		"run cccc3333  succeeded  1 task  1h00m",
		"QUOTA WALLS",
		"gemini         resets ",
		"in 12m03s    run bbbb2222",
		footerKeys,
	}
	last := -1
	for _, w := range want {
		i := strings.Index(f, w)
		if i < 0 {
			t.Errorf("the frame lacks %q:\n%s", w, f)
			continue
		}
		if i < last {
			t.Errorf("%q is out of order:\n%s", w, f)
		}
		last = i
	}
	// The waiting tasks come before the runs, and the first is selected.
	if strings.Index(f, "WAITS FOR YOU") > strings.Index(f, "RUNS") {
		t.Errorf("attention is not first:\n%s", f)
	}
}

func TestClockMovesWithoutReading(t *testing.T) {
	r := &recorder{b: board()}
	m := open(t, r)
	loads := 0
	m.deps.Load = func(context.Context) (*Board, error) { loads++; return r.b, nil }
	m.deps.Changed = func() bool { return false }
	m.Update(tickMsg(t0.Add(10 * time.Second)))
	if loads != 0 {
		t.Errorf("a tick with nothing changed read the database")
	}
	f := ansi.Strip(m.Frame())
	for _, w := range []string{"1m40s of 10m00s", "in 11m53s"} {
		if !strings.Contains(f, w) {
			t.Errorf("after 10s the frame lacks %q:\n%s", w, f)
		}
	}
	m.deps.Changed = func() bool { return true }
	_, cmd := m.Update(tickMsg(t0.Add(11 * time.Second)))
	if cmd == nil {
		t.Fatal("a tick returned no command")
	}
	// tea.Batch: run the load among its commands (not the tick, which waits).
	for _, c := range cmd().(tea.BatchMsg) {
		if out, ok := c().(boardMsg); ok {
			m.Update(out)
			break
		}
	}
	if loads != 1 {
		t.Errorf("a tick after a change read %d boards, want 1", loads)
	}
}

// reload gives the model the next board, changed by change, and returns the selected row's key.
func reload(m *Model, change func(b *Board)) string {
	b := board()
	change(b)
	m.Update(boardMsg{b: b})
	return m.items[m.sel].key(m.board)
}

func TestSelectionFollowsItsItem(t *testing.T) {
	m := open(t, &recorder{b: board()})
	if got := m.items[m.sel].key(m.board); got != "!aaaa1111/deploy" {
		t.Fatalf("top opened on %s, want the first task waiting: !aaaa1111/deploy", got)
	}
	// deploy was rejected and runs again: it leaves the waiting list, the selection follows it
	// to its run's rows.
	if got := reload(m, func(b *Board) { b.Runs[0].Tasks[1].State = store.TaskRunning }); got != "aaaa1111/deploy" {
		t.Errorf("selected %s, want aaaa1111/deploy", got)
	}
	press(m, "g", "j", "j", "j") // docs, merge, run aaaa1111, fix
	if got := m.items[m.sel].key(m.board); got != "aaaa1111/fix" {
		t.Fatalf("selected %s, want aaaa1111/fix", got)
	}
	// The approval is decided: one row fewer above, fix stays selected.
	if got := reload(m, func(b *Board) { b.Runs[0].Tasks[1].State = store.TaskSucceeded }); got != "aaaa1111/fix" {
		t.Errorf("after a reload selected %s, want aaaa1111/fix", got)
	}
	if f := ansi.Strip(m.Frame()); !strings.Contains(f, "▸   ● fix ") {
		t.Errorf("the selection mark is not on fix:\n%s", f)
	}
}

func TestKeysRunTheCommands(t *testing.T) {
	r := &recorder{b: board(), out: "approve: deploy@3 accepted; task deploy succeeded\nrun aaaa1111 continues in the background (pid 42)\n"}
	m := open(t, r)
	press(m, "a")
	press(m, "r", "u", "s", "e", "space")
	m.Update(tea.PasteMsg{Content: "v2"}) // pasted text is typed text
	press(m, "enter")
	press(m, "p")
	press(m, "c", "n") // not confirmed: nothing runs
	press(m, "c", "y")
	press(m, "R")
	want := [][]string{
		{"approve", "aaaa1111/deploy", "--detach"},
		{"reject", "aaaa1111/deploy", "use v2", "--detach"},
		{"pause", "aaaa1111"},
		{"cancel", "aaaa1111"},
		{"resume", "aaaa1111", "--detach"},
	}
	if len(r.ran) != len(want) {
		t.Fatalf("ran %q, want %q", r.ran, want)
	}
	for i := range want {
		if strings.Join(r.ran[i], " ") != strings.Join(want[i], " ") {
			t.Errorf("command %d: %q, want %q", i, r.ran[i], want[i])
		}
	}
	if f := m.Frame(); !strings.Contains(f, "run aaaa1111 continues in the background (pid 42)") {
		t.Errorf("the command's message is not in the footer:\n%s", f)
	}
}

func TestRefusalShowsTheCommandsMessage(t *testing.T) {
	r := &recorder{b: board(), fail: true,
		out: "mulligan: error: task merge of run bbbb2222 is blocked: not waiting for approval\nhint: approve and reject decide a task waiting for approval\n"}
	m := open(t, r)
	press(m, "j", "j", "a") // merge
	if len(r.ran) != 1 || r.ran[0][1] != "bbbb2222/merge" {
		t.Fatalf("ran %q", r.ran)
	}
	f := checkFrame(t, m)
	for _, w := range []string{"mulligan: error: task merge of run bbbb2222 is blocked", "hint: approve and reject decide"} {
		if !strings.Contains(f, w) {
			t.Errorf("the footer lacks %q:\n%s", w, f)
		}
	}
}

func TestPanes(t *testing.T) {
	r := &recorder{b: board(), out: "diff --git a/x b/x\n+new line\n"}
	m := open(t, r)
	press(m, "enter")
	if f := m.Frame(); !strings.Contains(f, "detail of aaaa1111/deploy") {
		t.Errorf("enter did not open the detail:\n%s", f)
	}
	press(m, "esc", "d")
	if got := strings.Join(r.ran[len(r.ran)-1], " "); got != "diff aaaa1111/deploy@3" {
		t.Errorf("d ran %q", got)
	}
	if f := m.Frame(); !strings.Contains(f, "+new line") || !strings.Contains(f, "diff aaaa1111/deploy@3") {
		t.Errorf("d did not show the diff:\n%s", f)
	}
	press(m, "esc", "l")
	if f := m.Frame(); !strings.Contains(f, "log line 2") || !strings.Contains(f, "(following)") {
		t.Errorf("l did not show the log:\n%s", f)
	}
	for _, l := range helpLines() {
		if ansi.StringWidth(l) > 80 {
			t.Errorf("a help line is wider than 80 columns: %q", l)
		}
	}
	press(m, "esc", "?")
	if f := m.Frame(); !strings.Contains(f, "cancel the run (mulligan cancel), after a y") {
		t.Errorf("? did not show the help:\n%s", f)
	}
	if !press(m, "x", "q") {
		t.Error("q did not quit")
	}
}

func TestNarrowAndColor(t *testing.T) {
	r := &recorder{b: board()}
	m := New(context.Background(), r.deps(), true)
	m.Update(tea.WindowSizeMsg{Width: 50, Height: 12})
	m.Update(boardMsg{b: board()})
	f := checkFrame(t, m)
	if !strings.Contains(f, "\x1b[") {
		t.Error("with color the frame holds no escape")
	}
	// The selection stays on screen when the list is longer than the window, a message of
	// three lines in the footer too.
	press(m, "G")
	if f := ansi.Strip(checkFrame(t, m)); !strings.Contains(f, "▸   ✓ main") {
		t.Errorf("the last item is not on screen:\n%s", f)
	}
	m.Update(commandMsg{args: []string{"pause"}, out: "one\ntwo\nthree\n"})
	if f := ansi.Strip(checkFrame(t, m)); !strings.Contains(f, "▸   ✓ main") || !strings.Contains(f, "three") {
		t.Errorf("with a message the last item or the message is not on screen:\n%s", f)
	}
}
