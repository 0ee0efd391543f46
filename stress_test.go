package main

// TestCrashLoop is `make stress`: a run of three tasks (a retry, side effects, hooks) whose
// mulligan process is killed with SIGKILL at random moments, again and again, each time resumed,
// until a resume finishes it. After every iteration it checks what "nothing lost" promises: the
// run ends succeeded with every task's work in the tree, the operator's uncommitted and untracked
// files are as they were, the database is intact, every hook delivery ended delivered and ran at
// least once (with its stable delivery id), and every effect is in the ledger. Task d's agent uses
// git the way agents do: its failing attempts commit everything, stash -u, clean and check out a
// branch; its success commits its own file. After the loop HEAD, the branches, the stash list and
// the staged change are the operator's, plus exactly the successful attempt's one commit. It is slow (about
// two seconds an iteration), so it runs only with MULLIGAN_STRESS=1.

import (
	"database/sql"
	"encoding/json"
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

	_ "github.com/mattn/go-sqlite3"
)

func TestCrashLoop(t *testing.T) {
	if os.Getenv("MULLIGAN_STRESS") != "1" {
		t.Skip("set MULLIGAN_STRESS=1 (make stress) to run the crash loop")
	}
	iterations := 20
	if s := os.Getenv("MULLIGAN_STRESS_ITERATIONS"); s != "" {
		iterations, _ = strconv.Atoi(s)
	}
	bin := t.TempDir()
	for _, b := range [][2]string{{"mulligan", "."}, {"demoagent", "./testdata/demoagent"}} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, b[0]), b[1]).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", b[0], err, out)
		}
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
		kills += crashIteration(t, env, rnd, i)
	}
	t.Logf("%d iterations, %d kills", iterations, kills)
}

const crashTasks = `version: 1
agents:
  work:
    command: [demoagent, "fail-until:2", "sleep:300ms", "attempt-file:out/{{task}}", "say:done"]
  slow:
    command: [demoagent, "spam:200", "sleep:200ms", "attempt-file:out/{{task}}", "say:done"]
  effects:
    command: [sh, -c, 'mulligan effect record push --compensate true && mulligan effect record mail --idempotent && echo c > out-c.txt']
  git:
    command: [sh, -c, 'if [ "$MULLIGAN_ATTEMPT" = 1 ]; then echo half > half.txt; git add -A; git commit -qm half; git stash -u -q; git clean -fdq; git checkout -qb agent/tmp; git commit -q --allow-empty -m tmp; exit 1; fi; sleep 0.2; echo d > out-d.txt; git add out-d.txt; git commit -qm "task d" -- out-d.txt']
hooks:
  on_success: [[sh, -c, 'echo "$MULLIGAN_DELIVERY_ID" >> "$HOOKLOG"']]
  on_retry: [[sh, -c, 'echo "$MULLIGAN_DELIVERY_ID" >> "$HOOKLOG"']]
tasks:
  - id: a
    prompt: p
    agent: work
    on_failure: retry
    retries: 3
    backoff: {kind: fixed, initial: 50ms}
    hooks:
      on_retry: [[sh, -c, 'echo "$MULLIGAN_DELIVERY_ID" >> "$HOOKLOG"']]
      on_success: [[sh, -c, 'echo "$MULLIGAN_DELIVERY_ID" >> "$HOOKLOG"']]
  - id: b
    needs: [a]
    prompt: p
    agent: slow
    hooks:
      on_success: [[sh, -c, 'sleep 0.1; echo "$MULLIGAN_DELIVERY_ID" >> "$HOOKLOG"']]
  - id: c
    needs: [b]
    prompt: p
    agent: effects
    side_effects: non_idempotent
  - id: d
    needs: [c]
    prompt: p
    agent: git
    on_failure: retry
    retries: 3
    backoff: {kind: fixed, initial: 50ms}
`

