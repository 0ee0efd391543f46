package store_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

func TestInsertAndGetRun(t *testing.T) {
	db, clock := openDB(t)
	r := newRun("run1")
	r.MaxCostUSD = store.Ptr(5.0)
	r.Options = []byte(`{"detach":false}`)
	insertRun(t, db, r)
	if r.State != store.RunRunning || !r.StartedAt.Equal(t0) {
		t.Errorf("defaults: state %q started %v", r.State, r.StartedAt)
	}
	if r.Epoch != 0 || r.Owner != nil {
		t.Errorf("run without owner: epoch %d owner %v", r.Epoch, r.Owner)
	}
	clock.Advance(time.Second)

	got := getRun(t, db, "run1")
	if got.Worktree != "/w" || got.GitDir != "/w/.git" || got.TaskFile != "mulligan.yaml" ||
		got.TaskFileHash != "sha256:00" || string(got.TaskFileContent) != "version: 1\n" ||
		got.BaseRef != r.BaseRef || got.BaseTree != r.BaseTree || *got.MaxCostUSD != 5 ||
		string(got.Options) != `{"detach":false}` || got.FinishedAt != nil {
		t.Errorf("GetRun = %+v", got)
	}
	if got.StartedAt.Location() != time.UTC || !got.StartedAt.Equal(t0) {
		t.Errorf("started_at %v, want %v in UTC", got.StartedAt, t0)
	}
	if len(got.Tasks) != 2 || got.Tasks[0].ID != "a" || got.Tasks[1].ID != "b" ||
		got.Tasks[0].State != store.TaskPending || !reflect.DeepEqual(got.Tasks[1].Needs, []string{"a"}) ||
		got.Tasks[1].Ord != 1 {
		t.Errorf("tasks = %+v", got.Tasks)
	}
	if got.TokensIn != nil || got.CostUSD != nil {
		t.Errorf("sums of a run without attempts: %v %v, want nil", got.TokensIn, got.CostUSD)
	}

	err := db.Update(ctx, func(tx *store.Tx) error { return tx.InsertRun(newRun("run1")) })
	if err == nil {
		t.Error("second run with the same id was inserted")
	}
	for _, bad := range []*store.Run{
		{ID: "Run-1", Worktree: "/w"},
		{ID: "run2"},
		{ID: "run3", Worktree: "/w", State: "exploded"},
		{ID: "run4", Worktree: "/w", Tasks: []store.Task{{ID: "has space"}}},
	} {
		if err := db.Update(ctx, func(tx *store.Tx) error { return tx.InsertRun(bad) }); err == nil {
			t.Errorf("InsertRun(%+v) succeeded", bad)
		}
	}
	view(t, db, func(tx *store.Tx) error {
		if _, err := tx.GetRun("nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetRun(nope) err = %v, want ErrNotFound", err)
		}
		return nil
	})
}

func TestRunState(t *testing.T) {
	db, clock := openDB(t)
	insertRun(t, db, newRun("run1"))
	clock.Advance(time.Minute)
	update(t, db, func(tx *store.Tx) error { return runTo(tx, "run1", store.RunBlocked, "retries-exhausted") })
	r := getRun(t, db, "run1")
	if r.State != store.RunBlocked || r.Reason != "retries-exhausted" || r.FinishedAt != nil {
		t.Errorf("blocked run: %q %q %v", r.State, r.Reason, r.FinishedAt)
	}
	update(t, db, func(tx *store.Tx) error { return runTo(tx, "run1", store.RunFailed, "task a failed") })
	r = getRun(t, db, "run1")
	if r.State != store.RunFailed || r.FinishedAt == nil || !r.FinishedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("finished run: %q %v", r.State, r.FinishedAt)
	}
	// retry-task makes it live again
	update(t, db, func(tx *store.Tx) error { return runTo(tx, "run1", store.RunRunning, "") })
	if r = getRun(t, db, "run1"); r.FinishedAt != nil {
		t.Errorf("running again but finished_at = %v", r.FinishedAt)
	}
	for name, fn := range map[string]func(tx *store.Tx) error{
		"bogus state": func(tx *store.Tx) error { return runTo(tx, "run1", "bogus", "") },
		"no such run": func(tx *store.Tx) error { return runTo(tx, "nosuch", store.RunFailed, "") },
	} {
		if err := db.Update(ctx, fn); err == nil {
			t.Errorf("%s succeeded", name)
		}
	}
	err := db.Update(ctx, func(tx *store.Tx) error { return runTo(tx, "nosuch", store.RunFailed, "") })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TransitionRun of a missing run: %v, want ErrNotFound", err)
	}
}

