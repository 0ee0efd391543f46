package main

// TestCrashLoopIsolated is the other half of `make stress`: a run of isolated tasks — three at
// once (parallel: 3), each writing a directory of its own and one line of a shared file, and a
// best_of: 2 race writing another directory — whose mulligan process is killed with SIGKILL again
// and again, at random moments and at random paths of its applies (the apply-path:N seam), each
// time resumed, until a resume finishes it. After every iteration: the run succeeded, every
// directory is whole (never half applied), the shared file holds all three lines (no lost
// update), and the operator's own files are as they were. MULLIGAN_STRESS=1 only.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCrashLoopIsolated(t *testing.T) {
	if os.Getenv("MULLIGAN_STRESS") != "1" {
		t.Skip("set MULLIGAN_STRESS=1 (make stress) to run the crash loop")
	}
	iterations := 10
	if s := os.Getenv("MULLIGAN_STRESS_ITERATIONS"); s != "" {
		iterations, _ = strconv.Atoi(s)
	}
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "mulligan"), ".").CombinedOutput(); err != nil {
		t.Fatalf("build mulligan: %v\n%s", err, out)
	}
	env := append(benchEnv(t), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("MULLIGAN_STRESS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (MULLIGAN_STRESS_SEED to repeat)", seed)
	rnd := rand.New(rand.NewPCG(seed, seed>>1|1))
	kills := 0
	for i := range iterations {
		kills += isolatedCrashIteration(t, env, rnd, i)
	}
	t.Logf("%d iterations, %d kills", iterations, kills)
}

// isolatedFiles is how many files each task writes in its directory.
const isolatedFiles = 150

var isolatedTasks = fmt.Sprintf(`version: 1
isolation: worktree
parallel: 3
agents:
  dir:
    command: [sh, -c, 'mkdir -p "out/$MULLIGAN_TASK"; i=0; while [ $i -lt %[1]d ]; do i=$((i+1)); echo "$MULLIGAN_TASK $i" > "out/$MULLIGAN_TASK/f$i"; done; sed "s/^slot $MULLIGAN_TASK$/done $MULLIGAN_TASK/" shared.txt > shared.new && mv shared.new shared.txt']
  race:
    command: [sh, -c, 'mkdir -p out/race; i=0; while [ $i -lt %[1]d ]; do i=$((i+1)); echo "lane $MULLIGAN_LANE $i" > "out/race/f$i"; done']
tasks:
  - {id: p1, prompt: p, agent: dir}
  - {id: p2, prompt: p, agent: dir}
  - {id: p3, prompt: p, agent: dir}
  - {id: race, prompt: p, agent: race, best_of: 2}
`, isolatedFiles)

const sharedTxt = "head\nslot p1\na\nb\nc\nslot p2\nd\ne\nf\nslot p3\ntail\n"

func isolatedCrashIteration(t *testing.T, env []string, rnd *rand.Rand, i int) int {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	os.MkdirAll(dir, 0o755)
	mustRun(t, dir, env, "git", "init", "-q")
	os.WriteFile(filepath.Join(dir, "shared.txt"), []byte(sharedTxt), 0o644)
	os.WriteFile(filepath.Join(dir, "mulligan.yaml"), []byte(isolatedTasks), 0o644)
	mustRun(t, dir, env, "git", "add", "-A")
	mustRun(t, dir, env, "git", "commit", "-qm", "init")
	mine := fmt.Sprintf("untracked, mine %d\n", i)
	os.WriteFile(filepath.Join(dir, "mine.txt"), []byte(mine), 0o644)

	kills := 0
	args := []string{"run"}
	for try := 0; ; try++ {
		cmd := exec.Command("mulligan", args...)
		cmd.Dir, cmd.Env = dir, env
		crash := try < 10 && rnd.IntN(4) != 0
		seam := crash && rnd.IntN(2) == 0
		if seam {
			cmd.Env = append(cmd.Env, fmt.Sprintf("MULLIGAN_TEST_CRASH_AT=apply-path:%d", 1+rnd.IntN(isolatedFiles)))
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		if crash && !seam {
			select {
			case err = <-done:
			case <-time.After(time.Duration(rnd.IntN(1500)) * time.Millisecond):
				cmd.Process.Signal(syscall.SIGKILL)
				err = <-done
				kills++
			}
		} else {
			err = <-done
			if seam && err != nil {
				kills++
			}
		}
		if err == nil {
			break
		}
		state, recorded := runState(t, dir, env)
		if state == "succeeded" {
			break
		}
		if try > 25 {
			out, _ := exec.Command("sh", "-c", "cd "+dir+" && mulligan show; mulligan resume 2>&1 | tail -5").CombinedOutput()
			t.Fatalf("iteration %d: the run did not finish after %d resumes (%s): %v\n%s", i, try, state, err, out)
		}
		args = []string{"resume"}
		if !recorded {
			args = []string{"run"}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if state, _ := runState(t, dir, env); state != "succeeded" {
		t.Fatalf("iteration %d: run %s", i, state)
	}
	for _, task := range []string{"p1", "p2", "p3", "race"} {
		ents, _ := os.ReadDir(filepath.Join(dir, "out", task))
		if len(ents) != isolatedFiles {
			t.Errorf("iteration %d: out/%s holds %d files, want %d", i, task, len(ents), isolatedFiles)
		}
	}
	shared, _ := os.ReadFile(filepath.Join(dir, "shared.txt"))
	if want := strings.NewReplacer("slot p", "done p").Replace(sharedTxt); string(shared) != want {
		t.Errorf("iteration %d: shared.txt\n%s\nwant\n%s", i, shared, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "mine.txt")); string(b) != mine {
		t.Errorf("iteration %d: mine.txt is %q", i, b)
	}
	return kills
}
