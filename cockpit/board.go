// Package cockpit is `mulligan top`: a live, full-screen view of a repository's runs built on
// Bubble Tea. It reads the database (a Board) and draws it; every action it offers (approve,
// reject, pause, cancel, resume) is the mulligan command of that name, run as a user would run
// it, so the cockpit never changes a run by a path of its own.
package cockpit

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/internal/tailfile"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// Board is what the screen shows at one moment: the runs (active first), their tasks and the
// attempts in flight, and the quota walls. It is a value: the model draws it and never reads
// the database itself.
type Board struct {
	Now   time.Time
	Runs  []RunView
	Walls []Wall
}

// RunView is one run of the board.
type RunView struct {
	ID, State, Reason string
	StartedAt         time.Time
	FinishedAt        *time.Time
	CostUSD, MaxCost  *float64
	Tasks             []TaskView
	// LastEvent is the newest event of an active run (nil for a finished run, or none yet).
	LastEvent *store.Event
}

// Active says whether the run has not ended.
func (r RunView) Active() bool { return !store.RunFinished(r.State) }

// TaskView is one task of a run, with its attempts in flight (one per racing lane).
type TaskView struct {
	Run, ID, State, Reason string
	SilentAt               *time.Time
	ResumeAt               *time.Time
	BestOf                 int
	Attempts               []store.Attempt
	Live                   []Live
}

// Addr is the task's address (RUN/TASK).
func (t TaskView) Addr() string { return t.Run + "/" + t.ID }

// Attention names why the task waits for the user ("" when it does not): blocked,
// waiting_approval, apply-conflict or silent.
func (t TaskView) Attention() string {
	switch {
	case t.State == store.TaskBlocked && t.Reason == "apply-conflict":
		return "apply-conflict"
	case t.State == store.TaskBlocked || t.State == store.TaskWaitingApproval:
		return t.State
	case t.SilentAt != nil && !store.TaskFinished(t.State):
		return "silent"
	}
	return ""
}

// Latest is the task's newest attempt (nil before its first).
func (t TaskView) Latest() *store.Attempt {
	if len(t.Attempts) == 0 {
		return nil
	}
	return &t.Attempts[len(t.Attempts)-1]
}

// Live is an attempt in flight: its agent, its rung of the task's agent chain, how long it has
// run against its timeout, its last line of output, and what it reported so far.
type Live struct {
	N, Lane      int
	Agent        string
	Rung, Rungs  int // 1-based position of Agent in the task's chain, and the chain's length
	StartedAt    time.Time
	Timeout      time.Duration // 0: none
	LastLine     string
	FilesChanged *int
	CostUSD      *float64
	Log          string
}

// Wall is an agent behind a quota wall until a time.
type Wall struct {
	Agent string
	Run   string
	Until time.Time
}

// Loader reads Boards from a database. It remembers each run's parsed task file (by its hash),
// so following a run parses it once.
type Loader struct {
	DB *store.DB
	// Scrub is applied to every text taken from an agent's output (nil: none).
	Scrub func(string) string
	// Recent is how many finished runs are shown under the active ones.
	Recent int

	files map[string]*taskfile.File
	// follow is what was read of each active run's event stream: its newest event, the seq to
	// read after, and when its quota walls were last lifted.
	follow map[string]*followed
}

type followed struct {
	seq    int64
	last   *store.Event
	lifted time.Time
}