func TestUpdateRun(t *testing.T) {
	db, _ := openDB(t)
	insertRun(t, db, newRun("run1"))
	var r *store.Run
	update(t, db, func(tx *store.Tx) (err error) {
		if _, err = tx.ClaimRun("run1", 0, store.Owner{PID: 7, Host: "h", StartTicks: 9}); err != nil {
			return err
		}
		r, err = tx.RunHeader("run1")
		return err
	})
	r.TaskFileContent = []byte("version: 1\n# reloaded\n")
	r.TaskFileHash = "sha256:11"
	r.ResumesWithoutProgress = 2
	r.Pruned = true
	r.Owner = &store.Owner{PID: 1} // must be ignored: only ClaimRun changes the owner
	r.Epoch = 99
	update(t, db, func(tx *store.Tx) error { return tx.UpdateRun(r) })
	got := getRun(t, db, "run1")
	if string(got.TaskFileContent) != "version: 1\n# reloaded\n" || got.TaskFileHash != "sha256:11" ||
		got.ResumesWithoutProgress != 2 || !got.Pruned {
		t.Errorf("after UpdateRun: %+v", got)
	}
	if got.Epoch != 1 || got.Owner == nil || got.Owner.PID != 7 {
		t.Errorf("UpdateRun changed the owner: epoch %d owner %+v", got.Epoch, got.Owner)
	}
	err := db.Update(ctx, func(tx *store.Tx) error { return tx.UpdateRun(&store.Run{ID: "nosuch", State: "running"}) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateRun of a missing run: %v, want ErrNotFound", err)
	}
}

func TestTaskState(t *testing.T) {
	db, clock := openDB(t)
	insertRun(t, db, newRun("run1"))
	task := func() store.Task {
		var tk *store.Task
		view(t, db, func(tx *store.Tx) (err error) { tk, err = tx.GetTask("run1", "a"); return err })
		return *tk
	}
	clock.Advance(time.Second)
	update(t, db, func(tx *store.Tx) error { return taskTo(tx, "run1", "a", store.TaskRunning, "", nil) })
	if tk := task(); tk.State != store.TaskRunning || tk.StartedAt == nil || !tk.StartedAt.Equal(t0.Add(time.Second)) {
		t.Errorf("running task: %+v", tk)
	}
	clock.Advance(time.Second)
	reset := t0.Add(time.Hour)
	update(t, db, func(tx *store.Tx) error {
		return taskTo(tx, "run1", "a", store.TaskWaitingQuota, "quota", &reset)
	})
	tk := task()
	if tk.State != store.TaskWaitingQuota || tk.Reason != "quota" || tk.ResumeAt == nil || !tk.ResumeAt.Equal(reset) {
		t.Errorf("parked task: %+v", tk)
	}
	clock.Advance(time.Second)
	update(t, db, func(tx *store.Tx) error { return taskTo(tx, "run1", "a", store.TaskRunning, "", nil) })
	if tk := task(); !tk.StartedAt.Equal(t0.Add(time.Second)) || tk.ResumeAt != nil {
		t.Errorf("started_at must keep the first start and resume_at clear: %+v", tk)
	}
	update(t, db, func(tx *store.Tx) error { return taskTo(tx, "run1", "a", store.TaskSucceeded, "", nil) })
	if tk := task(); tk.FinishedAt == nil || !tk.FinishedAt.Equal(t0.Add(3*time.Second)) {
		t.Errorf("finished task: %+v", tk)
	}
	if err := db.Update(ctx, func(tx *store.Tx) error { return taskTo(tx, "run1", "a", "nope", "", nil) }); err == nil {
		t.Error("unknown task state accepted")
	}
	err := db.Update(ctx, func(tx *store.Tx) error { return taskTo(tx, "run1", "zz", store.TaskFailed, "", nil) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TransitionTask of a missing task: %v, want ErrNotFound", err)
	}

	// UpdateTask writes the whole row but the state, which it refuses to change
	tk = task()
	tk.ConsecutiveFailures, tk.RetriesUsed, tk.BaseTree = 2, 3, "abc"
	tk.Needs = []string{"x", "y"}
	tk.Reason = "circuit-tripped"
	update(t, db, func(tx *store.Tx) error { return tx.UpdateTask(&tk) })
	got := task()
	got.Attempts, tk.Attempts = nil, nil
	if !reflect.DeepEqual(got, tk) {
		t.Errorf("after UpdateTask:\n got %+v\nwant %+v", got, tk)
	}
	tk.State = store.TaskBlocked
	if err := db.Update(ctx, func(tx *store.Tx) error { return tx.UpdateTask(&tk) }); !errors.Is(err, store.ErrStateChange) {
		t.Errorf("UpdateTask changing the state: %v, want ErrStateChange", err)
	}
	if got := task(); got.State != store.TaskSucceeded {
		t.Errorf("state after a refused UpdateTask: %s", got.State)
	}
	// a task added by resume --reload
	update(t, db, func(tx *store.Tx) error {
		return tx.InsertTask(&store.Task{RunID: "run1", ID: "c.new_1", Ord: 2, Needs: []string{"b"}})
	})
	if r := getRun(t, db, "run1"); len(r.Tasks) != 3 || r.Tasks[2].ID != "c.new_1" {
		t.Errorf("tasks after InsertTask: %+v", r.Tasks)
	}
}

func TestAttempts(t *testing.T) {
	db, clock := openDB(t)
	insertRun(t, db, newRun("run1"))
	var first store.Attempt
	update(t, db, func(tx *store.Tx) error {
		n, err := tx.NextAttemptNumber("run1", "a")
		if err != nil || n != 1 {
			t.Errorf("NextAttemptNumber of a fresh task = %d, %v; want 1", n, err)
		}
		first = store.Attempt{RunID: "run1", TaskID: "a", Agent: "fast", Prompt: "fix it",
			PreRef: "refs/mulligan/runs/run1/a/1/pre", PreTree: "aaa"}
		return tx.InsertAttempt(&first)
	})
	if first.N != 1 || first.State != store.AttemptRunning || !first.StartedAt.Equal(t0) {
		t.Errorf("inserted attempt: %+v", first)
	}
	clock.Advance(1500 * time.Millisecond)
	fin := clock.Now()
	first.State, first.Class, first.Code, first.Message, first.Hint = store.AttemptFailed, "transport", "econnreset", "connection reset", "check the network"
	first.RetryEligible, first.Counted, first.ExitCode, first.FinishedAt = store.Ptr(true), true, store.Ptr(1), &fin
	first.RetryAfterMS = store.Ptr(int64(30000))
	first.Ref, first.Tree, first.FilesChanged = "refs/mulligan/runs/run1/a/1", "bbb", store.Ptr(3)
	first.SchemaRetries, first.TokensIn, first.TokensOut, first.CostUSD = 1, store.Ptr(int64(100)), store.Ptr(int64(20)), store.Ptr(0.25)
	first.Log = "/g/mulligan/logs/run1/a/1.log"
	update(t, db, func(tx *store.Tx) error { return tx.UpdateAttempt(&first) })
	if first.DurationMS == nil || *first.DurationMS != 1500 {
		t.Errorf("computed duration = %v, want 1500", first.DurationMS)
	}

	var second store.Attempt
	update(t, db, func(tx *store.Tx) error {
		second = store.Attempt{RunID: "run1", TaskID: "a", Agent: "strong", TokensIn: store.Ptr(int64(5)), CostUSD: store.Ptr(0.5)}
		return tx.InsertAttempt(&second)
	})
	if second.N != 2 {
		t.Errorf("second attempt numbered %d", second.N)
	}
	// superseding (timetravel) must not free the number
	second.State = store.AttemptSuperseded
	update(t, db, func(tx *store.Tx) error { return tx.UpdateAttempt(&second) })
	update(t, db, func(tx *store.Tx) error {
		if n, _ := tx.NextAttemptNumber("run1", "a"); n != 3 {
			t.Errorf("NextAttemptNumber after 2 attempts = %d, want 3", n)
		}
		if n, _ := tx.NextAttemptNumber("run1", "b"); n != 1 {
			t.Errorf("NextAttemptNumber of task b = %d, want 1", n)
		}
		return nil
	})

	view(t, db, func(tx *store.Tx) error {
		got, err := tx.Attempt("run1", "a", 1)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(*got, first) {
			t.Errorf("Attempt(1):\n got %+v\nwant %+v", *got, first)
		}
		latest, err := tx.LatestAttempt("run1", "a")
		if err != nil {
			return err
		}
		if latest.N != 2 || latest.State != store.AttemptSuperseded || latest.Agent != "strong" {
			t.Errorf("LatestAttempt = %+v", latest)
		}
		if _, err := tx.LatestAttempt("run1", "b"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("LatestAttempt of a task without attempts: %v, want ErrNotFound", err)
		}
		if _, err := tx.Attempt("run1", "a", 9); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Attempt(9): %v, want ErrNotFound", err)
		}
		return nil
	})

	r := getRun(t, db, "run1")
	if len(r.Tasks[0].Attempts) != 2 || r.Tasks[0].Attempts[0].N != 1 || r.Tasks[0].Attempts[1].N != 2 || len(r.Tasks[1].Attempts) != 0 {
		t.Errorf("GetRun attempts: %+v", r.Tasks)
	}
	if r.TokensIn == nil || *r.TokensIn != 105 || r.TokensOut == nil || *r.TokensOut != 20 || r.CostUSD == nil || *r.CostUSD != 0.75 {
		t.Errorf("run sums: in %v out %v cost %v", r.TokensIn, r.TokensOut, r.CostUSD)
	}

	for name, a := range map[string]store.Attempt{
		"duplicate n":   {RunID: "run1", TaskID: "a", N: 1},
		"unknown task":  {RunID: "run1", TaskID: "zz"},
		"unknown state": {RunID: "run1", TaskID: "b", State: "weird"},
	} {
		if err := db.Update(ctx, func(tx *store.Tx) error { return tx.InsertAttempt(&a) }); err == nil {
			t.Errorf("InsertAttempt(%s) succeeded", name)
		}
	}
	err := db.Update(ctx, func(tx *store.Tx) error {
		return tx.UpdateAttempt(&store.Attempt{RunID: "run1", TaskID: "a", N: 7, State: store.AttemptFailed})
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateAttempt of a missing attempt: %v, want ErrNotFound", err)
	}
}

func TestEvents(t *testing.T) {
	db, clock := openDB(t)
	insertRun(t, db, newRun("run1"))
	insertRun(t, db, newRun("run2"))
	var seqs []int64
	update(t, db, func(tx *store.Tx) error {
		for _, e := range []struct {
			run, task string
			n         int
			typ       string
			payload   any
		}{
			{"run1", "", 0, "run.started", nil},
			{"run1", "a", 1, "attempt.note", map[string]any{"consecutive_failures": 1, "class": "transport"}},
			{"run2", "", 0, "run.started", json.RawMessage(`{"z": 1, "a": [1, 2]}`)},
			{"", "", 0, "hook.delivered", struct {
				Delivery string `json:"delivery_id"`
			}{"d1"}},
		} {
			clock.Advance(time.Millisecond)
			seq, err := tx.AppendEvent(e.run, e.task, e.n, e.typ, e.payload)
			if err != nil {
				return err
			}
			seqs = append(seqs, seq)
		}
		return nil
	})
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			t.Fatalf("sequence numbers not increasing: %v", seqs)
		}
	}
	var all, run1, after, limited []store.Event
	view(t, db, func(tx *store.Tx) (err error) {
		if all, err = tx.Events("", 0, 0); err != nil {
			return err
		}
		if run1, err = tx.Events("run1", 0, 0); err != nil {
			return err
		}
		if after, err = tx.Events("", seqs[1], 0); err != nil {
			return err
		}
		limited, err = tx.Events("", 0, 2)
		return err
	})
	if len(all) != 4 || len(run1) != 2 || len(after) != 2 || after[0].Seq != seqs[2] || len(limited) != 2 {
		t.Fatalf("events: all %d run1 %d after %d limited %d", len(all), len(run1), len(after), len(limited))
	}
	e := run1[1]
	if e.Run != "run1" || e.Task != "a" || e.Attempt != 1 || e.Type != "attempt.note" || !e.Time.Equal(t0.Add(2*time.Millisecond)) {
		t.Errorf("event = %+v", e)
	}
	b, _ := json.Marshal(e)
	want := `{"seq":2,"time":"2025-06-01T12:00:00.002Z","run":"run1","task":"a","attempt":1,"type":"attempt.note","class":"transport","consecutive_failures":1}`
	if string(b) != want {
		t.Errorf("event JSON\n got %s\nwant %s", b, want)
	}
	b, _ = json.Marshal(all[2])
	if want := `{"seq":3,"time":"2025-06-01T12:00:00.003Z","run":"run2","task":null,"attempt":null,"type":"run.started","z":1,"a":[1,2]}`; string(b) != want {
		t.Errorf("event JSON keeps payload order\n got %s\nwant %s", b, want)
	}
	b, _ = json.Marshal(all[3])
	if !strings.Contains(string(b), `"run":null`) || !strings.Contains(string(b), `"delivery_id":"d1"`) {
		t.Errorf("run-less event JSON: %s", b)
	}
	var back store.Event
	if err := json.Unmarshal([]byte(want), &back); err != nil || back.Seq != 2 || back.Attempt != 1 ||
		string(back.Payload) != `{"class":"transport","consecutive_failures":1}` {
		t.Errorf("unmarshal event: %+v %v", back, err)
	}

	for name, payload := range map[string]any{
		"array":        []int{1},
		"reserved key": map[string]any{"seq": 1},
		"bad JSON":     json.RawMessage(`{`),
	} {
		err := db.Update(ctx, func(tx *store.Tx) error {
			_, err := tx.AppendEvent("run1", "", 0, "x", payload)
			return err
		})
		if err == nil {
			t.Errorf("AppendEvent with %s payload succeeded", name)
		}
	}
}

