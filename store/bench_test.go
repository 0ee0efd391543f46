package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

const (
	benchRuns            = 10_000
	benchAttemptsPerTask = 5 // two tasks per run: 100,000 attempts
)

// populate writes the history size ls and show are promised to stay fast on: 10,000 runs,
// 20,000 tasks, 100,000 attempts (with short prompts, to keep the file small on a shared
// machine: prompts are not read by ls, and show reads one run's).
func populate(b *testing.B, path string) {
	db, err := store.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	prompt := strings.Repeat("make the tests pass. ", 10)
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	err = db.Update(context.Background(), func(tx *store.Tx) error {
		for i := range benchRuns {
			at := start.Add(time.Duration(i) * time.Minute)
			r := &store.Run{ID: fmt.Sprintf("r%07dk3", i), Worktree: "/w", State: store.RunFailed,
				StartedAt: at, Tasks: []store.Task{{ID: "fix-tests"}, {ID: "docs", Needs: []string{"fix-tests"}}}}
			if err := tx.InsertRun(r); err != nil {
				return err
			}
			for _, task := range r.Tasks {
				for n := 1; n <= benchAttemptsPerTask; n++ {
					fin := at.Add(time.Second)
					a := &store.Attempt{RunID: r.ID, TaskID: task.ID, N: n, Agent: "fast",
						State: store.AttemptFailed, Class: "agent_exit", ExitCode: store.Ptr(1),
						StartedAt: at, FinishedAt: &fin, TokensIn: store.Ptr(int64(1000)),
						TokensOut: store.Ptr(int64(200)), CostUSD: store.Ptr(0.01), Prompt: prompt,
						Ref: fmt.Sprintf("refs/mulligan/runs/%s/%s/%d", r.ID, task.ID, n)}
					if err := tx.InsertAttempt(a); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkHistory measures ls and show on a 10,000-run, 100,000-attempt history.
func BenchmarkHistory(b *testing.B) {
	path := store.DefaultPath(b.TempDir())
	t := time.Now()
	populate(b, path)
	b.Logf("populated %d runs, %d attempts in %v", benchRuns, benchRuns*2*benchAttemptsPerTask, time.Since(t).Round(time.Millisecond))
	db, err := store.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()

	b.Run("ListRuns50", func(b *testing.B) {
		for b.Loop() {
			err := db.View(ctx, func(tx *store.Tx) error {
				runs, err := tx.ListRuns(50)
				if err == nil && (len(runs) != 50 || runs[0].Attempts != 2*benchAttemptsPerTask) {
					err = fmt.Errorf("ListRuns: %d runs", len(runs))
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("GetRun", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i = (i + 7919) % benchRuns // spread over the file, not one cached page
			err := db.View(ctx, func(tx *store.Tx) error {
				r, err := tx.GetRun(fmt.Sprintf("r%07dk3", i))
				if err == nil && len(r.Tasks[1].Attempts) != benchAttemptsPerTask {
					err = fmt.Errorf("GetRun: %d attempts", len(r.Tasks[1].Attempts))
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ResolvePrefixAndGetRun", func(b *testing.B) {
		for b.Loop() {
			err := db.View(ctx, func(tx *store.Tx) error {
				id, err := tx.ResolveRun("r0005123", "")
				if err != nil {
					return err
				}
				_, err = tx.GetRun(id)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	// what `mulligan ls` pays per invocation: open (migrations check), list, close
	b.Run("OpenListRuns50Close", func(b *testing.B) {
		for b.Loop() {
			db, err := store.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			if err := db.View(ctx, func(tx *store.Tx) error { _, err := tx.ListRuns(50); return err }); err != nil {
				b.Fatal(err)
			}
			db.Close()
		}
	})
	b.Run("AttemptWriteTx", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			err := db.Update(ctx, func(tx *store.Tx) error {
				if err := tx.CheckOwner("r0000001k3", 0); err != nil {
					return err
				}
				a := &store.Attempt{RunID: "r0000001k3", TaskID: "docs"}
				if err := tx.InsertAttempt(a); err != nil {
					return err
				}
				_, err := tx.AppendEvent("r0000001k3", "docs", a.N, "attempt.started", nil)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
