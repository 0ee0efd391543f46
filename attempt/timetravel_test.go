package attempt

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// TestTimetravelRestoresRecordedState runs a task that fails twice (each failure a backoff)
// and then succeeds, and travels back: to just after the second failure the task is in backoff
// with the counters, base, start and resume time it had then; to the success, succeeded with
// the finish time it had. Then the same from a database whose events carry no counters (written
// before they existed): the old replay gives the same answer for this history.
func TestTimetravelRestoresRecordedState(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t)
	count := filepath.Join(t.TempDir(), "count")
	f, err := taskfile.Parse("tt.yaml", []byte(`version: 1
agents:
  sh: {command: [sh, -c, "n=$(cat `+count+` 2>/dev/null || echo 0); n=$((n+1)); echo $n > `+count+`; echo $n > a.txt; [ $n -ge 3 ]"]}
tasks:
  - id: main
    prompt: p
    agent: sh
    on_failure: retry
    retries: 3
    backoff: {kind: fixed, initial: 10ms, jitter: none}
`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Start(ctx, env, StartOptions{File: f, ID: "tt01"})
	if err != nil || out.State != store.RunSucceeded {
		t.Fatalf("run: %+v %v", out, err)
	}
	final := readTask(t, env.DB, "tt01", "main")
	if final.RetriesUsed != 2 || len(final.Attempts) != 3 || final.BaseTree == "" || final.StartedAt == nil || final.FinishedAt == nil {
		t.Fatalf("the run did not go as planned: %+v", final)
	}
	// resume_at of the second backoff, as the event at that point recorded it
	var backoff store.TaskStateChanged
	if err := env.DB.View(ctx, func(tx *store.Tx) error {
		evs, err := tx.Events("tt01", 0, 0)
		for _, ev := range evs {
			if ev.Type == store.EventTaskStateChanged && ev.Attempt == 2 {
				err = ev.Decode(&backoff)
			}
		}
		return err
	}); err != nil || backoff.To != store.TaskBackoff || backoff.ResumeAt == nil {
		t.Fatalf("the backoff after main@2: %+v %v", backoff, err)
	}

	check := func(what string, legacy bool) {
		t.Helper()
		if _, err := Timetravel(ctx, env.DB, TimetravelOptions{RunID: "tt01", Task: "main", N: 2}); err != nil {
			t.Fatal(err)
		}
		got := readTask(t, env.DB, "tt01", "main")
		want := taskReplay{state: store.TaskBackoff, retries: 2, consec: 2, base: final.BaseTree,
			resumeAt: backoff.ResumeAt, started: final.StartedAt}
		if !sameReplay(rowReplay(got), want) {
			t.Errorf("%s: back to main@2: %v\n want %v", what, rowReplay(got), want)
		}
		if _, err := Timetravel(ctx, env.DB, TimetravelOptions{RunID: "tt01", Task: "main", N: 3}); err != nil {
			t.Fatal(err)
		}
		got = readTask(t, env.DB, "tt01", "main")
		want = taskReplay{state: store.TaskSucceeded, retries: 2, base: final.BaseTree, started: final.StartedAt,
			finished: final.FinishedAt}
		if legacy {
			want.finished = got.FinishedAt // the old replay takes the event's time, not the attempt's end
		}
		if !sameReplay(rowReplay(got), want) || got.FinishedAt == nil {
			t.Errorf("%s: forward to main@3: %v\n want %v", what, rowReplay(got), want)
		}
	}
	check("with counters", false)

	// The same history as an older version wrote it: no counters in any state change.
	raw, err := sql.Open("sqlite3", store.DefaultPath(env.Repo.CommonDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE events SET payload_json = json_remove(payload_json, '$.counters') WHERE type = ?`,
		store.EventTaskStateChanged); err != nil {
		t.Fatal(err)
	}
	check("without counters", true)
}

func readTask(t *testing.T, db *store.DB, run, task string) *store.Task {
	t.Helper()
	var tk *store.Task
	if err := db.View(context.Background(), func(tx *store.Tx) (err error) { tk, err = tx.GetTask(run, task); return err }); err != nil {
		t.Fatal(err)
	}
	return tk
}
