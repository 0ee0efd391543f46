package attempt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// ErrRunFinished is returned when resume is asked to continue a run that has ended.
var ErrRunFinished = errors.New("the run has finished")

// ResumeOptions are the inputs of `mulligan resume`.
type ResumeOptions struct {
	RunID string
	// Load rebuilds the run's task file from what the run stored (content and options).
	Load func(run *store.Run) (*taskfile.File, error)
	// Mode is how to continue: ResumePlain (""), ResumeResetAttempts, ResumeImmediate.
	Mode string
	// HandoverEpoch is the epoch a supervisor claimed the run at before starting this resume:
	// the supervisor (alive) is the owner then, and hands the run over.
	HandoverEpoch int64
	// Reload, when set, is the edited task file (`resume --reload`): it replaces the stored
	// definition in the claiming transaction (reload.go), before Mode applies.
	Reload *taskfile.File
	// Graft, with Reload, rewrites a started task's base tree to hold the reloaded task file
	// (nil: the file lies outside the worktree, or the caller keeps bases as they are).
	Graft func(tree string) (string, error)
	// Force resumes a run whose working tree moved on since it stopped (tree-moved-on), after
	// keeping the tree in an undo ref.
	Force bool
}

// Resume modes (`resume --mode`).
const (
	ResumePlain         = "plain"
	ResumeResetAttempts = "reset-attempts" // a fresh retry budget for the unfinished tasks
	ResumeImmediate     = "immediate"      // skip what remains of a backoff or quota wait
)

// applyResumeMode changes the unfinished tasks of run as mode asks, in the claiming transaction.
func applyResumeMode(tx *store.Tx, run *store.Run, mode string) error {
	if mode == "" || mode == ResumePlain {
		return nil
	}
	for i := range run.Tasks {
		t := &run.Tasks[i]
		if store.TaskFinished(t.State) {
			continue
		}
		switch mode {
		case ResumeResetAttempts:
			// The breaker's count and the no-progress streak start again with the budget, as
			// retry-task's do: either left at its limit would end the fresh budget after one
			// attempt. The task keeps its base (restarted now, as retry-task --from-base does).
			t.RetriesUsed, t.ConsecutiveFailures = 0, 0
			if t.StartedAt != nil {
				now := time.Now().UTC()
				t.StartedAt = &now
			}
			if t.State == store.TaskBlocked && (t.Reason == ReasonRetriesExhausted || t.Reason == ReasonCircuitTripped) {
				t.State, t.Reason = store.TaskPending, ""
			}
		case ResumeImmediate:
			if t.ResumeAt == nil {
				continue
			}
			t.ResumeAt = nil
			if t.State == store.TaskWaitingQuota {
				t.State, t.Reason = store.TaskPending, ""
			}
		default:
			return fmt.Errorf("unknown resume mode %q", mode)
		}
		// Recorded as a change even where the state stays: the counters are what changed.
		if _, err := tx.TransitionTask(run.ID, t.ID, store.TaskTransition{To: store.TaskState(t.State), Reason: t.Reason,
			Cause: "resume-" + mode, ResumeAt: t.ResumeAt, Row: t}); err != nil {
			return err
		}
	}
	return nil
}

// releaseResumeExhausted makes the tasks supervise held with a resume-exhausted run pending
// again: the operator's resume is the decision to try once more.
func releaseResumeExhausted(tx *store.Tx, run *store.Run) error {
	for i := range run.Tasks {
		t := &run.Tasks[i]
		if t.State != store.TaskBlocked || t.Reason != ReasonResumeExhausted {
			continue
		}
		if _, err := tx.TransitionTask(run.ID, t.ID, store.TaskTransition{To: store.TaskPending, Cause: "resumed"}); err != nil {
			return err
		}
		t.State, t.Reason = store.TaskPending, ""
	}
	return nil
}

