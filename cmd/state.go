package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/attempt/plan"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

func init() {
	errorMappers = append(errorMappers, mapAttemptError)
}

// state is an open repository and its mulligan database.
type state struct {
	repo *snapshot.Repo
	db   *store.DB
	g    *globals
	// noHooks: the command delivers no pending hooks after it (a dry run acts on nothing; effect
	// record runs inside an attempt, whose hooks are its run's process's business).
	noHooks bool
}

func openState(g *globals) (*state, error) {
	repo, err := openRepo()
	if err != nil {
		return nil, err
	}
	db, err := store.Open(store.DefaultPath(repo.CommonDir()))
	if err != nil {
		repo.Close()
		return nil, err
	}
	return &state{repo: repo, db: db, g: g}, nil
}

// Close ends the command's use of the repository and database. The first state a command
// closes that may deliver hooks stays open for the step after the command (afterCommand:
// the hooks earlier processes left pending), which closes it.
func (s *state) Close() {
	if !s.noHooks && s.g != nil && s.g.after == nil {
		s.g.after = s
		return
	}
	s.close()
}

func (s *state) close() {
	s.db.Close()
	s.repo.Close()
}

// afterCommand is the step Run takes after every command that opened the repository: it
// delivers the hooks earlier processes left pending (SPEC §5: at least once, by the next
// mulligan process — a process that crashed, was killed, or a command that changed a run's
// state without running it), reporting on the command's stderr, then closes what the command
// left open. A hook runs for up to its timeout, so this step can take that long, after the
// command's own output.
func afterCommand(ctx context.Context, g *globals) {
	st := g.after
	if st == nil {
		return
	}
	g.after = nil
	defer st.close()
	st.deliverOrphanHooks(ctx, g.io.ErrOut)
}

// openRun opens the repository and database and resolves a RUN argument; the caller closes st.
func openRun(ctx context.Context, g *globals, ref string) (st *state, id string, err error) {
	if st, err = openState(g); err != nil {
		return nil, "", err
	}
	if id, err = st.resolveRun(ctx, ref); err != nil {
		st.Close()
		return nil, "", err
	}
	return st, id, nil
}

// resolveRun turns a RUN argument ("", "last", an id or a prefix) into a run id.
func (s *state) resolveRun(ctx context.Context, ref string) (string, error) {
	var id string
	err := s.db.View(ctx, func(tx *store.Tx) error {
		var err error
		id, err = tx.ResolveRun(ref, "")
		return err
	})
	return id, err
}

func (s *state) getRun(ctx context.Context, id string) (*store.Run, error) {
	var run *store.Run
	err := s.db.View(ctx, func(tx *store.Tx) error {
		var err error
		run, err = tx.GetRun(id)
		return err
	})
	return run, err
}

// resolveAddress finds the attempt an address names.
func (s *state) resolveAddress(ctx context.Context, text string) (*store.Run, *store.Attempt, error) {
	addr, err := attempt.ParseAddress(text)
	if err != nil {
		return nil, nil, usageError("an address is [RUN/]TASK[@N], e.g. main@2 or k3f9/fix-tests@latest", "%s", err)
	}
	id, err := s.resolveRun(ctx, addr.Run)
	if err != nil {
		return nil, nil, err
	}
	run, err := s.getRun(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range run.Tasks {
		if t.ID != addr.Task {
			continue
		}
		if len(t.Attempts) == 0 {
			return nil, nil, &Error{Code: ExitFailed, Msg: fmt.Sprintf("task %s of run %s has no attempts yet", t.ID, run.ID)}
		}
		if addr.N == 0 {
			return run, &t.Attempts[len(t.Attempts)-1], nil
		}
		for i := range t.Attempts {
			if t.Attempts[i].N == addr.N {
				return run, &t.Attempts[i], nil
			}
		}
		return nil, nil, &Error{Code: ExitUsage, Msg: fmt.Sprintf("run %s has no attempt %s@%d", run.ID, t.ID, addr.N),
			Hints: []string{fmt.Sprintf("task %s has attempts 1 to %d", t.ID, t.Attempts[len(t.Attempts)-1].N)}}
	}
	var tasks []string
	for _, t := range run.Tasks {
		tasks = append(tasks, t.ID)
	}
	return nil, nil, &Error{Code: ExitUsage, Msg: fmt.Sprintf("run %s has no task %q", run.ID, addr.Task),
		Hints: []string{"its tasks: " + strings.Join(tasks, ", ")}}
}

func mapAttemptError(err error) error {
	var amb *store.AmbiguousError
	var locked *store.LockedError
	var unknown *attempt.UnknownTaskError
	var conflict *attempt.ReloadConflictError
	var empty *store.EmptyError
	switch {
	case errors.As(err, &empty):
		return withHint(ExitFailed, err,
			"if it was truncated or replaced, put the database back (from a backup or a copy) before running mulligan here",
			"to start a new, empty history anyway: rm "+empty.Path+" (run refs and logs stay where they are)")
	case taskfile.IsAuthoring(err):
		return authoringError(err)
	case errors.As(err, &amb):
		e := withHint(ExitUsage, err)
		e.Hints = append(e.Hints, "give more characters of the run id: "+strings.Join(amb.Candidates, ", "))
		return e
	case errors.Is(err, store.ErrShortPrefix):
		return withHint(ExitUsage, err, "`mulligan ls` lists the runs")
	case errors.Is(err, store.ErrNotFound):
		return withHint(ExitUsage, err, "`mulligan ls` lists the runs")
	case errors.As(err, &locked):
		return withHint(ExitRefused, fmt.Errorf("run %s is active in this worktree (pid %d on %s)", locked.RunID, locked.Owner.PID, locked.Owner.Host),
			fmt.Sprintf("wait for it, or run in another worktree (`git worktree add`); `mulligan show %s` shows it", locked.RunID))
	case errors.Is(err, attempt.ErrActive):
		return withHint(ExitRefused, err, "a run's process is alive: wait for it to finish")
	case errors.Is(err, attempt.ErrRunFinished):
		return withHint(ExitFailed, err, "`mulligan show` shows how it ended")
	case errors.Is(err, store.ErrFenced):
		return withHint(ExitCancelled, err)
	case errors.As(err, &unknown):
		return withHint(ExitUsage, err)
	case errors.As(err, &conflict):
		// loadReload reports the refusal with its own hints before anything changes; this is
		// the same refusal found again in the transaction (the run changed in between).
		return withHint(ExitUsage, err, fmt.Sprintf("`mulligan show %s` lists the attempts; keep those tasks in the file, or start a new run: mulligan run", conflict.Run))
	}
	return nil
}

// authoringError maps every authoring problem to an *Error (exit 2) with its hint.
func authoringError(err error) error {
	var es taskfile.AuthoringErrors
	var one *taskfile.AuthoringError
	switch {
	case errors.As(err, &es) && len(es) > 1:
		m := &multiError{}
		for _, e := range es {
			m.errs = append(m.errs, authoringOne(e))
		}
		return m
	case errors.As(err, &one):
		return authoringOne(one)
	}
	return &Error{Code: ExitUsage, Msg: err.Error(), Err: err}
}

func authoringOne(e *taskfile.AuthoringError) *Error {
	out := &Error{Code: ExitUsage, Msg: e.Error(), Err: e}
	if e.Hint != "" {
		out.Hints = []string{e.Hint}
	}
	return out
}

// planEnv is what the operator's plans (attempt/plan) read and change.
func (s *state) planEnv() plan.Env { return plan.Env{DB: s.db, Repo: s.repo} }
