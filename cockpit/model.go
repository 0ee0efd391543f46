package cockpit

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
)

// Deps are what the model does outside itself. Tests give it functions over fixed values.
type Deps struct {
	// Load reads the board.
	Load func(ctx context.Context) (*Board, error)
	// Changed says, cheaply, whether Load would read anything new since the last Load (nil:
	// reload on every tick).
	Changed func() bool
	// Command runs a mulligan command (approve, reject, pause, cancel, resume, diff) as the
	// user would, and returns what it printed; err is set when it exited non-zero.
	Command func(ctx context.Context, args ...string) (string, error)
	// Detail is the text enter opens for an item: a task's attempts, output tail and the
	// autopsy's verdict, or a run's tasks and verdict.
	Detail func(ctx context.Context, b *Board, run, task string) (string, error)
	// Log is the text of an attempt's log (scrubbed), read again while it is followed.
	Log func(path string) (string, int64)
	// Tick is how often the clocks on screen (elapsed times, countdowns) move and the database
	// is looked at for changes.
	Tick time.Duration
}

// mode is what the keys act on.
type mode int

const (
	modeList mode = iota
	modePane
	modeHelp
	modeInput   // typing reject's text
	modeConfirm // y/n before cancel
)

// item is one selectable row: a task waiting for the user (attention), a run, a task, or a
// lane of a racing task.
type item struct {
	attention bool
	run       int // index in Board.Runs
	task      int // -1: the run itself
	lane      int // 0: not a lane row
}

func (it item) key(b *Board) string {
	r := b.Runs[it.run]
	k := r.ID
	if it.task >= 0 {
		k += "/" + r.Tasks[it.task].ID
	}
	if it.lane > 0 {
		k += fmt.Sprintf("#%d", it.lane)
	}
	if it.attention {
		k = "!" + k
	}
	return k
}

// pane is a text opened over the list: a detail, a diff or a log followed.
type pane struct {
	title  string
	lines  []string
	offset int
	// follow is the log followed ("" for a fixed text); size is its size when last read.
	follow string
	size   int64
}

// Model is the cockpit's state. It is a Bubble Tea model: Update takes keys, ticks and the
// results of loads and commands; View draws it.
type Model struct {
	deps   Deps
	ctx    context.Context
	styles styles

	board   *Board
	loadErr error
	loading bool
	now     time.Time

	items   []item
	sel     int
	selKey  string
	opened  bool // the first board was seen (its first attention item selected)
	width   int
	height  int
	mode    mode
	pane    pane
	input   string
	pending []string // the command a prompt or a confirmation is for

	msg    string
	msgErr bool
	busy   string
}

// New returns the model; color turns styles on (off: NO_COLOR and the like).
func New(ctx context.Context, deps Deps, color bool) *Model {
	if deps.Tick <= 0 {
		deps.Tick = time.Second
	}
	return &Model{deps: deps, ctx: ctx, styles: newStyles(color), width: 80, height: 24, now: time.Now()}
}

type (
	boardMsg struct {
		b   *Board
		err error
	}
	tickMsg    time.Time
	commandMsg struct {
		args []string
		out  string
		err  error
	}
	textMsg struct {
		title, text string
		err         error
	}
)

// Init loads the first board and starts the clock.
func (m *Model) Init() tea.Cmd {
	m.loading = true
	return tea.Batch(m.load(), m.tick())
}

func (m *Model) load() tea.Cmd {
	return func() tea.Msg {
		b, err := m.deps.Load(m.ctx)
		return boardMsg{b, err}
	}
}

func (m *Model) tick() tea.Cmd {
	return tea.Tick(m.deps.Tick, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Update takes one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case boardMsg:
		m.loading = false
		m.loadErr = msg.err
		if msg.err == nil {
			m.setBoard(msg.b)
		}
	case tickMsg:
		m.now = time.Time(msg)
		cmds := []tea.Cmd{m.tick()}
		if !m.loading && (m.deps.Changed == nil || m.deps.Changed()) {
			m.loading = true
			cmds = append(cmds, m.load())
		}
		if m.mode == modePane && m.pane.follow != "" {
			m.refollow()
		}
		return m, tea.Batch(cmds...)
	case commandMsg:
		m.busy = ""
		m.msg, m.msgErr = summary(msg.args, msg.out, msg.err), msg.err != nil
		if !m.loading {
			m.loading = true
			return m, m.load()
		}
	case textMsg:
		m.busy = ""
		if msg.err != nil {
			m.msg, m.msgErr = msg.err.Error(), true
			return m, nil
		}
		m.openPane(pane{title: msg.title, lines: splitLines(msg.text)})
	case tea.KeyPressMsg:
		return m.key(msg)
	case tea.PasteMsg:
		if m.mode == modeInput {
			m.input += strings.ReplaceAll(msg.Content, "\n", " ")
		}
	}
	return m, nil
}

