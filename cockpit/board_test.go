package cockpit

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/store/storetest"
)

const raceFile = `version: 1
agents:
  claude: {command: [claude]}
  codex: {command: [codex]}
tasks:
  - {id: fix, prompt: p, agent: [claude, codex], best_of: 2, timeout: 10m}
`

// TestLoad reads a board from a database: the active run before the finished one, a race's
// lanes in flight with their rung and timeout from the stored task file and their last line of
// output, the run's newest event, and a quota wall until its retry-after, gone once lifted.
func TestLoad(t *testing.T) {
	clock := storetest.NewClock(t0)
	dbPath := store.DefaultPath(t.TempDir())
	db := storetest.OpenTempPath(t, dbPath, store.WithClock(clock.Now))
	ctx := context.Background()
	logs := t.TempDir()
	log := filepath.Join(logs, "2.log")
	if err := os.WriteFile(log, []byte("starting\n\x1b[32mediting parser.go\x1b[0m\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := db.Update(ctx, func(tx *store.Tx) error {
		if err := tx.InsertRun(&store.Run{ID: "old1", Worktree: "/w", State: store.RunSucceeded,
			StartedAt: t0.Add(-time.Hour), FinishedAt: store.Ptr(t0.Add(-time.Hour / 2)), Tasks: []store.Task{{ID: "main"}}}); err != nil {
			return err
		}
		if err := tx.InsertRun(&store.Run{ID: "new1", Worktree: "/w", TaskFile: "mulligan.yaml",
			TaskFileContent: []byte(raceFile), Tasks: []store.Task{{ID: "fix", State: store.TaskRunning}}}); err != nil {
			return err
		}
		// lane 1 met a quota wall on claude for 10 minutes; lane 1's next attempt runs on codex
		for _, a := range []store.Attempt{
			{RunID: "new1", TaskID: "fix", Lane: 1, Agent: "claude", State: store.AttemptFailed, Class: "quota",
				FinishedAt: store.Ptr(t0), RetryAfterMS: store.Ptr(int64(10 * 60 * 1000))},
			{RunID: "new1", TaskID: "fix", Lane: 1, Agent: "codex", Log: log},
			{RunID: "new1", TaskID: "fix", Lane: 2, Agent: "claude"},
		} {
			if err := tx.InsertAttempt(&a); err != nil {
				return err
			}
		}
		_, err := tx.AppendEvent("new1", "fix", 3, "attempt.started", map[string]any{"agent": "claude"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	l := &Loader{DB: db, Recent: 5, Scrub: func(s string) string { return s }}
	b, err := l.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Runs) != 2 || b.Runs[0].ID != "new1" || b.Runs[1].ID != "old1" {
		t.Fatalf("runs %+v, want new1 (active) then old1", b.Runs)
	}
	fix := b.Runs[0].Tasks[0]
	if fix.BestOf != 2 || len(fix.Live) != 2 {
		t.Fatalf("fix: best_of %d, %d attempts in flight; want 2 and 2", fix.BestOf, len(fix.Live))
	}
	lv := fix.Live[0]
	if lv.Lane != 1 || lv.Agent != "codex" || lv.Rung != 2 || lv.Rungs != 2 || lv.Timeout != 10*time.Minute || lv.LastLine != "editing parser.go" {
		t.Errorf("lane 1 in flight: %+v", lv)
	}
	if e := b.Runs[0].LastEvent; e == nil || e.Type != "attempt.started" || e.Attempt != 3 {
		t.Errorf("the newest event: %+v", e)
	}
	if len(b.Walls) != 1 || b.Walls[0].Agent != "claude" || !b.Walls[0].Until.Equal(t0.Add(10*time.Minute)) {
		t.Errorf("walls %+v, want claude until %s", b.Walls, t0.Add(10*time.Minute))
	}

	// What a tick compares moves with a log's new line and with a commit.
	stamp := DBStamp(dbPath) + LogStamp(b)
	if err := os.WriteFile(log, []byte("starting\nediting parser.go\nrunning the tests\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if DBStamp(dbPath)+LogStamp(b) == stamp {
		t.Error("the stamp did not move with a line of output")
	}
	stamp = DBStamp(dbPath)

	// The operator lifts the walls (resume --now): the next load reads that event only.
	clock.Advance(time.Minute)
	if err := db.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.AppendEvent("new1", "", 0, attempt.EventQuotaLifted, map[string]any{"by": "resume --now"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if DBStamp(dbPath) == stamp {
		t.Error("the stamp did not move with a commit")
	}
	if b, err = l.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if len(b.Walls) != 0 {
		t.Errorf("walls %+v after they were lifted", b.Walls)
	}
	if e := b.Runs[0].LastEvent; e == nil || e.Type != attempt.EventQuotaLifted {
		t.Errorf("the newest event after the lift: %+v", e)
	}
}