func TestDisabledAgents(t *testing.T) {
	db, clock := openDB(t)
	insertRun(t, db, newRun("run1"))
	insertRun(t, db, newRun("run2"))
	update(t, db, func(tx *store.Tx) error {
		if err := tx.DisableAgent("run1", "fast", "auth", "invalid API key"); err != nil {
			return err
		}
		clock.Advance(time.Second)
		if err := tx.DisableAgent("run1", "fast", "agent_missing", "claude: not found"); err != nil {
			return err
		}
		return tx.DisableAgent("run1", "strong", "auth", "401")
	})
	var got map[string]store.AgentHealth
	view(t, db, func(tx *store.Tx) (err error) { got, err = tx.DisabledAgents("run1"); return err })
	if len(got) != 2 || got["fast"].Class != "agent_missing" || got["fast"].Reason != "claude: not found" ||
		!got["fast"].At.Equal(t0.Add(time.Second)) || !got["fast"].Disabled {
		t.Errorf("DisabledAgents = %+v", got)
	}
	update(t, db, func(tx *store.Tx) error { return tx.EnableAgent("run1", "strong") })
	view(t, db, func(tx *store.Tx) error {
		got, err := tx.DisabledAgents("run1")
		if _, ok := got["strong"]; ok || len(got) != 1 {
			t.Errorf("after EnableAgent: %+v", got)
		}
		other, _ := tx.DisabledAgents("run2")
		if len(other) != 0 {
			t.Errorf("run2 inherited run1's disabled agents: %+v", other)
		}
		return err
	})
}

