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
	// An apply a crash interrupted in this working tree is finished (or rolled back) by the
	// next command, before it reads or changes anything (SPEC §4.1).
	notes, err := attempt.RecoverApplies(context.Background(), repo, db)
	if g != nil && g.io != nil {
		for _, n := range notes {
			fmt.Fprintln(g.io.ErrOut, "mulligan: "+n)
		}
		if err != nil {
			fmt.Fprintf(g.io.ErrOut, "mulligan: warning: %v\nhint: `mulligan resume RUN` tries again\n", err)
		}
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

// resolveRun turns a RUN argument ("", "last", an id or a prefix, or an address, which names
// its run) into a run id.
func (s *state) resolveRun(ctx context.Context, ref string) (string, error) {
	t, err := s.resolve(ctx, ref, attempt.WantRun)
	if err != nil {
		return "", err
	}
	return t.Run.ID, nil
}

// resolve is the one address resolver (attempt.Resolve) for every command.
func (s *state) resolve(ctx context.Context, text string, want attempt.Want) (*attempt.Target, error) {
	var t *attempt.Target
	err := s.db.View(ctx, func(tx *store.Tx) error {
		var err error
		t, err = attempt.Resolve(tx, text, want)
		return err
	})
	return t, err
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
	t, err := s.resolve(ctx, text, attempt.WantAttempt)
	if err != nil {
		return nil, nil, err
	}
	return t.Run, t.Attempt, nil
}

func mapAttemptError(err error) error {
	var amb *store.AmbiguousError
	var locked *store.LockedError
	var unknown *attempt.UnknownTaskError
	var conflict *attempt.ReloadConflictError
	var empty *store.EmptyError
	var addr *attempt.AddressError
	switch {
	case errors.As(err, &addr):
		e := withHint(ExitUsage, err)
		if len(addr.Candidates) > 0 {
			e.Hints = append(e.Hints, "did you mean: "+strings.Join(addr.Candidates, ", "))
		}
		e.Hints = append(e.Hints, "an address is RUN, RUN/TASK, RUN/TASK@N, TASK@N or TASK (the newest run that has it); `mulligan show` lists a run's")
		return e
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
