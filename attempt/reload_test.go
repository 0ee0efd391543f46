package attempt

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// oneAgent is a task file whose tasks all run agent a; each task is "id" or "id, needs: [...]"
// and more fields, written inside the braces of a flow mapping.
func oneAgent(t *testing.T, tasks ...string) *taskfile.File {
	t.Helper()
	src := "version: 1\nagents:\n  a: {command: [x]}\ntasks:\n"
	for _, task := range tasks {
		src += "  - {id: " + task + ", prompt: p, agent: a}\n"
	}
	return mustParse(t, src)
}

func mustParse(t *testing.T, src string) *taskfile.File {
	t.Helper()
	f, err := taskfile.Parse("mulligan.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// reloadRun is run1 holding tasks, in that order.
func reloadRun(tasks ...store.Task) *store.Run {
	r := &store.Run{ID: "run1"}
	for i, t := range tasks {
		t.RunID, t.Ord = "run1", i
		r.Tasks = append(r.Tasks, t)
	}
	return r
}

func withAttempts(id, state string, needs []string, n int) store.Task {
	t := store.Task{ID: id, State: state, Needs: needs, RetriesUsed: n}
	for i := 1; i <= n; i++ {
		t.Attempts = append(t.Attempts, store.Attempt{TaskID: id, N: i})
	}
	return t
}

func planIDs(p *ReloadPlan) []string {
	var out []string
	for _, t := range p.Tasks {
		out = append(out, t.ID)
	}
	return out
}

func reloadOld(t *testing.T) *taskfile.File {
	return oneAgent(t, "setup", "fix, needs: [setup]", "docs, needs: [fix]")
}

func TestPlanReloadAllTasks(t *testing.T) {
	old := reloadOld(t)
	// docs removed (pending, no attempts); lint added; fix now needs lint; fix's prompt changed.
	updated := mustParse(t, `version: 1
agents:
  a: {command: [x]}
tasks:
  - {id: setup, prompt: p, agent: a}
  - {id: fix, needs: [setup, lint], prompt: better, agent: a}
  - {id: lint, prompt: p, agent: a}
`)
	run := reloadRun(withAttempts("setup", store.TaskSucceeded, nil, 1),
		withAttempts("fix", store.TaskBlocked, []string{"setup"}, 2),
		withAttempts("docs", store.TaskPending, []string{"fix"}, 0))
	p, err := PlanReload(run, old, updated)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := planIDs(p), []string{"setup", "lint", "fix"}; !reflect.DeepEqual(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(p.Added, []string{"lint"}) || !reflect.DeepEqual(p.Removed, []string{"docs"}) ||
		!reflect.DeepEqual(p.Changed, []string{"fix"}) {
		t.Errorf("added %v removed %v changed %v", p.Added, p.Removed, p.Changed)
	}
	fix := p.Tasks[2]
	if fix.Ord != 2 || fix.State != store.TaskBlocked || fix.RetriesUsed != 2 || len(fix.Attempts) != 2 ||
		!reflect.DeepEqual(fix.Needs, []string{"setup", "lint"}) {
		t.Errorf("fix after reload: %+v", fix)
	}
	if lint := p.Tasks[1]; lint.State != store.TaskPending || lint.Ord != 1 || lint.RunID != "run1" || lint.Needs == nil {
		t.Errorf("lint after reload: %+v", lint)
	}
	// The run's own slice is not changed by planning.
	if run.Tasks[1].Ord != 1 || len(run.Tasks) != 3 {
		t.Errorf("PlanReload changed the run: %+v", run.Tasks)
	}
}

func TestPlanReloadSubset(t *testing.T) {
	old := reloadOld(t)
	// The run was `mulligan run fix`: setup and fix. The new file adds lint (needed by fix) and
	// extra (needed by nothing the run holds): only lint joins the run.
	updated := oneAgent(t, "setup", "fix, needs: [setup, lint]", "docs, needs: [fix]", "lint", "extra")
	run := reloadRun(withAttempts("setup", store.TaskSucceeded, nil, 1),
		withAttempts("fix", store.TaskPending, []string{"setup"}, 0))
	p, err := PlanReload(run, old, updated)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := planIDs(p), []string{"setup", "lint", "fix"}; !reflect.DeepEqual(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(p.Added, []string{"lint"}) || len(p.Removed) != 0 || !reflect.DeepEqual(p.Changed, []string{"fix"}) {
		t.Errorf("added %v removed %v changed %v", p.Added, p.Removed, p.Changed)
	}
	// Without its stored definition the run cannot be known to hold every task: a subset too.
	run = reloadRun(withAttempts("setup", store.TaskSucceeded, nil, 1),
		withAttempts("fix", store.TaskPending, []string{"setup"}, 0),
		withAttempts("docs", store.TaskPending, []string{"fix"}, 0))
	p, err = PlanReload(run, nil, updated)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := planIDs(p), []string{"setup", "lint", "fix", "docs"}; !reflect.DeepEqual(got, want) {
		t.Errorf("without the old file: order = %v, want %v", got, want)
	}
	// With it, a run of every task takes extra too.
	p, err = PlanReload(run, old, updated)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := planIDs(p), []string{"setup", "lint", "fix", "docs", "extra"}; !reflect.DeepEqual(got, want) {
		t.Errorf("all tasks: order = %v, want %v", got, want)
	}
}

func TestPlanReloadRefusesGoneAttempts(t *testing.T) {
	old := reloadOld(t)
	updated := oneAgent(t, "docs")
	run := reloadRun(withAttempts("setup", store.TaskSucceeded, nil, 1),
		withAttempts("fix", store.TaskBlocked, []string{"setup"}, 2),
		withAttempts("docs", store.TaskPending, []string{"fix"}, 0))
	_, err := PlanReload(run, old, updated)
	var conflict *ReloadConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("err = %v, want a *ReloadConflictError", err)
	}
	want := []GoneTask{{ID: "setup", Attempts: []int{1}}, {ID: "fix", Attempts: []int{1, 2}}}
	if !reflect.DeepEqual(conflict.Gone, want) || conflict.Run != "run1" || conflict.File != "mulligan.yaml" {
		t.Errorf("conflict = %+v", conflict)
	}
	if msg := err.Error(); msg != "mulligan.yaml no longer has tasks setup (attempts setup@1); fix (attempts fix@1, fix@2) of run run1, recorded with attempts: a reload cannot drop them" {
		t.Errorf("message = %q", msg)
	}
}

func TestPlanReloadChanges(t *testing.T) {
	// Each variant of the file fills in: b's command, the run hooks, one's classify pattern and
	// two's extra fields.
	file := func(bCommand, runHooks, pattern, twoExtra string) *taskfile.File {
		return mustParse(t, fmt.Sprintf(`version: 1
agents:
  a: {command: [x]}
  b: {command: [%s]}
%s
tasks:
  - {id: one, prompt: p, agent: a, classify: [{pattern: %q, class: transport}]}
  - {id: two, prompt: p, agent: b%s}
`, bCommand, runHooks, pattern, twoExtra))
	}
	old := file("y", "", "boom", "")
	run := reloadRun(withAttempts("one", store.TaskSucceeded, nil, 1), withAttempts("two", store.TaskPending, nil, 0))
	cases := []struct {
		name     string
		file     *taskfile.File
		changed  []string
		agents   []string
		runHooks bool
	}{
		{"only positions and comments", file("  y", "# a comment moves every line below", "boom", ""), nil, nil, false},
		{"an agent's command", file("y, --fixed", "", "boom", ""), []string{"two"}, []string{"b"}, false},
		{"a classify pattern and run hooks", file("y", "hooks: {on_failed: [[page]]}", "bang", ""), []string{"one"}, nil, true},
		{"a task's hooks and retries", file("y", "", "boom", ", on_failure: retry, retries: 2, hooks: {on_retry: [[note]]}"), []string{"two"}, nil, false},
	}
	for _, c := range cases {
		p, err := PlanReload(run, old, c.file)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(p.Changed, c.changed) || !reflect.DeepEqual(p.Agents, c.agents) || p.RunHooks != c.runHooks {
			t.Errorf("%s: changed %v agents %v run hooks %v, want %v %v %v", c.name, p.Changed, p.Agents, p.RunHooks, c.changed, c.agents, c.runHooks)
		}
	}
}

func TestPlanReloadDropsEverything(t *testing.T) {
	old := reloadOld(t)
	updated := oneAgent(t, "other")
	// A run of docs alone, never started: docs goes and nothing it held remains, so it gains
	// nothing either (it did not hold every task of its file).
	run := reloadRun(withAttempts("docs", store.TaskPending, nil, 0))
	p, err := PlanReload(run, old, updated)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Tasks) != 0 || !reflect.DeepEqual(p.Removed, []string{"docs"}) || len(p.Added) != 0 {
		t.Errorf("plan = %+v", p)
	}
}