// Load reads the board: every active run, then the newest finished ones.
func (l *Loader) Load(ctx context.Context) (*Board, error) {
	b := &Board{Now: l.DB.Now()}
	var runs []*store.Run
	if l.follow == nil {
		l.follow = map[string]*followed{}
	}
	err := l.DB.View(ctx, func(tx *store.Tx) error {
		active, err := tx.RunsInState(store.RunRunning, store.RunPaused, store.RunBlocked, store.RunWaitingQuota, store.RunWaitingApproval)
		if err != nil {
			return err
		}
		for id := range l.follow {
			if !slices.ContainsFunc(active, func(r store.Run) bool { return r.ID == id }) {
				delete(l.follow, id) // it ended: read again from its start if it comes back
			}
		}
		// The newest first: the run just started is the one the user looks for.
		slices.Reverse(active)
		ids := make([]string, 0, len(active)+l.Recent)
		for _, r := range active {
			ids = append(ids, r.ID)
		}
		if l.Recent > 0 {
			recent, err := tx.ListRuns(l.Recent + len(active))
			if err != nil {
				return err
			}
			n := 0
			for _, s := range recent {
				if store.RunFinished(s.State) && n < l.Recent {
					ids = append(ids, s.ID)
					n++
				}
			}
		}
		for _, id := range ids {
			run, err := tx.GetRun(id)
			if err != nil {
				return err
			}
			runs = append(runs, run)
			if !store.RunFinished(run.State) {
				if err := l.followEvents(tx, run.ID); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, run := range runs {
		rv := l.runView(run)
		if f := l.follow[run.ID]; f != nil && rv.Active() {
			rv.LastEvent = f.last
			b.Walls = append(b.Walls, walls(run, f.lifted, b.Now)...)
		}
		b.Runs = append(b.Runs, rv)
	}
	slices.SortFunc(b.Walls, func(x, y Wall) int { return x.Until.Compare(y.Until) })
	return b, nil
}

func (l *Loader) file(run *store.Run) *taskfile.File {
	if l.files == nil {
		l.files = map[string]*taskfile.File{}
	}
	key := run.ID + " " + run.TaskFileHash
	f, ok := l.files[key]
	if !ok {
		f, _ = taskfile.Parse(run.TaskFile, run.TaskFileContent) // nil: shown without timeouts
		l.files[key] = f
	}
	return f
}

func (l *Loader) runView(run *store.Run) RunView {
	rv := RunView{ID: run.ID, State: run.State, Reason: run.Reason, StartedAt: run.StartedAt,
		FinishedAt: run.FinishedAt, CostUSD: run.CostUSD, MaxCost: run.MaxCostUSD}
	file := l.file(run)
	for _, t := range run.Tasks {
		tv := TaskView{Run: run.ID, ID: t.ID, State: t.State, Reason: t.Reason, SilentAt: t.SilentAt,
			ResumeAt: t.ResumeAt, Attempts: t.Attempts}
		var def *taskfile.Task
		if file != nil {
			def = file.Task(t.ID)
		}
		if def != nil {
			tv.BestOf = def.BestOf
		}
		for _, a := range t.Attempts {
			if a.State != store.AttemptRunning {
				continue
			}
			lv := Live{N: a.N, Lane: a.Lane, Agent: a.Agent, StartedAt: a.StartedAt,
				FilesChanged: a.FilesChanged, CostUSD: a.CostUSD, Log: a.Log}
			if def != nil {
				lv.Timeout = def.Timeout
				lv.Rungs = len(def.Agents)
				lv.Rung = slices.Index(def.Agents, a.Agent) + 1
			}
			lv.LastLine = l.scrub(LastLine(a.Log))
			tv.Live = append(tv.Live, lv)
		}
		rv.Tasks = append(rv.Tasks, tv)
	}
	return rv
}

func (l *Loader) scrub(s string) string {
	if l.Scrub == nil {
		return s
	}
	return l.Scrub(s)
}

// followEvents reads the run's events since the last load: the whole stream once, then only
// what was appended.
func (l *Loader) followEvents(tx *store.Tx, run string) error {
	f := l.follow[run]
	if f == nil {
		f = &followed{}
		l.follow[run] = f
	}
	evs, err := tx.Events(run, f.seq, 0)
	if err != nil || len(evs) == 0 {
		return err
	}
	f.seq = evs[len(evs)-1].Seq
	f.last = &evs[len(evs)-1]
	f.lifted = liftedAt(evs, f.lifted)
	return nil
}

// liftedAt is when the operator last lifted the run's quota walls (quota.lifted, or a task
// taken out of waiting_quota by `resume --mode immediate`), at or after at (zero: never). The
// runner reads the walls the same way (attempt's loadSpend), for its own use only.
func liftedAt(evs []store.Event, at time.Time) time.Time {
	for _, ev := range evs {
		lift := ev.Type == attempt.EventQuotaLifted
		if ev.Type == store.EventTaskStateChanged {
			var p store.TaskStateChanged
			lift = ev.Decode(&p) == nil && p.From == store.TaskWaitingQuota && p.Reason == "resume-"+attempt.ResumeImmediate
		}
		if lift && ev.Time.After(at) {
			at = ev.Time
		}
	}
	return at
}

// walls are the run's agents behind a quota wall at now: an attempt that met one, until its
// retry-after, unless the operator lifted the walls since.
func walls(run *store.Run, lifted, now time.Time) []Wall {
	until := map[string]time.Time{}
	for _, t := range run.Tasks {
		for _, a := range t.Attempts {
			if a.Class != string(taskfile.ClassQuota) || a.FinishedAt == nil || a.FinishedAt.Before(lifted) {
				continue
			}
			u := *a.FinishedAt
			if a.RetryAfterMS != nil {
				u = u.Add(time.Duration(*a.RetryAfterMS) * time.Millisecond)
			}
			if u.After(now) && u.After(until[a.Agent]) {
				until[a.Agent] = u
			}
		}
	}
	var out []Wall
	for agent, u := range until {
		out = append(out, Wall{Agent: agent, Run: run.ID, Until: u})
	}
	return out
}

// tailBytes is how much of a log's end LastLine and Tail read.
const tailBytes = 16 << 10

// LastLine is the last non-blank line of the file at path, without terminal escapes ("" when
// there is none or it cannot be read).
func LastLine(path string) string {
	lines := Tail(path, 1)
	if len(lines) == 0 {
		return ""
	}
	return lines[0]
}

// Tail is the last n non-blank lines of the file at path, without terminal escapes.
func Tail(path string, n int) []string {
	if path == "" {
		return nil
	}
	buf, _, err := tailfile.Read(path, tailBytes)
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(buf), "\n") {
		line = strings.TrimSpace(strings.ReplaceAll(ansi.Strip(line), "\t", "    "))
		if i := strings.LastIndexByte(line, '\r'); i >= 0 {
			line = strings.TrimSpace(line[i+1:]) // a redrawn progress line: its last state
		}
		if line != "" {
			out = append(out, line)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}
