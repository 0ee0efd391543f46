package attempt

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// Reloading a run's task file (`resume --reload`, `retry-task --reload`, SPEC §4 item 7). A run
// keeps the definition it started with; a reload replaces it with the edited file, in the
// transaction that continues the run, under these rules:
//
//   - a task of the run that the new file no longer has is removed from the run when it has no
//     attempts, and refuses the whole reload when it has (its history is the run's);
//   - the run keeps every task it holds that the new file still has, and gains their new
//     dependencies; a run that held every task of its old file (`mulligan run` without task
//     names) gains every new task of the file too;
//   - the order is recomputed from the new file (dependency order, file order breaking ties);
//     kept tasks keep their state, attempts and counters, added ones are pending;
//   - the changed definitions (prompt, agents, policy, verify, hooks, …) apply from the next
//     attempt; finished tasks are not reset (that is retry-task's decision).

// ReloadPlan is what reloading a run's task file changes in the run.
type ReloadPlan struct {
	// Tasks are the run's tasks after the reload in the new run order (Ord set): the kept ones
	// with their state, attempts and counters and the new file's needs; the added ones pending.
	Tasks   []store.Task
	Added   []string // tasks the run gains, in run order
	Removed []string // tasks without attempts the new file no longer has
	Changed []string // kept tasks whose definition or one of whose agents changed, in run order
	// Agents are the agents whose definition changed: they are enabled again if the run had
	// disabled them (an agent_missing or auth failure may be what the edit fixed).
	Agents []string
	// RunHooks is true when the run-level hooks changed.
	RunHooks bool
}

// GoneTask is a task with recorded attempts that a reloaded task file no longer has.
type GoneTask struct {
	ID       string
	Attempts []int // attempt numbers
}

// ReloadConflictError refuses a reload that would drop tasks with recorded attempts.
type ReloadConflictError struct {
	Run  string
	File string
	Gone []GoneTask
}

func (e *ReloadConflictError) Error() string {
	parts := make([]string, len(e.Gone))
	for i, g := range e.Gone {
		ns := make([]string, len(g.Attempts))
		for j, n := range g.Attempts {
			ns[j] = fmt.Sprintf("%s@%d", g.ID, n)
		}
		parts[i] = fmt.Sprintf("%s (attempts %s)", g.ID, strings.Join(ns, ", "))
	}
	noun := "task"
	if len(e.Gone) > 1 {
		noun = "tasks"
	}
	return fmt.Sprintf("%s no longer has %s %s of run %s, recorded with attempts: a reload cannot drop them",
		e.File, noun, strings.Join(parts, "; "), e.Run)
}

// PlanReload computes what reloading run's task file from old (the stored definition; nil when
// it cannot be read) to updated changes, or refuses with a *ReloadConflictError. It changes
// nothing.
func PlanReload(run *store.Run, old, updated *taskfile.File) (*ReloadPlan, error) {
	p := &ReloadPlan{}
	var gone []GoneTask
	var keep []string
	for _, t := range run.Tasks {
		if updated.Task(t.ID) != nil {
			keep = append(keep, t.ID)
			continue
		}
		if len(t.Attempts) == 0 {
			p.Removed = append(p.Removed, t.ID)
			continue
		}
		g := GoneTask{ID: t.ID}
		for _, a := range t.Attempts {
			g.Attempts = append(g.Attempts, a.N)
		}
		gone = append(gone, g)
	}
	if len(gone) > 0 {
		return nil, &ReloadConflictError{Run: run.ID, File: updated.Path, Gone: gone}
	}
	var order []*taskfile.Task
	switch {
	case heldAll(run, old):
		var err error
		if order, err = plan(updated, nil); err != nil {
			return nil, err
		}
	case len(keep) > 0:
		var err error
		if order, err = plan(updated, keep); err != nil {
			return nil, err
		}
	}
	held := make(map[string]*store.Task, len(run.Tasks))
	for i := range run.Tasks {
		held[run.Tasks[i].ID] = &run.Tasks[i]
	}
	for i, def := range order {
		t, ok := held[def.ID]
		if !ok {
			p.Added = append(p.Added, def.ID)
			p.Tasks = append(p.Tasks, store.Task{RunID: run.ID, ID: def.ID, Ord: i, State: store.TaskPending, Needs: nonNil(def.Needs)})
			continue
		}
		nt := *t
		nt.Ord, nt.Needs = i, nonNil(def.Needs)
		p.Tasks = append(p.Tasks, nt)
		if old != nil && !sameTask(old, updated, def.ID) {
			p.Changed = append(p.Changed, def.ID)
		}
	}
	if old != nil {
		for _, name := range updated.AgentOrder {
			if a, ok := old.Agents[name]; ok && !sameAgent(a, updated.Agents[name]) {
				p.Agents = append(p.Agents, name)
			}
		}
		p.RunHooks = !sameHooks(old.Hooks, updated.Hooks)
	}
	return p, nil
}

