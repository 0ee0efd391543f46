package attempt

import (
	"context"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/store"
)

// Parallel isolated tasks (SPEC §4.1): independent tasks that run in worktrees of their own run
// at the same time, up to the file's `parallel` (default 2). The runner's loop becomes a scheduler
// over the DAG: it starts the next task and the other ready isolated tasks after it in the run's
// order, each on a runner of its own (its own worktree, known tree, held tasks; the same run,
// epoch, kill channel and hooks), and whenever one ends it starts what is ready then — a task
// whose dependency just succeeded, or the next independent one — in the freed slot. Each applies
// its change to the working tree when it succeeds (the user's tree is one: the repository
// serialises the applies), so a later one sees an earlier one's change as the tree's and
// conflicts only on the same paths. When none is left running (and none ready) the loop goes on
// in place: a task that is not isolated runs alone.

// parallelBatch returns first and the ready isolated tasks after it, up to the file's parallel;
// nil when first is not isolated or parallel is 1 (it runs as before).
func (r *runner) parallelBatch(run *store.Run, first *store.Task) []*store.Task {
	def := r.file.Task(first.ID)
	if def == nil || !r.isolated(def) || r.file.Parallel < 2 {
		return nil
	}
	return append([]*store.Task{first}, r.readyIsolated(run, map[string]bool{first.ID: true}, r.file.Parallel-1)...)
}

// readyIsolated returns up to limit isolated tasks of run, in its order, that can start now: not
// finished, not held (unless its quota wall is over, as nextTask reads it), not in running, every
// dependency done.
func (r *runner) readyIsolated(run *store.Run, running map[string]bool, limit int) []*store.Task {
	byID := map[string]*store.Task{}
	for i := range run.Tasks {
		byID[run.Tasks[i].ID] = &run.Tasks[i]
	}
	now := r.env.Now()
	var ready []*store.Task
	for i := range run.Tasks {
		if len(ready) >= limit {
			break
		}
		t := &run.Tasks[i]
		if running[t.ID] || store.TaskFinished(t.State) || t.State == store.TaskRunning {
			continue
		}
		if store.TaskHeld(t.State) && !quotaOver(t, r.heldHere, now) {
			continue
		}
		if d := r.file.Task(t.ID); d == nil || !r.isolated(d) {
			continue
		}
		if met, _ := needsMet(t, byID, r.allowFail); met {
			ready = append(ready, t)
		}
	}
	return ready
}

// runBatch runs the batch's tasks at once and, as each ends, starts the isolated tasks ready
// then in the freed slots, until none is running. After an error or an outcome that stops the
// run (cancel, pause, a tripped breaker) it starts nothing more and waits for the ones running;
// the first error, else the first such outcome, is the batch's.
func (r *runner) runBatch(ctx context.Context, batch []*store.Task) (*Outcome, error) {
	type result struct {
		task string
		sub  *runner
		out  *Outcome
		err  error
	}
	done := make(chan result)
	running := map[string]bool{}
	start := func(t *store.Task) {
		sub, own := r.fork(t.ID)
		running[t.ID] = true
		go func() {
			out, err := sub.runTask(ctx, own)
			done <- result{task: t.ID, sub: sub, out: out, err: err}
		}()
	}
	for _, t := range batch {
		start(t)
	}
	var stop *Outcome
	var firstErr error
	for len(running) > 0 {
		x := <-done
		delete(running, x.task)
		r.absorb(x.sub)
		switch {
		case x.err != nil && firstErr == nil:
			firstErr = x.err
		case x.out != nil && stop == nil:
			stop = x.out
		}
		if firstErr != nil || stop != nil || ctx.Err() != nil {
			continue // start nothing more: wait for the ones running
		}
		run, err := r.reload(ctx)
		if err != nil {
			firstErr = err
			continue
		}
		for _, t := range r.readyIsolated(run, running, r.file.Parallel-len(running)) {
			start(t)
		}
	}
	r.known = plumbing.ZeroHash // the tasks applied their changes to the working tree
	if firstErr != nil {
		return nil, firstErr
	}
	return stop, nil
}

// absorb takes what a forked runner (a parallel task, a racing lane) learned that the run's
// runner must know once it has ended: the tasks it held, the signal that stopped it, a fence.
func (r *runner) absorb(sub *runner) {
	for id := range sub.heldHere {
		r.heldHere[id] = true
	}
	sig, fenced := sub.signal(), sub.isFenced()
	r.mu.Lock()
	defer r.mu.Unlock()
	if sig != 0 {
		r.sigSeen = sig
	}
	r.fenced = r.fenced || fenced
}

// reload reads the run's rows again (siblings write theirs while others run) and keeps them as
// the ones the next fork copies.
func (r *runner) reload(ctx context.Context) (*store.Run, error) {
	var run *store.Run
	err := r.env.DB.View(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		var err error
		run, err = tx.GetRun(r.run.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	r.run = run
	return run, nil
}

// fork is a runner for task of a batch, and that task in its own copy of the run: the same run,
// epoch, file, kill channel and hooks as r, with its own repository (swapped for its worktree),
// known tree, held tasks and copy of the run's rows (siblings write theirs at the same time).
func (r *runner) fork(task string) (*runner, *store.Task) {
	run := *r.run
	run.Tasks = append([]store.Task(nil), r.run.Tasks...)
	f := newRunner(r.env, r.file, &run)
	f.epoch, f.hooks, f.killCh, f.logDir = r.epoch, r.hooks, r.killCh, r.logDir
	for i := range run.Tasks {
		if run.Tasks[i].ID == task {
			return f, &run.Tasks[i]
		}
	}
	return f, nil // not reached: the batch's tasks are the run's
}
