package attempt

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mulligan-dev/mulligan/reap"
	"github.com/mulligan-dev/mulligan/store"
)

// What a dead runner's agent left running (SPEC §7.2): the attempt's process group (recorded by
// its attempt.process event, or found through the processes' environment) and whatever setsid'd
// or double-forked out of that group, still carrying the attempt's MULLIGAN_* environment.

// attemptProcs lists the live processes (zombies are gone) of attempt task@n of run.
func attemptProcs(groups map[string][]int, run, task string, n int) []int {
	var out []int
	for _, pg := range groups[fmt.Sprintf("%s@%d", task, n)] {
		out = append(out, reap.InGroup(pg)...)
	}
	for _, pid := range reap.WithEnv("MULLIGAN_RUN="+run, "MULLIGAN_TASK="+task, fmt.Sprintf("MULLIGAN_ATTEMPT=%d", n)) {
		if !slices.Contains(out, pid) {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

// endAttemptProcs kills what attempt task@n of run left running and waits (a few seconds at
// most) until it is gone, so nothing writes into the tree after it returns. It returns the
// processes it found alive. A pid is not reused while a process group of that id exists, so a
// recorded group is still the attempt's.
func endAttemptProcs(groups map[string][]int, run, task string, n int) []int {
	found := attemptProcs(groups, run, task, n)
	left := found
	for end := time.Now().Add(5 * time.Second); ; {
		for _, pg := range groups[fmt.Sprintf("%s@%d", task, n)] {
			syscall.Kill(-pg, syscall.SIGKILL)
		}
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if len(left) == 0 || time.Now().After(end) {
			return found
		}
		time.Sleep(10 * time.Millisecond)
		left = attemptProcs(groups, run, task, n)
		for _, pid := range left {
			if !slices.Contains(found, pid) {
				found = append(found, pid) // started by one of them meanwhile
			}
		}
	}
}

// EndLeftRunning ends what the running attempts of run, whose process died, left running (the
// caller owns the run: supervise, having claimed it) and names them, e.g. "main@1 (pids 41, 42)";
// nothing when nothing was left.
func EndLeftRunning(ctx context.Context, db *store.DB, run *store.Run) ([]string, error) {
	var groups map[string][]int
	if err := db.View(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		var err error
		groups, err = attemptGroups(tx, run)
		return err
	}); err != nil {
		return nil, err
	}
	var ended []string
	for _, t := range run.Tasks {
		for _, a := range t.Attempts {
			if a.State != store.AttemptRunning {
				continue
			}
			if pids := endAttemptProcs(groups, run.ID, t.ID, a.N); len(pids) > 0 {
				ended = append(ended, fmt.Sprintf("%s@%d (%s)", t.ID, a.N, pidList(pids)))
			}
		}
	}
	return ended, nil
}

func pidList(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = fmt.Sprint(p)
	}
	if len(s) == 1 {
		return "pid " + s[0]
	}
	return "pids " + strings.Join(s, ", ")
}
