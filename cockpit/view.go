package cockpit

import (
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mulligan-dev/mulligan/store"
)

// styles are the few the screen uses; without color every one is plain but the selection's
// (reverse video, which NO_COLOR allows).
type styles struct {
	title, heading, dim, sel, warn, bad, good, run, footer lipgloss.Style
}

func newStyles(color bool) styles {
	p := lipgloss.NewStyle()
	s := styles{title: p.Bold(true), heading: p.Bold(true), dim: p, sel: p.Reverse(true), warn: p, bad: p, good: p, run: p, footer: p}
	if color {
		s.dim = p.Foreground(lipgloss.Color("8"))
		s.warn = p.Foreground(lipgloss.Color("3"))
		s.bad = p.Foreground(lipgloss.Color("1"))
		s.good = p.Foreground(lipgloss.Color("2"))
		s.run = p.Foreground(lipgloss.Color("6"))
		s.heading = p.Bold(true).Foreground(lipgloss.Color("4"))
		s.footer = p.Foreground(lipgloss.Color("8"))
	}
	return s
}

// state paints a run, task or attempt state.
func (s styles) state(state string) string {
	switch state {
	case store.TaskSucceeded:
		return s.good.Render(state)
	case store.TaskFailed, store.TaskCancelled:
		return s.bad.Render(state)
	case store.TaskRunning:
		return s.run.Render(state)
	case store.TaskBlocked, store.TaskWaitingApproval, store.TaskWaitingQuota, store.TaskPaused:
		return s.warn.Render(state)
	}
	return state
}

// footerKeys is the footer: the keys of the list, in at most 80 columns.
const footerKeys = "j/k move ⏎ open d diff l log a approve r reject p pause c cancel R resume ? q"

// View draws the screen.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Frame())
	v.AltScreen = true
	v.WindowTitle = "mulligan top"
	return v
}

// Frame is the screen as text, one line per row, each at most the width: what View shows, and
// what the tests read.
func (m *Model) Frame() string {
	var body []string
	switch m.mode {
	case modeHelp:
		body = helpLines()
	case modePane:
		body = m.paneLines()
	default:
		body = m.listLines()
	}
	lines := append([]string{m.header()}, body...)
	foot := m.footer()
	h := max(1, m.height-len(foot))
	if len(lines) > h {
		lines = lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	lines = append(lines, foot...)
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, m.width, "…")
	}
	return strings.Join(lines, "\n")
}

func (m *Model) header() string {
	left := m.styles.title.Render("mulligan top")
	if m.board == nil {
		if m.loadErr != nil {
			return left + "  " + m.styles.bad.Render(m.loadErr.Error())
		}
		return left + "  reading the runs…"
	}
	active, waiting := 0, 0
	var spend float64
	for _, r := range m.board.Runs {
		if r.Active() {
			active++
			if r.CostUSD != nil {
				spend += *r.CostUSD
			}
		}
		for _, t := range r.Tasks {
			if t.Attention() != "" {
				waiting++
			}
		}
	}
	info := fmt.Sprintf("%d active run%s", active, plural(active))
	if waiting > 0 {
		info += " · " + m.styles.warn.Render(fmt.Sprintf("%d wait%s for you", waiting, pluralVerb(waiting)))
	}
	if spend > 0 {
		info += fmt.Sprintf(" · spend $%.2f", spend)
	}
	if m.loadErr != nil {
		info += " · " + m.styles.bad.Render(m.loadErr.Error())
	}
	return left + "  " + info
}

func (m *Model) footer() []string {
	var out []string
	switch {
	case m.busy != "":
		out = append(out, m.styles.dim.Render(m.busy))
	case m.mode == modeInput:
		out = append(out, fmt.Sprintf("reject %s, text for the next attempt (enter sends, esc cancels): %s█", m.pending[1], m.input))
	case m.mode == modeConfirm:
		out = append(out, m.styles.warn.Render(fmt.Sprintf("cancel run %s? its attempt in flight is stopped (y/n)", m.pending[1])))
	case m.msg != "":
		st := m.styles.good
		if m.msgErr {
			st = m.styles.bad
		}
		for _, l := range strings.Split(m.msg, "\n") {
			out = append(out, st.Render(l))
		}
	}
	keys := footerKeys
	if m.mode == modePane {
		keys = "j/k scroll g/G top/end esc back " + keys[strings.Index(keys, "a approve"):]
	}
	return append(out, m.styles.footer.Render(keys))
}

// listHeight is the rows the list has: the screen less the header and the footer (its keys and
// any message above them).
func (m *Model) listHeight() int { return max(1, m.height-1-len(m.footer())) }