// setBoard takes a new board, keeping the selected row (by its key), or selecting the first
// task that waits for the user on the first board.
func (m *Model) setBoard(b *Board) {
	m.board = b
	m.now = b.Now
	m.items = items(b)
	if !m.opened {
		m.opened = true
		m.sel = 0
		m.selKey = ""
		if len(m.items) > 0 {
			m.selKey = m.items[0].key(b)
		}
		return
	}
	// The selected row went away (a task decided leaves the attention list): the same task
	// among its run's, else what waits for the user first, else the row at the same place.
	for _, key := range []string{m.selKey, strings.TrimPrefix(m.selKey, "!")} {
		for i, it := range m.items {
			if it.key(b) == key {
				m.sel, m.selKey = i, key
				return
			}
		}
	}
	m.sel = min(m.sel, max(0, len(m.items)-1))
	if len(m.items) > 0 && m.items[0].attention {
		m.sel = 0
	}
	if len(m.items) > 0 {
		m.selKey = m.items[m.sel].key(b)
	}
}

// items lists the selectable rows in the order drawn: the tasks waiting for the user first,
// then each run with its tasks and their lanes.
func items(b *Board) []item {
	var out []item
	for ri, r := range b.Runs {
		for ti, t := range r.Tasks {
			if t.Attention() != "" {
				out = append(out, item{attention: true, run: ri, task: ti})
			}
		}
	}
	for ri, r := range b.Runs {
		out = append(out, item{run: ri, task: -1})
		for ti, t := range r.Tasks {
			out = append(out, item{run: ri, task: ti})
			for _, l := range lanes(t) {
				out = append(out, item{run: ri, task: ti, lane: l.Lane})
			}
		}
	}
	return out
}

func (m *Model) selected() (item, bool) {
	if m.board == nil || m.sel < 0 || m.sel >= len(m.items) {
		return item{}, false
	}
	return m.items[m.sel], true
}

func (m *Model) move(d int) {
	if len(m.items) == 0 {
		return
	}
	m.sel = max(0, min(len(m.items)-1, m.sel+d))
	m.selKey = m.items[m.sel].key(m.board)
}

func (m *Model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	s := k.String()
	switch m.mode {
	case modeHelp:
		m.mode = modeList
		return m, nil
	case modeInput:
		return m.inputKey(k)
	case modeConfirm:
		m.mode = modeList
		if s == "y" || s == "Y" {
			return m, m.command(m.pending...)
		}
		m.msg, m.msgErr = "nothing done", false
		return m, nil
	case modePane:
		if m.paneKey(s) {
			return m, nil
		}
	}
	switch s {
	case "q", "ctrl+c":
		return m, tea.Quit
	case "up", "k":
		m.move(-1)
	case "down", "j":
		m.move(1)
	case "pgup":
		m.move(-m.listHeight())
	case "pgdown", "space":
		m.move(m.listHeight())
	case "home", "g":
		m.move(-len(m.items))
	case "end", "G":
		m.move(len(m.items))
	case "?":
		m.mode = modeHelp
	case "esc":
		m.msg = ""
	case "enter":
		return m, m.openDetail()
	case "d":
		return m, m.openDiff()
	case "l":
		m.openLog()
	case "a":
		if addr, ok := m.taskAddr("approve"); ok {
			return m, m.command("approve", addr, "--detach")
		}
	case "r":
		if addr, ok := m.taskAddr("reject"); ok {
			m.mode, m.input, m.pending = modeInput, "", []string{"reject", addr}
		}
	case "p":
		if id, ok := m.runID(); ok {
			return m, m.command("pause", id)
		}
	case "c":
		if id, ok := m.runID(); ok {
			m.mode, m.pending = modeConfirm, []string{"cancel", id}
		}
	case "R":
		if id, ok := m.runID(); ok {
			return m, m.command("resume", id, "--detach")
		}
	}
	return m, nil
}

// paneKey moves in an open pane; false hands the key on (actions, quit).
func (m *Model) paneKey(s string) bool {
	h := m.paneHeight()
	last := max(0, len(m.pane.lines)-h)
	switch s {
	case "esc", "backspace", "left", "h":
		m.mode = modeList
		m.pane = pane{}
	case "up", "k":
		m.pane.offset = max(0, m.pane.offset-1)
	case "down", "j":
		m.pane.offset = min(last, m.pane.offset+1)
	case "pgup":
		m.pane.offset = max(0, m.pane.offset-h)
	case "pgdown", "space":
		m.pane.offset = min(last, m.pane.offset+h)
	case "home", "g":
		m.pane.offset = 0
	case "end", "G":
		m.pane.offset = last
	default:
		return false
	}
	return true
}

func (m *Model) inputKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "esc", "ctrl+c":
		m.mode, m.pending = modeList, nil
		m.msg, m.msgErr = "nothing done", false
	case "enter":
		m.mode = modeList
		args := m.pending
		if text := strings.TrimSpace(m.input); text != "" {
			args = append(args, text)
		}
		return m, m.command(append(args, "--detach")...)
	case "backspace":
		if r := []rune(m.input); len(r) > 0 {
			m.input = string(r[:len(r)-1])
		}
	default:
		if k.Text != "" {
			m.input += k.Text
		}
	}
	return m, nil
}