// Resume continues a run whose process died: it claims the run (compare-and-swap on the owner
// epoch, so two resumers cannot both win), ends what the dead process's agent left running,
// records the interrupted attempt as runner_died with its post snapshot, and executes the rest.
func Resume(ctx context.Context, env Env, opts ResumeOptions) (*Outcome, error) {
	env.defaults()
	var run *store.Run
	if err := env.DB.View(ctx, func(tx *store.Tx) error {
		var err error
		run, err = tx.GetRun(opts.RunID)
		return err
	}); err != nil {
		return nil, err
	}
	if store.RunFinished(run.State) {
		return nil, fmt.Errorf("run %s %s: %w", run.ID, run.State, ErrRunFinished)
	}
	// Stopped by Ctrl-C: the tree holds the interrupted attempt's half edit (resetInterrupted).
	interrupted := run.State == store.RunPaused && run.Reason == ReasonInterrupted
	handover := opts.HandoverEpoch != 0 && opts.HandoverEpoch == run.Epoch
	if run.Owner != nil && store.ProcessAlive(*run.Owner) && run.Owner.PID != store.Self().PID && !handover {
		return nil, fmt.Errorf("%w: run %s is running (pid %d on %s)", ErrActive, run.ID, run.Owner.PID, run.Owner.Host)
	}
	file, err := opts.Load(run)
	if err != nil {
		return nil, err
	}
	// Work done after the run stopped is not the run's to reset (SPEC §2.1).
	why, moved, err := TreeMovedOn(ctx, env.Repo, env.DB, run)
	if err != nil {
		return nil, err
	}
	var undo *snapshot.Result
	if moved {
		if !opts.Force {
			return nil, &TreeMovedOnError{Run: run.ID, Why: why}
		}
		id := snapshot.NewID(env.Now())
		undo, err = env.Repo.Snapshot(context.WithoutCancel(ctx), snapshot.SnapshotOptions{Ref: snapshot.UndoRef(id),
			Message: fmt.Sprintf("mulligan undo %s\n\nThe working tree before `mulligan resume %s --force`: %s.\n", id, run.ID, why)})
		if err != nil {
			return nil, fmt.Errorf("keep the working tree before resuming %s: %w", run.ID, err)
		}
		env.Progress.Event(ProgressEvent{Kind: KindNote, Message: fmt.Sprintf(
			"the working tree moved on since run %s stopped (%s): kept in %s before resuming; `mulligan restore %s` brings it back", run.ID, why, undo.Ref, undo.Ref)})
	}
	runFile := file
	if opts.Reload != nil {
		runFile = opts.Reload
	}
	r, err := claimRun(ctx, env, run, runFile, claim{reason: "resumed", alive: store.ProcessAlive,
		apply: func(tx *store.Tx, hdr *store.Run) (*store.Run, error) {
			claimed := run
			if opts.Reload != nil {
				if _, err := applyReload(tx, run.ID, file, opts.Reload, "resume --reload", opts.Graft); err != nil {
					return nil, err
				}
				var err error
				if claimed, err = tx.GetRun(run.ID); err != nil {
					return nil, err
				}
				reloaded, err := tx.RunHeader(run.ID) // the reload rewrote the run's task file
				if err != nil {
					return nil, err
				}
				*hdr = *reloaded
			}
			if err := applyResumeMode(tx, claimed, opts.Mode); err != nil {
				return nil, err
			}
			if undo != nil {
				if _, err := tx.AppendEvent(run.ID, "", 0, store.EventSnapshotTaken, store.SnapshotTaken{Ref: undo.Ref, Tree: undo.Tree.String(),
					Commit: undo.Commit.String(), Reason: ReasonTreeMovedOn, Why: why}); err != nil {
					return nil, err
				}
			}
			if err := releaseResumeExhausted(tx, claimed); err != nil {
				return nil, err
			}
			if !handover {
				// The operator's resume supersedes an older pause or cancel request.
				if err := tx.SetControl(run.ID, store.ControlNone); err != nil {
					return nil, err
				}
			}
			hdr.ResumesWithoutProgress++
			if opts.Mode == ResumeResetAttempts {
				hdr.ResumesWithoutProgress = 0
			}
			return claimed, nil
		}})
	if err != nil {
		return nil, err
	}
	r.undoReset = interrupted
	return r.execute(ctx)
}

// recoverInterrupted turns every attempt the dead process left `running` into a runner_died
// failure, not counted against the retry budget, with the tree as the process left it kept in
// the attempt's ref.
func (r *runner) recoverInterrupted(ctx context.Context) error {
	var groups map[string][]int
	if err := r.env.DB.View(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		var err error
		groups, err = attemptGroups(tx, r.run)
		return err
	}); err != nil {
		return err
	}
	for i := range r.run.Tasks {
		t := &r.run.Tasks[i]
		for j := range t.Attempts {
			a := &t.Attempts[j]
			if a.State != store.AttemptRunning {
				continue
			}
			// What the dead agent left (its group, and what setsid'd out of it) must not go on
			// editing the tree: ended, and gone, before the tree is kept as the attempt's.
			endAttemptProcs(groups, r.run.ID, t.ID, a.N)
			if err := r.recordRunnerDied(ctx, t, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// attemptGroups returns the process groups of run's running attempts ("TASK@N"): the one its
// attempt.process event recorded, or — when the process died between starting the agent and
// committing that event — the groups of the processes whose environment names the attempt.
func attemptGroups(tx *store.Tx, run *store.Run) (map[string][]int, error) {
	evs, err := tx.Events(run.ID, 0, 0)
	if err != nil {
		return nil, err
	}
	groups := map[string][]int{}
	for _, ev := range evs {
		if ev.Type == store.EventAttemptProcess {
			var p store.AttemptProcess
			if ev.Decode(&p) == nil && p.Pgid > 1 {
				groups[fmt.Sprintf("%s@%d", ev.Task, ev.Attempt)] = []int{p.Pgid}
			}
		}
	}
	var unknown []string
	for _, t := range run.Tasks {
		for _, a := range t.Attempts {
			if k := fmt.Sprintf("%s@%d", t.ID, a.N); a.State == store.AttemptRunning && groups[k] == nil {
				unknown = append(unknown, k)
			}
		}
	}
	if len(unknown) > 0 {
		found := agentGroups(run.ID)
		for _, k := range unknown {
			groups[k] = found[k]
		}
	}
	return groups, nil
}

func (r *runner) recordRunnerDied(ctx context.Context, t *store.Task, a *store.Attempt) error {
	f := &agentcli.Failure{
		Class: taskfile.ClassRunnerDied, Code: agentcli.CodeRunnerDied, RetryEligible: true,
		Message: "the mulligan process running this attempt died; resumed by pid " + fmt.Sprint(store.Self().PID),
	}
	return r.recordInterrupted(ctx, t, a, store.AttemptFailed, f)
}
