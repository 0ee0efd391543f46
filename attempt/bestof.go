package attempt

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// Racing lanes (SPEC §4.1): a task with `best_of: N` starts N lanes at once, each in a worktree
// of its own and on the chain's rungs in order (lane L on rung L-1, wrapping), each told its lane
// in the prompt and in MULLIGAN_LANE. The first lane whose attempt passes verify (succeeds,
// without verify) wins: the others are cancelled — their process trees ended like on any cancel —
// and their attempts in flight recorded `superseded`, their trees in their refs; the winner's
// change is applied to the working tree as an isolated task's is (apply-conflict included).
//
// Each lane runs the task's policy on its own: its retries, backoff, breaker, no-progress rule
// and rung escalation count its own attempts. A lane ends when it wins, is superseded, or its
// policy ends it (failed, held for a decision, or parked behind a quota wall, which stops that
// lane alone while the others race on). When every lane ended without a winner, the task takes
// the most hopeful end: parked (the earliest wall) if a lane waits for a quota reset, else held
// blocked if a lane waits for a decision, else failed.
//
// A race is a unit of one process: a run resumed after its process died, a decision on a held
// task, or a retry-task starts a fresh race of every lane (the interrupted attempts are recorded
// runner_died, as anywhere); a task parked on a quota wall races again with only the lanes that
// were parked. Attempt numbers stay one sequence per task; each attempt records its lane.

// errLostRace is the cause of a lane's context cancelled because another lane won.
var errLostRace = errors.New("another lane won the race")

// ReasonSuperseded is the code of an attempt a winning lane superseded.
const ReasonSuperseded = "superseded"

// race is what the lanes of one task share while they run.
type race struct {
	width int // best_of
	// operator is `mulligan prompt`'s text for the race: every lane's first attempt gets it.
	operator string

	// numbers is held by a lane from reading its attempt's number until the attempt is recorded,
	// so that lanes starting at once get numbers that follow one another.
	numbers sync.Mutex

	mu      sync.Mutex
	winner  int // the winning lane, 0 while none has won
	winnerN int // its attempt
	cancels map[int]context.CancelCauseFunc
	ended   map[int]bool  // lanes whose runner has returned
	wake    chan struct{} // closed (and replaced) when a lane ends or one wins
}

// wakeLocked tells the lanes waiting in claimIdle that the race changed.
func (rc *race) wakeLocked() {
	if rc.wake != nil {
		close(rc.wake)
	}
	rc.wake = make(chan struct{})
}

// end records that lane's runner has returned.
func (rc *race) end(lane int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.ended == nil {
		rc.ended = map[int]bool{}
	}
	rc.ended[lane] = true
	rc.wakeLocked()
}

// claimIdle is claim for an attempt that succeeded without changing a file: it does not win
// while another lane is still working (one of them may do the task), only once every other lane
// has ended without a winner. It reports false when another lane won, or ctx ended first.
func (rc *race) claimIdle(ctx context.Context, lane, n int) bool {
	for {
		rc.mu.Lock()
		if rc.winner != 0 {
			rc.mu.Unlock()
			return rc.winner == lane
		}
		working := 0
		for l := range rc.cancels {
			if l != lane && !rc.ended[l] {
				working++
			}
		}
		if working == 0 {
			rc.mu.Unlock()
			return rc.claim(lane, n)
		}
		if rc.wake == nil {
			rc.wake = make(chan struct{})
		}
		wake := rc.wake
		rc.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return false
		}
	}
}

// claim makes lane (its attempt n) the winner unless another lane won first, and cancels the
// other lanes. It reports whether lane won.
func (rc *race) claim(lane, n int) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.winner != 0 {
		return rc.winner == lane
	}
	rc.winner, rc.winnerN = lane, n
	rc.wakeLocked()
	for l, cancel := range rc.cancels {
		if l != lane {
			cancel(errLostRace)
		}
	}
	return true
}

// abort cancels every lane, with err as the cause.
func (rc *race) abort(err error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, cancel := range rc.cancels {
		cancel(err)
	}
}

// won returns the winning lane and its attempt (0, 0 while none has won).
func (rc *race) won() (lane, n int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.winner, rc.winnerN
}

// laneRun is one lane of a race, held by the runner that runs it (runner.lane).
type laneRun struct {
	race *race
	n    int // 1…width
	// mine are the lane's attempts in this race; consecutive and retriesUsed its policy's
	// counters (the task's row keeps the task's, which the lanes do not touch).
	mine        map[int]bool
	consecutive int
	retriesUsed int
}