// taskAddr is the selected task's address, for approve and reject.
func (m *Model) taskAddr(verb string) (string, bool) {
	it, ok := m.selected()
	if !ok || it.task < 0 {
		m.msg, m.msgErr = verb+" decides a task: select the task (j/k) first", true
		return "", false
	}
	return m.board.Runs[it.run].Tasks[it.task].Addr(), true
}

func (m *Model) runID() (string, bool) {
	it, ok := m.selected()
	if !ok {
		return "", false
	}
	return m.board.Runs[it.run].ID, true
}

// command runs a mulligan command in the background of the screen; its message replaces the
// footer's when it is done.
func (m *Model) command(args ...string) tea.Cmd {
	m.busy = "mulligan " + strings.Join(args, " ") + " …"
	m.msg = ""
	return func() tea.Msg {
		out, err := m.deps.Command(m.ctx, args...)
		return commandMsg{args, out, err}
	}
}

// attemptOf is the attempt the selected row stands for: a lane's newest, else the task's
// running or newest attempt.
func (m *Model) attemptOf(it item) (TaskView, int, bool) {
	if it.task < 0 {
		return TaskView{}, 0, false
	}
	t := m.board.Runs[it.run].Tasks[it.task]
	if it.lane > 0 {
		for _, l := range lanes(t) {
			if l.Lane == it.lane {
				return t, l.N, true
			}
		}
	}
	if len(t.Live) > 0 {
		return t, t.Live[0].N, true
	}
	if a := t.Latest(); a != nil {
		return t, a.N, true
	}
	return t, 0, false
}

func (m *Model) openDetail() tea.Cmd {
	it, ok := m.selected()
	if !ok || m.deps.Detail == nil {
		return nil
	}
	r := m.board.Runs[it.run]
	task, title := "", "run "+r.ID
	if it.task >= 0 {
		task = r.Tasks[it.task].ID
		title = r.ID + "/" + task
	}
	b := m.board
	m.busy = "opening " + title + " …"
	return func() tea.Msg {
		text, err := m.deps.Detail(m.ctx, b, r.ID, task)
		return textMsg{title: title, text: text, err: err}
	}
}

func (m *Model) openDiff() tea.Cmd {
	it, ok := m.selected()
	if !ok {
		return nil
	}
	t, n, ok := m.attemptOf(it)
	if !ok {
		m.msg, m.msgErr = "d shows an attempt's diff: select a task that has one", true
		return nil
	}
	addr := fmt.Sprintf("%s@%d", t.Addr(), n)
	m.busy = "mulligan diff " + addr + " …"
	return func() tea.Msg {
		out, err := m.deps.Command(m.ctx, "diff", addr)
		if err != nil {
			return commandMsg{args: []string{"diff", addr}, out: out, err: err}
		}
		if strings.TrimSpace(out) == "" {
			out = "(no change)"
		}
		return textMsg{title: "diff " + addr, text: out}
	}
}

func (m *Model) openLog() {
	it, ok := m.selected()
	if !ok {
		return
	}
	t, n, ok := m.attemptOf(it)
	if !ok || m.deps.Log == nil {
		m.msg, m.msgErr = "l follows an attempt's log: select a task that has one", true
		return
	}
	var path string
	for _, a := range t.Attempts {
		if a.N == n {
			path = a.Log
		}
	}
	text, size := m.deps.Log(path)
	m.openPane(pane{title: fmt.Sprintf("log %s@%d (following)", t.Addr(), n), lines: splitLines(text), follow: path, size: size})
	m.pane.offset = max(0, len(m.pane.lines)-m.paneHeight())
}

// refollow reads the followed log again when it grew, staying at its end if it was there.
func (m *Model) refollow() {
	text, size := m.deps.Log(m.pane.follow)
	if size == m.pane.size {
		return
	}
	atEnd := m.pane.offset >= len(m.pane.lines)-m.paneHeight()
	m.pane.lines, m.pane.size = splitLines(text), size
	if atEnd {
		m.pane.offset = max(0, len(m.pane.lines)-m.paneHeight())
	}
}

func (m *Model) openPane(p pane) {
	m.mode = modePane
	m.pane = p
}

// summary is what a finished command leaves in the footer: its last lines of output (its own
// refusal when it refused), or that it is done.
func summary(args []string, out string, err error) string {
	lines := splitLines(strings.TrimSpace(out))
	var keep []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			keep = append(keep, l)
		}
	}
	if len(keep) > 3 {
		keep = keep[:3]
	}
	if len(keep) == 0 {
		if err != nil {
			return "mulligan " + args[0] + ": " + err.Error()
		}
		return "mulligan " + args[0] + ": done"
	}
	return strings.Join(keep, "\n")
}

func splitLines(s string) []string {
	s = strings.TrimRight(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
