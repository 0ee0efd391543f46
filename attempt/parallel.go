package attempt

import (
	"context"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/store"
)

// Parallel isolated tasks (SPEC §4.1): independent tasks that run in worktrees of their own run
// at the same time, up to the file's `parallel` (default 2). The runner starts a batch — the next
// task and the other ready isolated tasks after it in the run's order — each on a runner of its
// own (its own worktree, known tree, held tasks; the same run, epoch, kill channel and hooks),
// waits for all of them, then picks the next batch. Each applies its change to the working tree
// when it succeeds (the user's tree is one: the repository serialises the applies), so a later
// one sees an earlier one's change as the tree's and conflicts only on the same paths.

// parallelBatch returns first and the ready isolated tasks after it, up to the file's parallel;
// a batch of one (first not isolated, nothing else ready) runs as before.
func (r *runner) parallelBatch(run *store.Run, first *store.Task) []*store.Task {
	def := r.file.Task(first.ID)
	if def == nil || !r.isolated(def) || r.file.Parallel < 2 {
		return nil
	}
	batch := []*store.Task{first}
	byID := map[string]*store.Task{}
	for i := range run.Tasks {
		byID[run.Tasks[i].ID] = &run.Tasks[i]
	}
	now := r.env.Now()
	for i := range run.Tasks {
		if len(batch) >= r.file.Parallel {
			break
		}
		t := &run.Tasks[i]
		if t == first || t.ID == first.ID || store.TaskFinished(t.State) {
			continue
		}
		if store.TaskHeld(t.State) && !(t.State == store.TaskWaitingQuota && t.ResumeAt != nil && !now.Before(*t.ResumeAt)) {
			continue
		}
		if d := r.file.Task(t.ID); d == nil || !r.isolated(d) {
			continue
		}
		if met, _ := needsMet(t, byID, r.allowFail); met {
			batch = append(batch, t)
		}
	}
	return batch
}

// runBatch runs the batch's tasks at once and waits for all of them. The first error, else the
// first outcome that stops the run, is the batch's.
func (r *runner) runBatch(ctx context.Context, batch []*store.Task) (*Outcome, error) {
	type result struct {
		sub *runner
		out *Outcome
		err error
	}
	res := make([]result, len(batch))
	var wg sync.WaitGroup
	for i, t := range batch {
		sub, own := r.fork(t.ID)
		res[i].sub = sub
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i].out, res[i].err = sub.runTask(ctx, own)
		}()
	}
	wg.Wait()
	r.known = plumbing.ZeroHash // the batch applied its changes to the working tree
	for _, x := range res {
		for id := range x.sub.heldHere {
			r.heldHere[id] = true
		}
		if x.sub.sigSeen != 0 {
			r.mu.Lock()
			r.sigSeen = x.sub.sigSeen
			r.mu.Unlock()
		}
	}
	for _, x := range res {
		if x.err != nil {
			return nil, x.err
		}
	}
	for _, x := range res {
		if x.out != nil {
			return x.out, nil
		}
	}
	return nil, nil
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
