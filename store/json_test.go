package store_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

// The field names of SPEC §9, copied from it: renaming one breaks users' scripts.
var (
	specRunKeys     = "id state reason worktree task_file base_ref started_at finished_at tasks"
	specTaskKeys    = "id state reason needs resume_at consecutive_failures attempts"
	specAttemptKeys = "n agent state class code message hint retry_eligible counted exit_code started_at finished_at duration_ms pre_ref pre_tree ref tree files_changed schema_retries tokens_in tokens_out cost_usd prompt log git_changes fingerprint lane"
	specLsKeys      = "id state started_at finished_at tasks attempts"

	// Fields this package adds (SPEC §9 allows additions, never renames).
	extraRunKeys     = "git_dir task_file_hash base_tree max_cost_usd owner epoch heartbeat_at resumes_without_progress pruned tokens_in tokens_out cost_usd"
	extraTaskKeys    = "retries_used base_tree started_at finished_at parked_ms silent_at"
	extraAttemptKeys = "retry_after_ms git_reset agent_session resume_command"
	extraLsKeys      = "reason worktree tokens_in tokens_out cost_usd pruned"
)

func keys(t *testing.T, v json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil {
		t.Fatalf("%s: %v", v, err)
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func wantKeys(spec, extra string) []string {
	ks := append(strings.Fields(spec), strings.Fields(extra)...)
	slices.Sort(ks)
	return slices.Compact(ks)
}

func TestShowJSONKeys(t *testing.T) {
	db, clock := openDB(t)
	r := newRun("run1")
	r.Owner = &store.Owner{PID: 1, Host: "h", StartTicks: 2}
	insertRun(t, db, r)
	update(t, db, func(tx *store.Tx) error {
		return tx.InsertAttempt(&store.Attempt{RunID: "run1", TaskID: "a", Agent: "fast", Prompt: "p"})
	})
	clock.Advance(time.Second)
	got := getRun(t, db, "run1")
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var run struct {
		Tasks []struct {
			Attempts []json.RawMessage `json:"attempts"`
		} `json:"tasks"`
	}
	var rawRun struct {
		Tasks []json.RawMessage `json:"tasks"`
	}
	json.Unmarshal(b, &run)
	json.Unmarshal(b, &rawRun)
	for _, c := range []struct {
		what        string
		obj         json.RawMessage
		spec, extra string
	}{
		{"run", b, specRunKeys, extraRunKeys},
		{"task", rawRun.Tasks[0], specTaskKeys, extraTaskKeys},
		{"attempt", run.Tasks[0].Attempts[0], specAttemptKeys, extraAttemptKeys},
	} {
		if g, w := keys(t, c.obj), wantKeys(c.spec, c.extra); !reflect.DeepEqual(g, w) {
			t.Errorf("%s keys\n got %v\nwant %v", c.what, g, w)
		}
	}

	// absent values are null, times RFC 3339 UTC, empty needs an empty list
	var m map[string]any
	json.Unmarshal(b, &m)
	if m["finished_at"] != nil || m["reason"] != nil || m["started_at"] != "2025-06-01T12:00:00.000Z" {
		t.Errorf("run JSON: finished_at %v reason %v started_at %v", m["finished_at"], m["reason"], m["started_at"])
	}
	task := m["tasks"].([]any)[0].(map[string]any)
	if needs, ok := task["needs"].([]any); !ok || len(needs) != 0 {
		t.Errorf("needs of a task without dependencies = %#v, want []", task["needs"])
	}
	att := task["attempts"].([]any)[0].(map[string]any)
	for _, k := range []string{"class", "exit_code", "finished_at", "duration_ms", "tokens_in", "cost_usd", "retry_eligible", "ref"} {
		if att[k] != nil {
			t.Errorf("attempt %s = %v, want null", k, att[k])
		}
	}
	for _, s := range []string{"2025-06-01T12:00:00.000Z"} {
		if att["started_at"] != s {
			t.Errorf("attempt started_at = %v, want %s", att["started_at"], s)
		}
	}
	if strings.Contains(string(b), "version: 1") {
		t.Error("show JSON carries the task file content")
	}

	// JSON reads back into the same value
	var back store.Run
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	// not part of the JSON: the file itself, the runner's options, the task's position (the
	// order of the tasks array says it)
	got.TaskFileContent, got.Options = nil, nil
	for i := range got.Tasks {
		got.Tasks[i].Ord = 0
	}
	if !reflect.DeepEqual(&back, got) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, *got)
	}
}

func TestLsJSONKeys(t *testing.T) {
	db, _ := openDB(t)
	insertRun(t, db, newRun("run1"))
	var runs []store.RunSummary
	view(t, db, func(tx *store.Tx) (err error) { runs, err = tx.ListRuns(10); return err })
	b, err := json.Marshal(runs)
	if err != nil {
		t.Fatal(err)
	}
	var objs []json.RawMessage
	json.Unmarshal(b, &objs)
	if g, w := keys(t, objs[0]), wantKeys(specLsKeys, extraLsKeys); !reflect.DeepEqual(g, w) {
		t.Errorf("ls keys\n got %v\nwant %v", g, w)
	}
	var back []store.RunSummary
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, runs) {
		t.Errorf("ls round trip: %v\n got %+v\nwant %+v", err, back, runs)
	}
}

func TestTimesMarshalAsUTC(t *testing.T) {
	zone := time.FixedZone("X", 5*3600)
	a := store.Attempt{N: 1, State: "running", StartedAt: time.Date(2025, 1, 2, 8, 4, 5, 0, zone)}
	b, _ := json.Marshal(a)
	if !strings.Contains(string(b), `"started_at":"2025-01-02T03:04:05.000Z"`) {
		t.Errorf("attempt JSON: %s", b)
	}
}