func TestListRunsAndRunsInState(t *testing.T) {
	db, clock := openDB(t)
	for i, id := range []string{"run1", "run2", "run3"} {
		clock.Advance(time.Minute)
		insertRun(t, db, newRun(id))
		for n := 0; n <= i; n++ {
			update(t, db, func(tx *store.Tx) error {
				return tx.InsertAttempt(&store.Attempt{RunID: id, TaskID: "a", TokensIn: store.Ptr(int64(10)), CostUSD: store.Ptr(0.5)})
			})
		}
	}
	update(t, db, func(tx *store.Tx) error { return runTo(tx, "run2", store.RunSucceeded, "") })
	var runs, two []store.RunSummary
	view(t, db, func(tx *store.Tx) (err error) {
		if runs, err = tx.ListRuns(0); err != nil {
			return err
		}
		two, err = tx.ListRuns(2)
		return err
	})
	if len(runs) != 3 || runs[0].ID != "run3" || runs[2].ID != "run1" || len(two) != 2 || two[1].ID != "run2" {
		t.Fatalf("ListRuns order: %+v", runs)
	}
	r := runs[0]
	if r.Tasks != 2 || r.Attempts != 3 || *r.TokensIn != 30 || *r.CostUSD != 1.5 || r.TokensOut != nil ||
		!r.StartedAt.Equal(t0.Add(3*time.Minute)) || r.Worktree != "/w" {
		t.Errorf("summary = %+v", r)
	}
	if runs[1].State != store.RunSucceeded || runs[1].FinishedAt == nil {
		t.Errorf("finished summary = %+v", runs[1])
	}
	var live []store.Run
	view(t, db, func(tx *store.Tx) (err error) {
		live, err = tx.RunsInState(store.RunRunning, store.RunWaitingQuota)
		return err
	})
	if len(live) != 2 || live[0].ID != "run1" || live[1].ID != "run3" {
		t.Errorf("RunsInState = %v", live)
	}
}