// laneRung is the rung of a chain of chainLen agents that lane's attempt runs on after counted
// attempts of the lane counted: lane L starts on rung L-1, wrapping around the chain, and
// climbs from there like a task does, staying on the last rung.
func laneRung(lane, counted, chainLen int) int {
	if chainLen <= 0 {
		return 0
	}
	start := (lane - 1) % chainLen
	return min(start+counted, chainLen-1)
}

// laneWorktree is the worktree of lane L of task in run: <run>-<task>+<L> (no task id holds a
// '+', so it never names another task's worktree).
func laneWorktree(repo *snapshot.Repo, run, task string, lane int) (*snapshot.Worktree, error) {
	return repo.WorktreeFor(run + "-" + task + "+" + strconv.Itoa(lane))
}

// laneHow is how a lane ended.
type laneHow int

const (
	laneWon        laneHow = iota
	laneSuperseded         // another lane won (its attempt in flight, if any, recorded superseded)
	laneFailed             // its policy ended it failed
	laneBlocked            // its policy holds it for a decision
	laneParked             // every agent it could run is behind a quota wall
	laneStopped            // the operator asked the run to pause or cancel
	laneCancelled          // the run was cancelled while the lane ran
)

// laneEnd is how one lane ended, with the decision that ended it.
type laneEnd struct {
	lane     int
	how      laneHow
	decision Decision
	resumeAt time.Time // laneParked
}

// lanesToRace returns the lanes a race of def runs: all of them, but after a quota wall only
// those whose last attempt hit it (the others had ended before the task parked).
func lanesToRace(def *taskfile.Task, t *store.Task) []int {
	var all, parked []int
	last := map[int]*store.Attempt{}
	for i := range t.Attempts {
		if a := &t.Attempts[i]; a.Lane > 0 && a.State != store.AttemptSuperseded {
			last[a.Lane] = a
		}
	}
	for l := 1; l <= def.BestOf; l++ {
		all = append(all, l)
		if a := last[l]; a != nil && a.Class == string(taskfile.ClassQuota) {
			parked = append(parked, l)
		}
	}
	if t.State == store.TaskWaitingQuota && len(parked) > 0 {
		return parked
	}
	return all
}

// runRace runs def's lanes from base until one wins or every lane has ended, then applies the
// winner's change or gives the task the lanes' most hopeful end.
func (r *runner) runRace(ctx context.Context, t *store.Task, def *taskfile.Task, base plumbing.Hash) (*Outcome, error) {
	if out, err := r.checkpoint(ctx, t); out != nil || err != nil {
		return out, err
	}
	lanes := lanesToRace(def, t)
	var operator string
	if err := r.update(ctx, func(tx *store.Tx) error {
		var err error
		if operator, err = operatorText(tx, r.run.ID, t.ID); err != nil {
			return err
		}
		return r.transitionTask(tx, t, store.TaskTransition{To: store.TaskRunning, Cause: "race"})
	}); err != nil {
		return nil, err
	}
	rc := &race{width: def.BestOf, operator: operator, cancels: map[int]context.CancelCauseFunc{}}
	r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: fmt.Sprintf(
		"task %s races %d lane(s) (best_of %d), each in a worktree of its own; the first to pass verify wins", t.ID, len(lanes), def.BestOf)})

	type laneRunner struct {
		sub *runner
		own *store.Task
		w   *snapshot.Worktree
		wt  *worktreeSlot
		ctx context.Context
		end laneEnd
		err error
	}
	runners := make([]*laneRunner, 0, len(lanes))
	defer func() {
		for _, lr := range runners {
			lr.wt.close()
		}
	}()
	home := r.env.Repo
	for _, l := range lanes {
		w, err := laneWorktree(home, r.run.ID, t.ID, l)
		if err != nil {
			return nil, err
		}
		wt, err := r.setUpWorktree(ctx, t, def, base, w, fmt.Sprintf("lane %d of task %s", l, t.ID))
		if err != nil {
			return nil, err
		}
		sub, own := r.fork(t.ID)
		sub.env.Repo, sub.known, sub.inWorktree, sub.current, sub.slot = wt.repo, base, true, t.ID, wt
		sub.lane = &laneRun{race: rc, n: l, mine: map[int]bool{}}
		lctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		rc.cancels[l] = cancel
		runners = append(runners, &laneRunner{sub: sub, own: own, w: w, wt: wt, ctx: lctx})
	}
	deadlineAt := deadlineOf(def, t)
	var wg sync.WaitGroup
	for _, lr := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lr.end, lr.err = lr.sub.runLane(lr.ctx, lr.own, def, base, deadlineAt)
			rc.end(lr.sub.lane.n)
			if lr.err != nil {
				rc.abort(lr.err) // the race ends with the error: the other lanes stop now
			}
		}()
	}
	wg.Wait()
	r.known = plumbing.ZeroHash // the lanes ran elsewhere: the user may have changed anything
	for _, lr := range runners {
		r.absorb(lr.sub)
	}
	for _, lr := range runners {
		if lr.err != nil {
			return nil, lr.err
		}
	}
	if err := r.env.DB.View(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		cur, err := tx.GetTask(r.run.ID, t.ID)
		if err != nil {
			return err
		}
		*t = *cur
		return nil
	}); err != nil {
		return nil, err
	}

	if winner, n := rc.won(); winner != 0 {
		var w *snapshot.Worktree
		for l := 1; l <= def.BestOf; l++ {
			lw, err := laneWorktree(home, r.run.ID, t.ID, l)
			if err != nil {
				return nil, err
			}
			if l == winner {
				w = lw // applied, then removed
				continue
			}
			// Every other lane's trees are in its attempts' refs (an earlier race's too): its
			// worktree goes.
			if err := home.RemoveWorktree(lw); err != nil {
				r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: "could not remove the worktree " + lw.Dir + ": " + err.Error()})
			}
		}
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: fmt.Sprintf(
			"lane %d won the race with %s/%s@%d; the other lanes' attempts in flight are superseded (their trees stay in their refs)", winner, r.run.ID, t.ID, n)})
		if t.State == store.TaskWaitingApproval {
			r.env.Progress.Event(ProgressEvent{Kind: KindTaskState, Task: t.ID, State: store.TaskWaitingApproval, Reason: ReasonNeedsApproval})
			r.heldHere[t.ID] = true // the working tree never held the lanes' attempts (no heldTree)
			return nil, r.update(ctx, func(tx *store.Tx) error { return tx.ParkTask(r.run.ID, t.ID) })
		}
		return r.applyIsolated(ctx, t, base, w)
	}
	if ctx.Err() != nil {
		return r.cancelTask(ctx, t, nil)
	}
	if out, err := r.checkpoint(ctx, t); out != nil || err != nil {
		return out, err
	}
	ends := make([]laneEnd, len(runners))
	for i, lr := range runners {
		ends[i] = lr.end
	}
	return r.endRace(ctx, t, def, ends)
}