// paneHeight is the rows an opened text has under its title.
func (m *Model) paneHeight() int { return m.listHeight() - 1 }

// row is a line of the list and the item it selects (-1: none).
type row struct {
	text string
	item int
}

func (m *Model) listLines() []string {
	if m.board == nil {
		return nil
	}
	b := m.board
	var rows []row
	next := 0 // the index of the next item, in the order items() lists them
	add := func(text string, selectable bool) {
		it := -1
		if selectable {
			it = next
			next++
		}
		rows = append(rows, row{text, it})
	}
	var att []string
	for _, r := range b.Runs {
		for _, t := range r.Tasks {
			if a := t.Attention(); a != "" {
				att = append(att, fmt.Sprintf("%-26s %s", r.ID+"/"+t.ID, m.styles.warn.Render(attentionText(t, a))))
			}
		}
	}
	if len(att) > 0 {
		rows = append(rows, row{m.styles.heading.Render("WAITS FOR YOU"), -1})
		for _, a := range att {
			add(a, true)
		}
		rows = append(rows, row{"", -1})
	}
	if len(b.Runs) == 0 {
		rows = append(rows, row{"no runs yet: mulligan run starts one", -1})
	}
	for i, r := range b.Runs {
		if i == 0 || r.Active() != b.Runs[i-1].Active() {
			h := "RUNS"
			if !r.Active() {
				h = "FINISHED"
			}
			rows = append(rows, row{m.styles.heading.Render(h), -1})
		}
		add(m.runLine(r), true)
		if e := r.LastEvent; e != nil {
			where := e.Task
			if e.Attempt > 0 {
				where = fmt.Sprintf("%s@%d", e.Task, e.Attempt)
			}
			rows = append(rows, row{"    " + m.styles.dim.Render(strings.TrimSpace(fmt.Sprintf("%s %s %s",
				e.Time.Local().Format(time.TimeOnly), e.Type, where))), -1})
		}
		for _, t := range r.Tasks {
			add(m.taskLine(t), true)
			ls := lanes(t)
			for _, l := range ls {
				add(m.laneLine(t, l), true)
				if l.Live != nil && l.Live.LastLine != "" {
					rows = append(rows, row{"          " + m.styles.dim.Render("› "+l.Live.LastLine), -1})
				}
			}
			if len(ls) == 0 {
				for _, lv := range t.Live {
					rows = append(rows, row{"      " + m.liveText(lv), -1})
					if lv.LastLine != "" {
						rows = append(rows, row{"      " + m.styles.dim.Render("› "+lv.LastLine), -1})
					}
				}
			}
		}
	}
	if len(b.Walls) > 0 {
		rows = append(rows, row{"", -1}, row{m.styles.heading.Render("QUOTA WALLS"), -1})
		for _, w := range b.Walls {
			rows = append(rows, row{fmt.Sprintf("  %-14s resets %s  in %-9s run %s", w.Agent,
				w.Until.Local().Format(time.TimeOnly), short(w.Until.Sub(m.now)), w.Run), -1})
		}
	}

	// Mark the selection and scroll so it stays on screen.
	selRow := 0
	out := make([]string, len(rows))
	for i, r := range rows {
		switch {
		case r.item < 0:
			out[i] = r.text
		case r.item == m.sel:
			selRow = i
			out[i] = m.styles.sel.Render("▸ " + ansi.Strip(padRight(r.text, m.width-2)))
		default:
			out[i] = "  " + r.text
		}
	}
	h := m.listHeight()
	if selRow >= h {
		out = out[selRow-h+1:]
	}
	return out
}

func attentionText(t TaskView, why string) string {
	switch why {
	case store.TaskWaitingApproval:
		return "waits for approval: a approve, r reject"
	case "apply-conflict":
		return "blocked: its change conflicts with the tree"
	case "silent":
		return "silent since " + t.SilentAt.Local().Format(time.TimeOnly)
	}
	if t.Reason != "" {
		return "blocked (" + t.Reason + ")"
	}
	return "blocked"
}

func (m *Model) runLine(r RunView) string {
	state := m.styles.state(r.State)
	if r.Reason != "" {
		state += " (" + r.Reason + ")"
	}
	end := m.now
	if r.FinishedAt != nil {
		end = *r.FinishedAt
	}
	spend := "$" + money(r.CostUSD)
	if r.MaxCost != nil && *r.MaxCost > 0 {
		spend += fmt.Sprintf(" of $%.2f", *r.MaxCost)
	}
	return fmt.Sprintf("%s  %s  %d task%s  %s  %s", m.styles.title.Render("run "+r.ID), state,
		len(r.Tasks), plural(len(r.Tasks)), short(end.Sub(r.StartedAt)), spend)
}

