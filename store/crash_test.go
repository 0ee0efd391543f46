package store_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

const crashEnv = "MULLIGAN_STORE_CRASH_CHILD"

// TestCrashChild is the writer the crash test re-executes and kills; on its own it does
// nothing. Each loop is one transaction of the shape the runner writes: an attempt, its
// event and the task's counters, with a prompt big enough to span several pages. After each
// commit it prints "TASK N", so the parent knows what must survive.
func TestCrashChild(t *testing.T) {
	spec := os.Getenv(crashEnv)
	if spec == "" {
		t.Skip("only run by TestCrashConsistency")
	}
	path, task, _ := strings.Cut(spec, "|")
	db, err := store.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	prompt := strings.Repeat("fix the tests. ", 1500)
	for {
		var n int
		err := db.Update(context.Background(), func(tx *store.Tx) error {
			a := store.Attempt{RunID: "crash1", TaskID: task, Agent: "fast", Prompt: prompt, Counted: true}
			if err := tx.InsertAttempt(&a); err != nil {
				return err
			}
			n = a.N
			if _, err := tx.AppendEvent("crash1", task, a.N, "attempt.started", map[string]any{"agent": "fast"}); err != nil {
				return err
			}
			tk, err := tx.GetTask("crash1", task)
			if err != nil {
				return err
			}
			tk.ConsecutiveFailures, tk.RetriesUsed = a.N, a.N
			tk.Attempts = nil
			_, err = tx.TransitionTask("crash1", task, store.TaskTransition{To: store.TaskRunning, Row: tk})
			return err
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		fmt.Printf("%s %d\n", task, n)
		// SQLite's busy handler is not fair: a writer committing in a tight loop can starve
		// the other past busy_timeout. Runners write a few times a second, not thousands.
		time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
	}
}

// TestCrashConsistency SIGKILLs two concurrent writer processes at random moments, several
// times, then checks that the database is intact, that every transaction a writer saw commit
// is there, and that no transaction is there in part.
func TestCrashConsistency(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		t.Skip("in the child")
	}
	path := store.DefaultPath(t.TempDir())
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	run := newRun("crash1")
	run.Tasks = []store.Task{{ID: "t1"}, {ID: "t2"}}
	insertRun(t, db, run)
	db.Close()

	committed := map[string]int{} // task → highest attempt a child reported committed
	var mu sync.Mutex
	const rounds = 6
	for round := range rounds {
		var children []*exec.Cmd
		var readers sync.WaitGroup
		started := make(chan struct{}, 2)
		for _, task := range []string{"t1", "t2"} {
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashEnv+"="+path+"|"+task)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			children = append(children, cmd)
			readers.Add(1)
			go func() {
				defer readers.Done()
				sc := bufio.NewScanner(out)
				first := true
				for sc.Scan() {
					var tk string
					var n int
					if _, err := fmt.Sscanf(sc.Text(), "%s %d", &tk, &n); err != nil {
						continue // the test binary's own output
					}
					mu.Lock()
					committed[tk] = max(committed[tk], n)
					mu.Unlock()
					if first {
						started <- struct{}{}
						first = false
					}
				}
			}()
		}
		// kill once both are writing, at a random point of their loops
		for range children {
			select {
			case <-started:
			case <-time.After(30 * time.Second):
				t.Fatal("a writer never committed")
			}
		}
		time.Sleep(time.Duration(rand.IntN(40_000)) * time.Microsecond)
		for _, c := range children {
			c.Process.Signal(syscall.SIGKILL)
		}
		readers.Wait()
		for _, c := range children {
			err := c.Wait()
			if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
				t.Fatalf("round %d: writer ended on its own: %v", round, err)
			}
		}
	}

	db, err = store.Open(path)
	if err != nil {
		t.Fatalf("reopen after crashes: %v", err)
	}
	defer db.Close()
	view(t, db, func(tx *store.Tx) error {
		if got, err := tx.QueryStringForTest("PRAGMA integrity_check"); err != nil || got != "ok" {
			t.Errorf("integrity_check = %q, %v", got, err)
		}
		if n, err := tx.QueryIntForTest("SELECT count(*) FROM pragma_foreign_key_check"); err != nil || n != 0 {
			t.Errorf("foreign_key_check: %d violations, %v", n, err)
		}
		r, err := tx.GetRun("crash1")
		if err != nil {
			return err
		}
		events, err := tx.Events("crash1", 0, 0)
		if err != nil {
			return err
		}
		perTask := map[string]map[int]int{}
		for _, e := range events {
			if e.Type != "attempt.started" {
				continue // the task's state changes
			}
			if perTask[e.Task] == nil {
				perTask[e.Task] = map[int]int{}
			}
			perTask[e.Task][e.Attempt]++
		}
		for _, tk := range r.Tasks {
			if len(tk.Attempts) < committed[tk.ID] {
				t.Errorf("task %s: %d attempts in the database, but attempt %d was reported committed", tk.ID, len(tk.Attempts), committed[tk.ID])
			}
			for i, a := range tk.Attempts {
				if a.N != i+1 || len(a.Prompt) != len("fix the tests. ")*1500 {
					t.Errorf("task %s: attempt %d at position %d, prompt %d bytes", tk.ID, a.N, i, len(a.Prompt))
				}
				if perTask[tk.ID][a.N] != 1 {
					t.Errorf("task %s attempt %d has %d events, want 1", tk.ID, a.N, perTask[tk.ID][a.N])
				}
			}
			if len(perTask[tk.ID]) != len(tk.Attempts) {
				t.Errorf("task %s: events for %d attempts, %d attempts", tk.ID, len(perTask[tk.ID]), len(tk.Attempts))
			}
			if tk.ConsecutiveFailures != len(tk.Attempts) {
				t.Errorf("task %s: counter %d but %d attempts: a transaction was applied in part", tk.ID, tk.ConsecutiveFailures, len(tk.Attempts))
			}
		}
		t.Logf("after %d kills: %v attempts reported committed, %d+%d in the database",
			rounds, committed, len(r.Tasks[0].Attempts), len(r.Tasks[1].Attempts))
		return nil
	})
}