// endRace gives a task whose lanes all ended without a winner the most hopeful of their ends:
// parked until the earliest quota reset, else held for a decision, else failed. Lanes the
// operator stopped (a pause between attempts) leave the task to the pause.
func (r *runner) endRace(ctx context.Context, t *store.Task, def *taskfile.Task, ends []laneEnd) (*Outcome, error) {
	var parked, blocked, failed *laneEnd
	for i := range ends {
		e := &ends[i]
		switch e.how {
		case laneParked:
			if parked == nil || e.resumeAt.Before(parked.resumeAt) {
				parked = e
			}
		case laneBlocked:
			if blocked == nil {
				blocked = e
			}
		case laneFailed:
			failed = e
		case laneCancelled, laneStopped:
			return r.cancelTask(ctx, t, nil)
		}
	}
	hold := func(state store.TaskState, reason string, resumeAt *time.Time) (*Outcome, error) {
		if err := r.setTaskState(ctx, t, state, reason, resumeAt); err != nil {
			return nil, err
		}
		r.env.Progress.Event(ProgressEvent{Kind: KindTaskState, Task: t.ID, State: string(state), Reason: reason})
		r.heldHere[t.ID] = true // isolated: the working tree holds nothing of the lanes (no heldTree)
		return nil, r.update(ctx, func(tx *store.Tx) error { return tx.ParkTask(r.run.ID, t.ID) })
	}
	switch {
	case parked != nil:
		at := parked.resumeAt.UTC()
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: fmt.Sprintf(
			"no lane won; lane %d waits behind a quota wall until %s: the task parks", parked.lane, at.Format(time.RFC3339))})
		return hold(store.TaskWaitingQuota, ReasonQuota, &at)
	case blocked != nil:
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: fmt.Sprintf(
			"no lane won; lane %d is held (%s): the task waits for a decision", blocked.lane, blocked.decision.Reason)})
		if why := WhyNotRetried(def, blocked.decision, r.run.ID); why != "" {
			r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: why})
		}
		return hold(store.TaskBlocked, blocked.decision.Reason, nil)
	case failed != nil:
		f := failed.decision.Failure
		if err := r.update(ctx, func(tx *store.Tx) error {
			tr := store.TaskTransition{To: store.TaskFailed, Reason: failed.decision.Reason}
			if f != nil {
				tr.Event = store.TaskStateChanged{Class: string(f.Class), Code: f.Code, Message: fmt.Sprintf("every lane failed; lane %d: %s", failed.lane, f.Message)}
			}
			return r.transitionTask(tx, t, tr)
		}); err != nil {
			return nil, err
		}
		r.env.Progress.Event(ProgressEvent{Kind: KindTaskState, Task: t.ID, State: store.TaskFailed, Reason: failed.decision.Reason,
			Message: WhyNotRetried(def, failed.decision, r.run.ID)})
		return nil, nil
	}
	return nil, fmt.Errorf("task %s: the race ended without a winner and without a lane's end", t.ID)
}

