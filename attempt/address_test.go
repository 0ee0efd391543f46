package attempt

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/store/storetest"
)

func TestParseAddress(t *testing.T) {
	good := map[string]Address{
		"fix-tests":             {Task: "fix-tests"},
		"fix-tests@2":           {Task: "fix-tests", N: 2},
		"k3f9/fix-tests":        {Run: "k3f9", Task: "fix-tests"},
		"k3f9/fix-tests@latest": {Run: "k3f9", Task: "fix-tests"},
		"last/main@1":           {Run: "last", Task: "main", N: 1},
		"abc123/a.b_c-d@10":     {Run: "abc123", Task: "a.b_c-d", N: 10},
	}
	for in, want := range good {
		got, err := ParseAddress(in)
		if err != nil || got != want {
			t.Errorf("ParseAddress(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "@2", "a@0", "a@x", "K3F9/a", "a/b/c", "a b", "run/", "t@-1"} {
		if _, err := ParseAddress(in); err == nil {
			t.Errorf("ParseAddress(%q) succeeded", in)
		}
	}
}

// TestResolve: every form of SPEC §6's addresses, the newest run that has a bare task, and the
// refusals with their candidates.
func TestResolve(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db := storetest.OpenTemp(t, store.WithClock(clock.Now))
	run := func(id string, tasks ...string) {
		clock.Advance(time.Second)
		r := &store.Run{ID: id, Worktree: "/w", GitDir: "/w/.git", TaskFile: "mulligan.yaml", TaskFileHash: "sha256:00",
			TaskFileContent: []byte("version: 1\n")}
		for _, task := range tasks {
			r.Tasks = append(r.Tasks, store.Task{ID: task})
		}
		if err := db.Update(context.Background(), func(tx *store.Tx) error {
			if err := tx.InsertRun(r); err != nil {
				return err
			}
			for _, task := range tasks {
				for n := 1; n <= 2; n++ {
					if err := tx.InsertAttempt(&store.Attempt{RunID: id, TaskID: task, N: n, Agent: "a", State: store.AttemptFailed}); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	run("aaaa0001", "security", "docs")
	run("bbbb0002", "main")
	for _, c := range []struct {
		text      string
		want      Want
		run, task string
		n         int
		err       string
	}{
		{"", WantRun, "bbbb0002", "", 0, ""},
		{"last", WantRun, "bbbb0002", "", 0, ""},
		{"aaaa", WantRun, "aaaa0001", "", 0, ""},
		{"security", WantRun, "aaaa0001", "", 0, ""}, // a task's name names the newest run that has it
		{"aaaa/docs@1", WantRun, "aaaa0001", "", 0, ""},
		{"security", WantTask, "aaaa0001", "security", 2, ""},
		{"security@1", WantAttempt, "aaaa0001", "security", 1, ""},
		{"main", WantAttempt, "bbbb0002", "main", 2, ""}, // the latest attempt
		{"last/main@1", WantAttempt, "bbbb0002", "main", 1, ""},
		{"bbbb", WantAttempt, "bbbb0002", "main", 2, ""}, // a run with one task names its attempt
		{"aaaa0001/security@99", WantTask, "", "", 0, "run aaaa0001 has no attempt security@99"},
		{"aaaa", WantAttempt, "", "", 0, "names run aaaa0001, which has 2 tasks"},
		{"nosuch", WantAttempt, "", "", 0, `no task "nosuch" in any run`},
		{"bbbb0002/security", WantTask, "", "", 0, `run bbbb0002 has no task "security"`},
		{"K3/x", WantTask, "", "", 0, "bad address"},
	} {
		var got *Target
		err := db.View(context.Background(), func(tx *store.Tx) (err error) {
			got, err = Resolve(tx, c.text, c.want)
			return err
		})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Resolve(%q) = %v; want an error with %q", c.text, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Resolve(%q): %v", c.text, err)
			continue
		}
		task, n := "", 0
		if got.Task != nil {
			task = got.Task.ID
		}
		if got.Attempt != nil {
			n = got.Attempt.N
		}
		if got.Run.ID != c.run || task != c.task || n != c.n {
			t.Errorf("Resolve(%q) = %s/%s@%d; want %s/%s@%d", c.text, got.Run.ID, task, n, c.run, c.task, c.n)
		}
	}
	// The refusals name the candidates.
	err := db.View(context.Background(), func(tx *store.Tx) error {
		_, err := Resolve(tx, "main@9", WantAttempt)
		return err
	})
	var addr *AddressError
	if !errors.As(err, &addr) || strings.Join(addr.Candidates, " ") != "bbbb0002/main@1 bbbb0002/main@2" {
		t.Errorf("main@9: %v (candidates %v)", err, addr)
	}
}
