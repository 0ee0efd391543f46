package attempt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/store"
)

// Address names an attempt: [RUN/]TASK[@N]. Run "" means the newest run that has the task,
// "last" the newest run; N 0 the latest attempt.
type Address struct {
	Run  string
	Task string
	N    int
}

func (a Address) String() string {
	s := a.Task
	if a.Run != "" {
		s = a.Run + "/" + s
	}
	if a.N > 0 {
		s += "@" + strconv.Itoa(a.N)
	}
	return s
}

var (
	addrRunRe  = lazyre.New(`^[0-9a-z]+$`)
	addrTaskRe = lazyre.New(`^[A-Za-z0-9._-]+$`)
)

// ParseAddress reads `fix-tests`, `fix-tests@2`, `k3f9/fix-tests`, `k3f9/fix-tests@latest`,
// `last/fix-tests`.
func ParseAddress(s string) (Address, error) {
	var a Address
	rest := s
	if run, task, ok := strings.Cut(rest, "/"); ok {
		if run != "last" && !addrRunRe.MatchString(run) {
			return a, fmt.Errorf("bad address %q: the run id %q is not lowercase letters and digits", s, run)
		}
		a.Run = run
		rest = task
	}
	task, n, hasN := strings.Cut(rest, "@")
	if !addrTaskRe.MatchString(task) {
		return a, fmt.Errorf("bad address %q: want [RUN/]TASK[@N], e.g. fix-tests@2", s)
	}
	a.Task = task
	if hasN && n != "latest" {
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 {
			return a, fmt.Errorf("bad address %q: the attempt number %q is not 1, 2, 3… or latest", s, n)
		}
		a.N = v
	}
	return a, nil
}

// Want is what a command needs an address to name.
type Want int

const (
	// WantRun: a run. RUN (an id, a unique prefix of 4+ characters, `last`, or "" for the newest),
	// or any task address, which names its run.
	WantRun Want = iota
	// WantTask: a task of a run, [RUN/]TASK[@N] (an @N must be one of its attempts), or a run
	// that has one task.
	WantTask
	// WantAttempt: exactly one attempt, [RUN/]TASK[@N] (the latest without @N), or a run that
	// has one task.
	WantAttempt
)

// Target is what an address names. Task is nil for WantRun; Attempt is nil for WantRun and for a
// task (WantTask) that has no attempts yet. N is the attempt number the address gave (0: none).
type Target struct {
	Run     *store.Run
	Task    *store.Task
	Attempt *store.Attempt
	N       int
}

// AddressError is an address that names nothing, or not exactly one thing: Candidates are what
// it could have said.
type AddressError struct {
	Addr       string
	Msg        string
	Candidates []string
}

func (e *AddressError) Error() string { return e.Msg }

// Resolve finds what text names: the one resolver every command that takes an address uses
// (SPEC §6): a run id or its prefix, `last`, RUN/TASK, RUN/TASK@N, TASK@N and TASK, a bare task
// name meaning the newest run that has that task. An address that names nothing, or (for an
// attempt) not exactly one attempt, is refused with the candidates.
func Resolve(tx *store.Tx, text string, want Want) (*Target, error) {
	if text == "" || text == "last" || want == WantRun && !strings.ContainsAny(text, "/@") {
		return resolveRunRef(tx, text, want)
	}
	addr, err := ParseAddress(text)
	if err != nil {
		return nil, &AddressError{Addr: text, Msg: err.Error()}
	}
	var runID string
	switch {
	case addr.Run != "":
		if runID, err = tx.ResolveRun(addr.Run, ""); err != nil {
			return nil, err
		}
	default:
		ids, err := tx.RunsWithTask(addr.Task, 1)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			if !strings.Contains(text, "@") {
				// A bare word that is no task's name may be a run's id: what it names (or why
				// that is not one attempt) is the answer, unless it names no run either.
				t, err := resolveRunRef(tx, text, want)
				var named *AddressError
				if err == nil || errors.As(err, &named) {
					return t, err
				}
			}
			return nil, unknownTaskAnywhere(tx, text, addr.Task)
		}
		runID = ids[0]
	}
	run, err := tx.GetRun(runID)
	if err != nil {
		return nil, err
	}
	target := &Target{Run: run, N: addr.N}
	if want == WantRun {
		return target, nil
	}
	for i := range run.Tasks {
		if run.Tasks[i].ID == addr.Task {
			target.Task = &run.Tasks[i]
		}
	}
	if target.Task == nil {
		return nil, &AddressError{Addr: text, Msg: fmt.Sprintf("run %s has no task %q", run.ID, addr.Task), Candidates: taskAddrs(run)}
	}
	return pickAttempt(target, text, want)
}