// runLane runs one lane's attempts until it wins, loses, or its policy ends it. A lane that did
// not win puts back what its attempts did to HEAD, refs, the stash and the index (by the task's
// `git:` policy, as a reset between attempts would): no later reset of its worktree will.
func (r *runner) runLane(ctx context.Context, t *store.Task, def *taskfile.Task, base plumbing.Hash, deadlineAt time.Time) (end laneEnd, err error) {
	defer func() {
		if err != nil || end.how == laneWon || r.isFenced() {
			return
		}
		if perr := r.putBackGit(context.WithoutCancel(ctx), t.ID, def, false); perr != nil {
			r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: fmt.Sprintf("lane %d: could not put back its git changes: %s", r.lane.n, perr)})
		}
	}()
	return r.raceLane(ctx, t, def, base, deadlineAt)
}

// raceLane is runLane's loop.
func (r *runner) raceLane(ctx context.Context, t *store.Task, def *taskfile.Task, base plumbing.Hash, deadlineAt time.Time) (laneEnd, error) {
	l := r.lane
	end := func(how laneHow, d Decision) (laneEnd, error) { return laneEnd{lane: l.n, how: how, decision: d}, nil }
	var delay time.Duration
	for {
		if w, _ := l.race.won(); w != 0 && w != l.n {
			return end(laneSuperseded, Decision{})
		}
		if ctx.Err() != nil {
			return end(laneCancelled, Decision{})
		}
		if c, err := r.readControl(ctx); err != nil {
			return laneEnd{}, err
		} else if c != store.ControlNone {
			return end(laneStopped, Decision{})
		}
		if delay > 0 {
			if err := r.env.Sleep(ctx, delay); err != nil {
				continue // lost the race, or the run was cancelled: the top of the loop says which
			}
			delay = 0
		}
		res, err := r.runAttempt(ctx, def, t, base, deadlineAt)
		if err != nil {
			return laneEnd{}, err
		}
		d := res.decision
		switch d.Action {
		case ActSucceed:
			return end(laneWon, d)
		case ActRetry:
			l.retriesUsed++
			delay = d.Delay
			r.env.Progress.Event(ProgressEvent{Kind: KindRetry, Task: t.ID, Lane: l.n, Delay: d.Delay})
		case ActQuota, ActFailover:
			// another rung of the lane's, at once
		case ActPark:
			return laneEnd{lane: l.n, how: laneParked, decision: d, resumeAt: res.resumeAt}, nil
		case ActFail:
			return end(laneFailed, d)
		case ActBlock:
			return end(laneBlocked, d)
		default: // ActCancel
			if d.Reason == ReasonSuperseded || context.Cause(ctx) == errLostRace {
				return end(laneSuperseded, d)
			}
			return end(laneCancelled, d)
		}
	}
}

// lost reports whether this runner is a lane whose context another lane's win cancelled.
func (r *runner) lost(ctx context.Context) bool {
	return r.lane != nil && errors.Is(context.Cause(ctx), errLostRace)
}

// laneView is t with only this lane's attempts of this race, for the policy's counters (the
// no-progress rule reads the attempts in a row); t itself outside a race.
func (r *runner) laneView(t *store.Task) *store.Task {
	if r.lane == nil {
		return t
	}
	v := *t
	v.Attempts = nil
	for _, a := range t.Attempts {
		if r.lane.mine[a.N] {
			v.Attempts = append(v.Attempts, a)
		}
	}
	return &v
}

// supersededFailure is the failure of a lane's attempt that lost the race: recorded superseded,
// not a failure of the task, not counted.
func supersededFailure(lane, winner, winnerN int, task string) *agentcli.Failure {
	return &agentcli.Failure{Class: taskfile.ClassCancellation, Code: ReasonSuperseded,
		Message: fmt.Sprintf("lane %d was cancelled: lane %d won the race with %s@%d", lane, winner, task, winnerN)}
}

// laneEnv is MULLIGAN_LANE for a racing lane's processes (the agent, verify); none outside a race.
func (r *runner) laneEnv() []string {
	if r.lane == nil {
		return nil
	}
	return []string{"MULLIGAN_LANE=" + strconv.Itoa(r.lane.n)}
}
