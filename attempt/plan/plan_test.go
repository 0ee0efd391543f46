package plan

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// The plans are tested without the CLI: a real repository (go-git's init, hermetic config), a
// real SQLite history, real runs of `sh` agents, and effects recorded in the ledger as
// `mulligan effect record` would.

type fixture struct {
	t   *testing.T
	env Env
	dir string
	log string // what the compensations append to
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, ".gitconfig")
	if err := os.WriteFile(cfg, []byte("[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"+
		"[commit]\n\tgpgSign = false\n[maintenance]\n\tauto = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_GLOBAL", cfg)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_TERMINAL_PROMPT", "0")
	t.Setenv("LC_ALL", "C")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "xdg"))
	dir := t.TempDir()
	if _, err := git.PlainInit(dir, false); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "notes.txt"), "notes\n")
	repo, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { repo.Close() })
	db, err := store.Open(store.DefaultPath(repo.CommonDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &fixture{t: t, env: Env{DB: db, Repo: repo}, dir: repo.Root(), log: filepath.Join(home, "comp.log")}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs a task file to its end in this process and returns the run.
func (f *fixture) run(id, yaml string) *store.Run {
	f.t.Helper()
	file, err := taskfile.Parse("tasks.yaml", []byte(yaml))
	if err != nil {
		f.t.Fatal(err)
	}
	env := attempt.Env{Repo: f.env.Repo, DB: f.env.DB, Environ: os.Environ(), Grace: 200 * time.Millisecond,
		HeartbeatEvery: 50 * time.Millisecond, ControlEvery: 50 * time.Millisecond,
		Sleep: func(context.Context, time.Duration) error { return nil }}
	if _, err := attempt.Start(context.Background(), env, attempt.StartOptions{File: file, ID: id}); err != nil {
		f.t.Fatal(err)
	}
	return f.get(id)
}

func (f *fixture) get(id string) *store.Run {
	f.t.Helper()
	run, err := getRun(context.Background(), f.env.DB, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return run
}

// effect records an effect of task@n; compensate is a shell command run in the worktree ("":
// none).
func (f *fixture) effect(run, task string, n int, name string, idempotent bool, compensate string) {
	f.t.Helper()
	e := &store.Effect{RunID: run, TaskID: task, Attempt: n, Name: name, Idempotent: idempotent}
	if compensate != "" {
		e.Compensate = []string{"sh", "-c", compensate}
	}
	if err := f.env.DB.Update(context.Background(), func(tx *store.Tx) error { return tx.RecordEffect(e) }); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) effects(run string) map[string]string {
	f.t.Helper()
	es, err := runEffects(context.Background(), f.env.DB, run)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range es {
		out[e.Name] = e.State
	}
	return out
}

func (f *fixture) undoRefs() int {
	f.t.Helper()
	refs, err := f.env.Repo.Refs(snapshot.UndoPrefix)
	if err != nil {
		f.t.Fatal(err)
	}
	return len(refs)
}

func (f *fixture) exists(name string) bool {
	_, err := os.Stat(filepath.Join(f.dir, name))
	return err == nil
}

func (f *fixture) events(run, typ string) int {
	f.t.Helper()
	n := 0
	for _, ev := range mustEvents(f.t, f.env.DB, run) {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func (f *fixture) readLog() string {
	data, _ := os.ReadFile(f.log)
	return string(data)
}

const twoTasks = `version: 1
agents:
  a: {command: [sh, -c, "echo a > a.txt"]}
  b: {command: [sh, -c, "echo b > b.txt"]}
tasks:
  - {id: a, prompt: p, agent: a}
  - {id: b, needs: [a], prompt: p, agent: b}
`

// TestPlanRevert: the plan refuses an uncompensable crossing, shows the tree and the effects
// without changing anything, and Execute compensates while the later tree is still on disk,
// then restores (undo point first), then audits.
func TestPlanRevert(t *testing.T) {
	f := newFixture(t)
	run := f.run("r1", twoTasks)
	// The compensation says whether b's file was still there when it ran: compensations come
	// before the tree changes.
	f.effect(run.ID, "b", 1, "push", false, "if test -e b.txt; then echo push-before >> "+f.log+"; else echo push-after >> "+f.log+"; fi")
	f.effect(run.ID, "b", 1, "mail", false, "")
	f.effect(run.ID, "a", 1, "tag", false, "echo tag >> "+f.log) // a@1's own: not crossed going back to its post tree

	ctx := context.Background()
	_, err := PlanRevert(ctx, f.env, RevertOptions{Run: run.ID, Task: "a", N: 1})
	var uncomp *UncompensableError
	if !errors.As(err, &uncomp) || len(uncomp.Effects) != 1 || uncomp.Effects[0].Name != "mail" {
		t.Fatalf("PlanRevert without --force: %v; want the refusal naming mail", err)
	}
	if !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("refusal %q does not say nothing changed", err)
	}

	p, err := PlanRevert(ctx, f.env, RevertOptions{Run: run.ID, Task: "a", N: 1, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	var names, actions []string
	for _, e := range p.Crossed {
		names, actions = append(names, e.Name), append(actions, p.Action(e))
	}
	if !slices.Equal(names, []string{"mail", "push"}) || !slices.Equal(actions, []string{ActionUnresolved, ActionCompensate}) {
		t.Errorf("crossed %v with actions %v; want [mail push] newest first, [leave-unresolved compensate]", names, actions)
	}
	a1 := run.Tasks[0].Attempts[0]
	if p.Tree.String() != a1.Tree || len(p.Changes) != 1 || p.Changes[0].Path != "b.txt" || p.Changes[0].Action != snapshot.Delete {
		t.Errorf("plan tree %s changes %v; want a@1's tree %s, deleting b.txt", p.Tree, p.Changes, a1.Tree)
	}
	// Planning changed nothing.
	if !f.exists("b.txt") || f.undoRefs() != 0 || f.readLog() != "" || f.events(run.ID, "revert") != 0 ||
		f.effects(run.ID)["push"] != store.EffectRecorded {
		t.Fatal("planning changed the tree, the refs, the world or the history")
	}

	res, err := p.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.readLog(); got != "push-before\n" {
		t.Errorf("compensation log %q; want push run once, before the tree changed", got)
	}
	if f.exists("b.txt") || !f.exists("a.txt") {
		t.Error("the tree is not a@1's")
	}
	if res.UndoRef == "" || f.undoRefs() != 1 || f.events(run.ID, "revert") != 1 {
		t.Errorf("undo ref %q (%d), %d revert events; want one of each", res.UndoRef, f.undoRefs(), f.events(run.ID, "revert"))
	}
	if st := f.effects(run.ID); st["push"] != store.EffectCompensated || st["mail"] != store.EffectUnresolved || st["tag"] != store.EffectRecorded {
		t.Errorf("effect states %v", st)
	}
	if res.CompensationFailed || len(res.Compensations) != 2 {
		t.Errorf("result: %d compensations, failed %v", len(res.Compensations), res.CompensationFailed)
	}
	// The user's edit made since is in the undo point: undo brings b.txt back.
	undo, err := f.env.Repo.Ref(res.UndoRef)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.env.Repo.Restore(ctx, undo, snapshot.RestoreOptions{NoUndoRef: true}); err != nil {
		t.Fatal(err)
	}
	if !f.exists("b.txt") {
		t.Error("the undo point does not hold the tree revert replaced")
	}
}

// TestPlanRetryStopsOnFailedCompensation: retry-task would do the effect again at once, so a
// failed compensation stops it before the tree or the run changes; once the compensation
// works, the same plan again completes.
func TestPlanRetryStopsOnFailedCompensation(t *testing.T) {
	f := newFixture(t)
	run := f.run("r2", twoTasks)
	flag := filepath.Join(t.TempDir(), "fail")
	write(t, flag, "")
	f.effect(run.ID, "a", 1, "push", false, "echo push >> "+f.log+"; test ! -e "+flag)
	f.effect(run.ID, "a", 1, "cache", true, "")

	ctx := context.Background()
	p, err := PlanRetry(ctx, f.env, RetryOptions{Run: run.ID, Task: "a", FromBase: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Replayed, []string{"a", "b"}) || !p.StopOnFailure || p.Tree.String() != run.Tasks[0].BaseTree {
		t.Fatalf("plan: replayed %v, stop on failure %v, tree %s; want [a b], true, a's base", p.Replayed, p.StopOnFailure, p.Tree)
	}
	if len(p.Changes) != 2 {
		t.Errorf("changes %v; want a.txt and b.txt deleted", p.Changes)
	}
	res, err := p.Execute(ctx)
	var failed *CompensationFailedError
	if !errors.As(err, &failed) || !res.CompensationFailed {
		t.Fatalf("Execute: %v; want CompensationFailedError", err)
	}
	after := f.get(run.ID)
	if !f.exists("a.txt") || f.undoRefs() != 0 || after.Tasks[0].State != store.TaskSucceeded || after.State != store.RunSucceeded {
		t.Fatal("a failed compensation let the tree or the run change")
	}

	os.Remove(flag)
	p, err = PlanRetry(ctx, f.env, RetryOptions{Run: run.ID, Task: "a", FromBase: true})
	if err != nil {
		t.Fatal(err)
	}
	if res, err = p.Execute(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Reset, []string{"a", "b"}) || f.exists("a.txt") || f.undoRefs() != 1 {
		t.Errorf("reset %v, a.txt there %v, %d undo refs; want [a b], gone, 1", res.Reset, f.exists("a.txt"), f.undoRefs())
	}
	if got := f.readLog(); got != "push\npush\n" {
		t.Errorf("compensation log %q; want push twice (failed, then done)", got)
	}
	after = f.get(run.ID)
	if after.State != store.RunPaused || after.Tasks[0].State != store.TaskPending || after.Tasks[1].State != store.TaskPending {
		t.Errorf("run %s, tasks %s %s; want paused, pending pending", after.State, after.Tasks[0].State, after.Tasks[1].State)
	}
	if st := f.effects(run.ID); st["push"] != store.EffectCompensated || st["cache"] != store.EffectRecorded {
		t.Errorf("effect states %v", st)
	}
}

// TestPlanRetryRefusesReplay: a replayed task's non-idempotent effect that will not be
// compensated refuses the plan without --force; nothing changes.
func TestPlanRetryRefusesReplay(t *testing.T) {
	f := newFixture(t)
	run := f.run("r3", twoTasks)
	f.effect(run.ID, "b", 1, "push", false, "echo push >> "+f.log)
	_, err := PlanRetry(context.Background(), f.env, RetryOptions{Run: run.ID, Task: "b", NoCompensate: true})
	var replay *ReplayError
	if !errors.As(err, &replay) || len(replay.Effects) != 1 || !slices.Equal(replay.Tasks, []string{"b"}) {
		t.Fatalf("PlanRetry --no-compensate: %v; want ReplayError for b's push", err)
	}
	p, err := PlanRetry(context.Background(), f.env, RetryOptions{Run: run.ID, Task: "b", NoCompensate: true, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !p.KeepTree || !p.Tree.IsZero() || p.Action(p.Crossed[0]) != ActionUnresolved {
		t.Errorf("plan keeps tree %v, tree %s, action %s", p.KeepTree, p.Tree, p.Action(p.Crossed[0]))
	}
	if f.readLog() != "" || f.undoRefs() != 0 {
		t.Error("planning changed something")
	}
}

// TestPlanTimetravel: the plan's preview of the state change is what Execute records, and
// computing it changed nothing.
func TestPlanTimetravel(t *testing.T) {
	f := newFixture(t)
	run := f.run("r4", twoTasks)
	f.effect(run.ID, "b", 1, "push", false, "echo push >> "+f.log)
	ctx := context.Background()
	events := len(mustEvents(t, f.env.DB, run.ID))

	p, err := PlanTimetravel(ctx, f.env, TimetravelOptions{Run: run.ID, Task: "a", N: 1, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Timetravel == nil || !slices.Equal(p.Timetravel.Superseded, []string{"b@1"}) || !slices.Equal(p.Replayed, []string{"b"}) {
		t.Fatalf("plan: %+v, replayed %v; want b@1 superseded, b replayed", p.Timetravel, p.Replayed)
	}
	if n := len(mustEvents(t, f.env.DB, run.ID)); n != events || f.get(run.ID).State != store.RunSucceeded || !f.exists("b.txt") {
		t.Fatalf("planning changed the history (%d events, was %d) or the tree", n, events)
	}
	res, err := p.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Timetravel.Superseded, p.Timetravel.Superseded) || !slices.Equal(taskChanges(res.Timetravel), taskChanges(p.Timetravel)) {
		t.Errorf("executed %+v; planned %+v", res.Timetravel, p.Timetravel)
	}
	if f.exists("b.txt") || f.readLog() != "push\n" || f.get(run.ID).State != store.RunPaused || f.events(run.ID, "timetravel") != 1 {
		t.Error("timetravel did not restore, compensate and record")
	}
}

func taskChanges(r *attempt.TimetravelResult) []string {
	var out []string
	for _, c := range r.Tasks {
		out = append(out, c.Task+":"+c.From+">"+c.To)
	}
	return out
}

func mustEvents(t *testing.T, db *store.DB, run string) []store.Event {
	t.Helper()
	var evs []store.Event
	if err := db.View(context.Background(), func(tx *store.Tx) error {
		var err error
		evs, err = tx.Events(run, 0, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestPlanStop: the blocked task's edits are shown and removed (undo point first), then the
// task is recorded failed; a task that is not blocked is refused by the plan.
func TestPlanStop(t *testing.T) {
	f := newFixture(t)
	run := f.run("r5", `version: 1
agents:
  half: {command: [sh, -c, "echo half > half.txt; exit 1"]}
tasks:
  - {id: blocker, prompt: p, agent: half, on_failure: ask}
`)
	if run.Tasks[0].State != store.TaskBlocked || !f.exists("half.txt") {
		t.Fatalf("setup: task %s, half.txt there %v", run.Tasks[0].State, f.exists("half.txt"))
	}
	ctx := context.Background()
	p, err := PlanStop(ctx, f.env, StopOptions{Run: run.ID, Task: "blocker"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Stop != "blocker" || p.Tree.String() != run.Tasks[0].BaseTree || len(p.Changes) != 1 || p.Changes[0].Path != "half.txt" {
		t.Fatalf("plan: stop %q tree %s changes %v", p.Stop, p.Tree, p.Changes)
	}
	if !f.exists("half.txt") || f.get(run.ID).Tasks[0].State != store.TaskBlocked {
		t.Fatal("planning changed something")
	}
	res, err := p.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := f.get(run.ID).Tasks[0]
	if f.exists("half.txt") || res.UndoRef == "" || got.State != store.TaskFailed || got.Reason != attempt.ReasonOperatorStop {
		t.Errorf("after stop: half.txt there %v, undo %q, task %s (%s)", f.exists("half.txt"), res.UndoRef, got.State, got.Reason)
	}
	if _, err := PlanStop(ctx, f.env, StopOptions{Run: run.ID, Task: "blocker"}); !errors.Is(err, attempt.ErrNotBlocked) {
		t.Errorf("stop of a stopped task: %v; want ErrNotBlocked", err)
	}
}

// TestPlanRevertPruned: a pruned run's trees cannot be read: refused before anything else.
func TestPlanRevertPruned(t *testing.T) {
	f := newFixture(t)
	run := f.run("r6", twoTasks)
	run.Pruned = true
	if err := f.env.DB.Update(context.Background(), func(tx *store.Tx) error {
		hdr, err := tx.RunHeader(run.ID)
		if err != nil {
			return err
		}
		hdr.Pruned = true
		return tx.UpdateRun(hdr)
	}); err != nil {
		t.Fatal(err)
	}
	_, err := PlanRevert(context.Background(), f.env, RevertOptions{Run: run.ID, Base: true})
	var pruned *PrunedError
	if !errors.As(err, &pruned) {
		t.Fatalf("PlanRevert of a pruned run: %v", err)
	}
}

// TestPlanApprove: the gate's change is carried into a tree that moved on (tree first, undo
// point first), then the approval recorded; a kill between the two leaves the task waiting,
// and planning the same approve again finds the change in place and only records.
func TestPlanApprove(t *testing.T) {
	f := newFixture(t)
	run := f.run("r7", `version: 1
agents:
  gate: {command: [sh, -c, "echo gated > gate.txt"]}
  side: {command: [sh, -c, "echo side > side.txt"]}
tasks:
  - {id: gate, prompt: p, agent: gate, needs_approval: true}
  - {id: side, prompt: p, agent: side}
`)
	if run.Tasks[0].State != store.TaskWaitingApproval || f.exists("gate.txt") || !f.exists("side.txt") {
		t.Fatalf("setup: gate %s, gate.txt there %v, side.txt there %v", run.Tasks[0].State, f.exists("gate.txt"), f.exists("side.txt"))
	}
	ctx := context.Background()
	p, err := PlanApprove(ctx, f.env, ApproveOptions{Run: run.ID, Task: "gate"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Apply == nil || len(p.Changes) != 1 || p.Changes[0].Path != "gate.txt" || p.Approved.N != 1 {
		t.Fatalf("plan: apply %v changes %v approved %+v", p.Apply, p.Changes, p.Approved)
	}
	// Killed after the tree step: the change is in, the task still waits.
	if err := p.changeTree(ctx, &Result{}); err != nil {
		t.Fatal(err)
	}
	if !f.exists("gate.txt") || !f.exists("side.txt") || f.get(run.ID).Tasks[0].State != store.TaskWaitingApproval {
		t.Fatal("the tree step did not carry the change in, or recorded something")
	}
	p, err = PlanApprove(ctx, f.env, ApproveOptions{Run: run.ID, Task: "gate"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 0 {
		t.Errorf("planned again, the approval would change %v; the change is in place", p.Changes)
	}
	if _, err := p.Execute(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.get(run.ID).Tasks[0]; got.State != store.TaskSucceeded || got.Reason != attempt.ReasonApproved {
		t.Errorf("gate %s (%s); want succeeded (approved)", got.State, got.Reason)
	}
}