// crashIteration runs one run to completion under random SIGKILLs and checks the result; it
// returns how many times mulligan was killed.
func crashIteration(t *testing.T, env []string, rnd *rand.Rand, i int) int {
	t.Helper()
	work := t.TempDir()
	dir := filepath.Join(work, "repo")
	hookLog := filepath.Join(work, "hooks.log")
	env = append(env, "HOOKLOG="+hookLog)
	os.MkdirAll(dir, 0o755)
	mustRun(t, dir, env, "git", "init", "-q")
	os.WriteFile(filepath.Join(dir, "user.txt"), []byte("committed\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "mulligan.yaml"), []byte(crashTasks), 0o644)
	mustRun(t, dir, env, "git", "add", "-A")
	mustRun(t, dir, env, "git", "commit", "-qm", "init")
	// what git holds of the operator's work: a stash entry and a staged file
	os.WriteFile(filepath.Join(dir, "stashed.txt"), []byte("stashed\n"), 0o644)
	mustRun(t, dir, env, "git", "add", "stashed.txt")
	mustRun(t, dir, env, "git", "stash", "-q")
	os.WriteFile(filepath.Join(dir, "staged.txt"), []byte("staged\n"), 0o644)
	mustRun(t, dir, env, "git", "add", "staged.txt")
	gitBefore := gitView(t, dir, env)
	// the operator's uncommitted work: a modified tracked file and an untracked one
	userTxt := fmt.Sprintf("committed\nmy uncommitted line %d\n", i)
	os.WriteFile(filepath.Join(dir, "user.txt"), []byte(userTxt), 0o644)
	os.WriteFile(filepath.Join(dir, "mine.txt"), []byte("untracked, mine\n"), 0o644)

	kills := 0
	args := []string{"run"}
	for try := 0; ; try++ {
		cmd := exec.Command("mulligan", args...)
		cmd.Dir, cmd.Env = dir, env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		if try < 8 && rnd.IntN(5) != 0 {
			select {
			case err = <-done:
			case <-time.After(time.Duration(rnd.IntN(700)) * time.Millisecond):
				cmd.Process.Signal(syscall.SIGKILL)
				err = <-done
				kills++
			}
		} else {
			err = <-done
		}
		if err == nil {
			break
		}
		// killed after the run's end was recorded (delivering its last hooks, say): nothing to
		// resume, and the next command delivers what is left
		state, recorded := runState(t, dir, env)
		if state == "succeeded" {
			break
		}
		if try > 20 {
			out, _ := exec.Command("sh", "-c", "cd "+dir+" && mulligan show; mulligan resume 2>&1 | tail -5").CombinedOutput()
			t.Fatalf("iteration %d: the run did not finish after %d resumes: %v\n%s", i, try, err, out)
		}
		args = []string{"resume"}
		if !recorded {
			args = []string{"run"} // killed before it recorded the run: nothing to resume
		}
		time.Sleep(20 * time.Millisecond) // let the killed agent's group go (Pdeathsig)
	}
	// One more command: it delivers any hook the last process left pending.
	mustRun(t, dir, env, "mulligan", "ls")

	show := mustOutput(t, dir, env, "mulligan", "show", "-o", "json")
	var run struct {
		ID    string `json:"id"`
		State string `json:"state"`
		Tasks []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(show), &run); err != nil {
		t.Fatal(err)
	}
	if run.State != "succeeded" {
		t.Fatalf("iteration %d: run %s is %s:\n%s", i, run.ID, run.State, show)
	}
	if got := gitView(t, dir, env); got != gitBefore+"task d\n" {
		t.Errorf("iteration %d: git state\n%s\nwant\n%stask d\n", i, got, gitBefore)
	}
	for _, f := range []string{"out-c.txt", "out-d.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("iteration %d: %s missing after the run", i, f)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "user.txt")); string(b) != userTxt {
		t.Errorf("iteration %d: user.txt is %q, want %q", i, b, userTxt)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "mine.txt")); string(b) != "untracked, mine\n" {
		t.Errorf("iteration %d: mine.txt is %q", i, b)
	}
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, ".git", "mulligan", "mulligan.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("iteration %d: integrity_check = %q, %v", i, check, err)
	}
	logged, _ := os.ReadFile(hookLog)
	rows, err := db.Query("SELECT delivery_id, state, hook, task_id FROM hook_deliveries WHERE run_id = ?", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	successes := map[string]bool{}
	for rows.Next() {
		var id, state, hook, task string
		rows.Scan(&id, &state, &hook, &task)
		if state != "delivered" {
			t.Errorf("iteration %d: hook %s (%s of %q) is %s", i, id, hook, task, state)
		}
		if !strings.Contains(string(logged), id+"\n") {
			t.Errorf("iteration %d: hook %s (%s of %q) never ran", i, id, hook, task)
		}
		if hook == "on_success" {
			successes[task] = true
		}
	}
	for _, want := range []string{"a", "b", ""} {
		if !successes[want] {
			t.Errorf("iteration %d: no on_success delivery for %q", i, want)
		}
	}
	var effects int
	db.QueryRow("SELECT count(*) FROM effects WHERE run = ? AND task = 'c'", run.ID).Scan(&effects)
	if effects < 2 {
		t.Errorf("iteration %d: %d effects recorded by c, want at least 2", i, effects)
	}
	// c is side_effects: non_idempotent: every attempt of it that started has an effect (its
	// implicit one, or what it recorded itself), and the one that succeeded recorded its own.
	var bare, implicitOfSuccess int
	db.QueryRow(`SELECT count(*) FROM attempts a WHERE a.run_id = ? AND a.task_id = 'c' AND NOT EXISTS
		(SELECT 1 FROM effects e WHERE e.run = a.run_id AND e.task = a.task_id AND e.attempt = a.n)`, run.ID).Scan(&bare)
	db.QueryRow(`SELECT count(*) FROM effects e JOIN attempts a ON a.run_id = e.run AND a.task_id = e.task
		AND a.n = e.attempt WHERE e.run = ? AND e.implicit = 1 AND a.state = 'succeeded'`, run.ID).Scan(&implicitOfSuccess)
	if bare != 0 || implicitOfSuccess != 0 {
		t.Errorf("iteration %d: c has %d attempts without an effect, %d implicit effects of its success", i, bare, implicitOfSuccess)
	}
	return kills
}

// runState is the state of the repository's run, and false when mulligan was killed before it
// recorded one.
func runState(t *testing.T, dir string, env []string) (string, bool) {
	t.Helper()
	cmd := exec.Command("mulligan", "show", "-o", "json")
	cmd.Dir, cmd.Env = dir, env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && strings.Contains(stderr.String(), "no runs yet") {
		return "", false
	}
	if err != nil {
		t.Fatalf("mulligan show -o json: %v\n%s", err, stderr.String())
	}
	var run struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal(out, &run); err != nil {
		t.Fatal(err)
	}
	return run.State, true
}

func mustOutput(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// gitView is what git shows of the operator's state: branches, the stash list, the staged paths,
// then main's commit subjects, newest last.
func gitView(t *testing.T, dir string, env []string) string {
	t.Helper()
	return mustOutput(t, dir, env, "git", "for-each-ref", "--format=%(refname)", "refs/heads") +
		mustOutput(t, dir, env, "git", "stash", "list", "--format=%gs") +
		mustOutput(t, dir, env, "git", "diff", "--cached", "--name-only") +
		mustOutput(t, dir, env, "git", "log", "--reverse", "--format=%s", "main")
}
