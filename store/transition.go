package store

import (
	"fmt"
	"time"
)

// TaskTransition is one change of a task's state, for TransitionTask.
type TaskTransition struct {
	To TaskState
	// Reason is why the task is in To, kept on the row ("" for none).
	Reason string
	// Cause is the event's reason where it is not the row's: "retry" for a backoff, the
	// operator's decision that made a task pending ("retry-task", "resume-immediate"). "" means
	// Reason.
	Cause string
	// Attempt is the attempt whose end made the change (0: none; the hooks then name the task's
	// latest attempt).
	Attempt int
	// ResumeAt is when a backoff or waiting_quota task may go on (nil clears it).
	ResumeAt *time.Time
	// At is finished_at when To is a finished state (zero: now).
	At time.Time
	// Row is the row to write, as the caller holds it (the counters, base and times it changed);
	// nil: the row as stored. Its state, reason, resume_at and finished_at are the transition's.
	Row *Task
	// Event is the rest of the event's payload (a failure, a delay, who decided); From, To,
	// Reason, ResumeAt and Counters are filled in here.
	Event TaskStateChanged
}

// TransitionTask is the one door of a task's state change: in the caller's transaction it writes
// the row (entering running stamps started_at the first time; a finished state stamps
// finished_at, any other clears it), appends task.state_changed with the counters the row now
// holds, queues the hooks the change fires and, for a task entering blocked or
// waiting_approval, appends task.supervision_needed. Staying in a state records the event and
// fires nothing. It returns the row as written (without attempts).
func (tx *Tx) TransitionTask(run, task string, tr TaskTransition) (*Task, error) {
	if !tr.To.Valid() {
		return nil, fmt.Errorf("task %s/%s: unknown task state %q", run, task, tr.To)
	}
	stored, err := tx.tasks(`WHERE run_id = ? AND id = ?`, run, task)
	if err != nil {
		return nil, fmt.Errorf("read task %s/%s: %w", run, task, err)
	}
	if len(stored) == 0 {
		return nil, fmt.Errorf("task %s/%s: %w", run, task, ErrNotFound)
	}
	from := TaskState(stored[0].State)
	row := stored[0]
	if tr.Row != nil {
		row = *tr.Row
		row.RunID, row.ID = run, task
	}
	row.Attempts = nil
	now := tx.now()
	row.State, row.Reason, row.ResumeAt = string(tr.To), tr.Reason, msTime(tr.ResumeAt)
	if tr.To == TaskRunning && row.StartedAt == nil {
		row.StartedAt = &now
	}
	row.FinishedAt = nil
	if tr.To.Finished() {
		at := tr.At
		if at.IsZero() {
			at = now
		}
		row.FinishedAt = msTime(&at)
	}
	row.StartedAt = msTime(row.StartedAt)
	if err := tx.writeTask(&row); err != nil {
		return nil, err
	}
	ev := tr.Event
	ev.From, ev.To, ev.ResumeAt = from, tr.To, row.ResumeAt
	ev.Reason = OptString(tr.Reason)
	if tr.Cause != "" {
		ev.Reason = OptString(tr.Cause)
	}
	ev.Counters = &TaskCounters{
		Reason: OptString(row.Reason), RetriesUsed: row.RetriesUsed, ConsecutiveFailures: row.ConsecutiveFailures,
		ResumeAt: row.ResumeAt, BaseTree: OptString(row.BaseTree), StartedAt: row.StartedAt, FinishedAt: row.FinishedAt,
	}
	seq, err := tx.appendEvent(run, task, tr.Attempt, EventTaskStateChanged, ev)
	if err != nil {
		return nil, err
	}
	if from != tr.To {
		if err := tx.queueTaskHooks(run, task, tr.Attempt, tr.To, string(ev.Reason), seq); err != nil {
			return nil, err
		}
		if tr.To == TaskBlocked || tr.To == TaskWaitingApproval {
			if err := tx.supervisionNeeded(run, task, tr.Attempt, tr.To, string(ev.Reason)); err != nil {
				return nil, err
			}
		}
	}
	return &row, nil
}

// msTime is t as the database keeps it (UTC, whole milliseconds), so the counters an event
// records equal the row read back.
func msTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := fromMS(ms(*t))
	return &v
}

// RunTransition is one change of a run's state, for TransitionRun.
type RunTransition struct {
	To RunState
	// Reason is why the run is in To, kept on the row ("" for none).
	Reason string
	// Cause is the event's reason where it is not the row's ("resumed" for a run claimed
	// running again). "" means Reason.
	Cause string
	// Row is the run's header to write, as the caller holds it (a counter it changed); nil: the
	// header as stored. Its state, reason and finished_at are the transition's.
	Row *Run
	// Event is the rest of the event's payload; From, To and Reason are filled in here.
	Event RunStateChanged
}

// TransitionRun is the one door of a run's state change: in the caller's transaction it writes
// the run's state and reason (a finished state stamps finished_at, any other clears it: the run
// is live again), appends run.state_changed and queues the run-level hooks the change fires. It
// returns the state the run left.
func (tx *Tx) TransitionRun(run string, tr RunTransition) (RunState, error) {
	if !tr.To.Valid() {
		return "", fmt.Errorf("run %s: unknown run state %q", run, tr.To)
	}
	hdr, err := tx.RunHeader(run)
	if err != nil {
		return "", err
	}
	from := RunState(hdr.State)
	if tr.Row != nil {
		hdr = tr.Row
	}
	hdr.State, hdr.Reason, hdr.FinishedAt = string(tr.To), tr.Reason, nil
	if tr.To.Finished() {
		hdr.FinishedAt = msTime(Ptr(tx.now()))
	}
	if err := tx.writeRun(hdr); err != nil {
		return "", err
	}
	ev := tr.Event
	ev.From, ev.To, ev.Reason = from, tr.To, OptString(tr.Reason)
	if tr.Cause != "" {
		ev.Reason = OptString(tr.Cause)
	}
	seq, err := tx.appendEvent(run, "", 0, EventRunStateChanged, ev)
	if err != nil {
		return "", err
	}
	if from != tr.To {
		if err := tx.queueRunHooks(run, tr.To, string(ev.Reason), seq); err != nil {
			return "", err
		}
	}
	return from, nil
}
