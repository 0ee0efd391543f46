package attempt

import (
	"slices"
	"testing"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

func TestDependentsDiamond(t *testing.T) {
	// a → b, a → c, b + c → d; e independent; f is in the file but not in the run.
	f := &taskfile.File{Tasks: []*taskfile.Task{
		{ID: "a"}, {ID: "b", Needs: []string{"a"}}, {ID: "c", Needs: []string{"a"}},
		{ID: "d", Needs: []string{"b", "c"}}, {ID: "e"}, {ID: "f", Needs: []string{"d"}},
	}}
	run := &store.Run{Tasks: []store.Task{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}, {ID: "e"}}}
	for task, want := range map[string][]string{
		"a": {"a", "b", "c", "d"},
		"b": {"b", "d"},
		"c": {"c", "d"},
		"d": {"d"},
		"e": {"e"},
	} {
		if got := Dependents(f, run, task); !slices.Equal(got, want) {
			t.Errorf("Dependents(%s) = %v, want %v", task, got, want)
		}
	}
}

func TestWorkLeft(t *testing.T) {
	task := func(id, state string, needs ...string) store.Task {
		return store.Task{ID: id, State: state, Needs: needs}
	}
	for _, tc := range []struct {
		name  string
		tasks []store.Task
		want  bool
	}{
		{"all finished", []store.Task{task("a", store.TaskSucceeded), task("b", store.TaskFailed)}, false},
		{"a pending task", []store.Task{task("a", store.TaskFailed), task("b", store.TaskPending)}, true},
		// b would be skipped, and then c, which needs b: nothing runs.
		{"only skips", []store.Task{task("a", store.TaskFailed), task("b", store.TaskPending, "a"), task("c", store.TaskPending, "b")}, false},
		// b is skipped, c does not need it and runs.
		{"a skip, then work", []store.Task{task("a", store.TaskFailed), task("b", store.TaskPending, "a"), task("c", store.TaskPending)}, true},
		// a held task does not stop an independent one; a dependent waits for it
		{"held blocked, independent work", []store.Task{task("a", store.TaskBlocked), task("b", store.TaskPending)}, true},
		{"held blocked, dependent waits", []store.Task{task("a", store.TaskBlocked), task("b", store.TaskPending, "a")}, false},
		{"waiting approval", []store.Task{task("a", store.TaskWaitingApproval), task("b", store.TaskPending, "a")}, false},
		// a resume is the decision to try a quota-parked task again
		{"waiting quota", []store.Task{task("a", store.TaskWaitingQuota)}, true},
		{"paused mid-task", []store.Task{task("a", store.TaskPaused)}, true},
		// allow_fail: the dependent of a failed task runs
		{"allow_fail", []store.Task{task("may", store.TaskFailed), task("b", store.TaskPending, "may")}, true},
	} {
		run := &store.Run{Tasks: tc.tasks}
		before := slices.Clone(tc.tasks)
		f := &taskfile.File{Tasks: []*taskfile.Task{{ID: "may", AllowFail: true}}}
		if got := WorkLeft(run, f); got != tc.want {
			t.Errorf("%s: WorkLeft = %v, want %v", tc.name, got, tc.want)
		}
		if !slices.EqualFunc(before, run.Tasks, func(a, b store.Task) bool { return a.State == b.State }) {
			t.Errorf("%s: WorkLeft changed the run's tasks", tc.name)
		}
	}
}