func (m *Model) taskLine(t TaskView) string {
	state := m.styles.state(t.State)
	if t.Reason != "" {
		state += " (" + t.Reason + ")"
	}
	extra := ""
	switch {
	case t.State == store.TaskWaitingQuota && t.ResumeAt != nil:
		extra = "  resumes in " + short(t.ResumeAt.Sub(m.now))
	case t.BestOf > 1:
		extra = fmt.Sprintf("  races %d lanes", t.BestOf)
	}
	if a := t.Attention(); a != "" {
		extra += "  " + m.styles.warn.Render("!")
	}
	return fmt.Sprintf("  %s %-16s %s%s", icon(t.State), t.ID, state, extra)
}

// laneView is a lane of a racing task: its newest attempt, live or not.
type laneView struct {
	Lane, N int
	Agent   string
	State   string
	Live    *Live
}

// lanes are a racing task's lanes, each with its newest attempt; none for a task that does not
// race.
func lanes(t TaskView) []laneView {
	byLane := map[int]laneView{}
	for _, a := range t.Attempts {
		if a.Lane > 0 {
			byLane[a.Lane] = laneView{Lane: a.Lane, N: a.N, Agent: a.Agent, State: a.State}
		}
	}
	for i, lv := range t.Live {
		if lv.Lane > 0 {
			l := byLane[lv.Lane]
			if l.N == lv.N {
				l.Live = &t.Live[i]
				byLane[lv.Lane] = l
			}
		}
	}
	out := make([]laneView, 0, len(byLane))
	for _, l := range byLane {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b laneView) int { return a.Lane - b.Lane })
	return out
}

func (m *Model) laneLine(t TaskView, l laneView) string {
	if l.Live != nil {
		return fmt.Sprintf("      lane %d  %s", l.Lane, m.liveText(*l.Live))
	}
	return fmt.Sprintf("      lane %d  @%d %s  %s", l.Lane, l.N, l.Agent, m.styles.state(l.State))
}

// liveText is an attempt in flight: number, agent and rung, elapsed against the timeout, files
// and spend so far.
func (m *Model) liveText(lv Live) string {
	rung := ""
	if lv.Rungs > 1 && lv.Rung > 0 {
		rung = fmt.Sprintf(" rung %d/%d", lv.Rung, lv.Rungs)
	}
	elapsed := short(m.now.Sub(lv.StartedAt))
	if lv.Timeout > 0 {
		elapsed += " of " + short(lv.Timeout)
		if m.now.Sub(lv.StartedAt) > lv.Timeout*4/5 {
			elapsed = m.styles.warn.Render(elapsed)
		}
	}
	files := "-"
	if lv.FilesChanged != nil {
		files = fmt.Sprint(*lv.FilesChanged)
	}
	return fmt.Sprintf("@%d %s%s  %s  files %s  $%s", lv.N, lv.Agent, rung, elapsed, files, money(lv.CostUSD))
}

func icon(state string) string {
	switch state {
	case store.TaskSucceeded:
		return "✓"
	case store.TaskFailed, store.TaskCancelled:
		return "✗"
	case store.TaskRunning, store.TaskBackoff:
		return "●"
	case store.TaskPending, store.TaskSkipped:
		return "·"
	}
	return "‖"
}

func (m *Model) paneLines() []string {
	h := m.paneHeight()
	out := []string{m.styles.heading.Render(m.pane.title)}
	end := min(len(m.pane.lines), m.pane.offset+h)
	for _, l := range m.pane.lines[min(m.pane.offset, end):end] {
		out = append(out, strings.ReplaceAll(l, "\t", "    "))
	}
	return out
}

func helpLines() []string {
	return []string{
		"",
		"  j/k or ↑/↓   move (g/G: first/last, pgup/pgdown: a page)",
		"  enter        open the item: attempts, output tail, the autopsy's verdict",
		"  d            the diff of the selected attempt (a lane's, or the task's newest)",
		"  l            its log, followed as it grows",
		"  a            approve the task waiting for approval (mulligan approve --detach)",
		"  r            reject it, with your text for the next attempt (reject --detach)",
		"  p            pause the run (mulligan pause: the attempt in flight finishes)",
		"  c            cancel the run (mulligan cancel), after a y",
		"  R            resume the run in the background (mulligan resume --detach)",
		"  esc          back from an opened item; clears a message",
		"  q            quit (the runs go on)",
		"",
		"  Tasks that wait for you (blocked, waiting for approval, apply-conflict,",
		"  silent) are listed first. Any key closes this help.",
	}
}

// short is a duration as a person reads it on a clock: 12s, 4m05s, 1h02m.
func short(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func money(c *float64) string {
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *c)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func pluralVerb(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

func padRight(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}