// resolveRunRef resolves a run reference; for a task or an attempt, a run with one task names it.
func resolveRunRef(tx *store.Tx, ref string, want Want) (*Target, error) {
	id, err := tx.ResolveRun(ref, "")
	if err != nil {
		if want == WantRun && (errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrShortPrefix)) && addrTaskRe.MatchString(ref) {
			// A task's name names the newest run that has it.
			if ids, terr := tx.RunsWithTask(ref, 1); terr == nil && len(ids) == 1 {
				id, err = ids[0], nil
			}
		}
		if err != nil {
			return nil, err
		}
	}
	run, err := tx.GetRun(id)
	if err != nil {
		return nil, err
	}
	target := &Target{Run: run}
	if want == WantRun {
		return target, nil
	}
	if len(run.Tasks) != 1 {
		return nil, &AddressError{Addr: ref, Msg: fmt.Sprintf("%q names run %s, which has %d tasks: name one", orLast(ref), run.ID, len(run.Tasks)),
			Candidates: taskAddrs(run)}
	}
	target.Task = &run.Tasks[0]
	return pickAttempt(target, ref, want)
}

// pickAttempt finds the attempt target.N names in target.Task (its latest for 0).
func pickAttempt(target *Target, text string, want Want) (*Target, error) {
	t := target.Task
	if len(t.Attempts) == 0 {
		if want == WantTask && target.N == 0 {
			return target, nil
		}
		return nil, &AddressError{Addr: text, Msg: fmt.Sprintf("task %s of run %s has no attempts yet", t.ID, target.Run.ID)}
	}
	if target.N == 0 {
		target.Attempt = &t.Attempts[len(t.Attempts)-1]
		return target, nil
	}
	for i := range t.Attempts {
		if t.Attempts[i].N == target.N {
			target.Attempt = &t.Attempts[i]
			return target, nil
		}
	}
	return nil, &AddressError{Addr: text, Msg: fmt.Sprintf("run %s has no attempt %s@%d", target.Run.ID, t.ID, target.N),
		Candidates: attemptAddrs(target.Run, t)}
}

func unknownTaskAnywhere(tx *store.Tx, text, task string) error {
	known, err := tx.RecentTaskIDs(5)
	if err != nil {
		return err
	}
	if len(known) == 0 {
		return &AddressError{Addr: text, Msg: fmt.Sprintf("no task %q in any run: there are no runs yet", task)}
	}
	return &AddressError{Addr: text, Msg: fmt.Sprintf("no task %q in any run", task), Candidates: known}
}

func taskAddrs(run *store.Run) []string {
	out := make([]string, len(run.Tasks))
	for i, t := range run.Tasks {
		out[i] = run.ID + "/" + t.ID
	}
	return out
}

func attemptAddrs(run *store.Run, t *store.Task) []string {
	out := make([]string, len(t.Attempts))
	for i, a := range t.Attempts {
		out[i] = fmt.Sprintf("%s/%s@%d", run.ID, t.ID, a.N)
	}
	return out
}

func orLast(ref string) string {
	if ref == "" {
		return "last"
	}
	return ref
}