// heldAll reports whether the run holds every task of its old file: it was started without task
// names (or with all of them), so it takes the new file's new tasks too.
func heldAll(run *store.Run, old *taskfile.File) bool {
	if old == nil {
		return false
	}
	for _, t := range old.Tasks {
		if !slices.ContainsFunc(run.Tasks, func(rt store.Task) bool { return rt.ID == t.ID }) {
			return false
		}
	}
	return true
}

// sameTask reports whether task id means the same in both files: its own fields and the
// definitions of the agents it names (positions in the file do not count).
func sameTask(a, b *taskfile.File, id string) bool {
	ta, tb := a.Task(id), b.Task(id)
	if ta == nil || tb == nil || !reflect.DeepEqual(taskKey(ta), taskKey(tb)) {
		return false
	}
	for _, name := range ta.Agents {
		if !sameAgent(a.Agents[name], b.Agents[name]) {
			return false
		}
	}
	return true
}

// taskKey is t without what does not define it: its position and the compiled classify patterns
// (their source text stays).
func taskKey(t *taskfile.Task) taskfile.Task {
	k := *t
	k.Pos = taskfile.Pos{}
	k.Classify = slices.Clone(t.Classify)
	for i := range k.Classify {
		k.Classify[i].Re = nil
	}
	k.Hooks = normHooks(t.Hooks)
	return k
}

func sameAgent(a, b *taskfile.Agent) bool {
	if a == nil || b == nil {
		return a == b
	}
	ka, kb := *a, *b
	ka.Pos, kb.Pos = taskfile.Pos{}, taskfile.Pos{}
	if len(ka.Env) == 0 && len(kb.Env) == 0 {
		ka.Env, kb.Env = nil, nil
	}
	return reflect.DeepEqual(ka, kb)
}

func sameHooks(a, b taskfile.Hooks) bool { return reflect.DeepEqual(normHooks(a), normHooks(b)) }

// normHooks drops empty entries so that "no hooks" compares equal however it was written.
func normHooks(h taskfile.Hooks) taskfile.Hooks {
	out := taskfile.Hooks{}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if len(h[k]) > 0 {
			out[k] = h[k]
		}
	}
	return out
}

// EventRunReloaded records a reload: the file, old and new hashes and what changed.
const EventRunReloaded = store.EventRunReloaded

// applyReload replaces the run's stored definition with updated and applies the plan, inside the
// caller's transaction (which also changes the states that continue the run): removed tasks are
// deleted, kept ones re-ordered, added ones inserted pending, the run's hooks replaced (the
// deliveries already in the outbox stay), changed agents enabled again, and a run.reloaded
// event appended. old is the stored definition (nil when unreadable); by names the command.
//
// graft, when set, rewrites the recorded base tree of each unfinished task that already started
// so that it holds the reloaded task file: the reset to that base must not put the old one back.
func applyReload(tx *store.Tx, runID string, old, updated *taskfile.File, by string, graft func(tree string) (string, error)) (*ReloadPlan, error) {
	run, err := tx.GetRun(runID)
	if err != nil {
		return nil, err
	}
	p, err := PlanReload(run, old, updated)
	if err != nil {
		return nil, err
	}
	for _, id := range p.Removed {
		if err := tx.DeleteTask(run.ID, id); err != nil {
			return nil, err
		}
	}
	defs := make([]*taskfile.Task, len(p.Tasks))
	for i := range p.Tasks {
		t := &p.Tasks[i]
		defs[i] = updated.Task(t.ID)
		if graft != nil && t.BaseTree != "" && !store.TaskFinished(t.State) {
			if t.BaseTree, err = graft(t.BaseTree); err != nil {
				return nil, fmt.Errorf("reload: carry %s into task %s's base: %w", updated.Path, t.ID, err)
			}
		}
		if slices.Contains(p.Added, t.ID) {
			err = tx.InsertTask(t)
		} else {
			err = tx.UpdateTask(t)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := tx.ReplaceHooks(run.ID, hookDefs(updated, defs)); err != nil {
		return nil, err
	}
	for _, a := range p.Agents {
		if err := tx.EnableAgent(run.ID, a); err != nil {
			return nil, err
		}
	}
	hdr, err := tx.RunHeader(run.ID)
	if err != nil {
		return nil, err
	}
	oldHash := hdr.TaskFileHash
	hdr.TaskFile, hdr.TaskFileHash, hdr.TaskFileContent = updated.Path, updated.Hash, updated.Content
	if err := tx.UpdateRun(hdr); err != nil {
		return nil, err
	}
	_, err = tx.AppendEvent(run.ID, "", 0, EventRunReloaded, store.RunReloaded{
		TaskFile: updated.Path, OldHash: oldHash, NewHash: updated.Hash,
		Added: nonNil(p.Added), Removed: nonNil(p.Removed), Changed: nonNil(p.Changed),
		AgentsChanged: nonNil(p.Agents), RunHooksChanged: p.RunHooks, By: by, Who: Who(),
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}
