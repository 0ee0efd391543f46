package attempt

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
)

// agentGroups finds a dead runner's agents by their environment: only an attempt's processes
// (MULLIGAN_PROMPT_FILE set), of that run, each by its process group.
func TestAgentGroups(t *testing.T) {
	start := func(env ...string) int {
		cmd := exec.Command("sleep", "30")
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd.Process.Pid
	}
	agent := start("MULLIGAN_RUN=agrp1", "MULLIGAN_TASK=fix", "MULLIGAN_ATTEMPT=2", "MULLIGAN_PROMPT_FILE=/p")
	start("MULLIGAN_RUN=agrp1", "MULLIGAN_TASK=fix", "MULLIGAN_ATTEMPT=2")                             // a hook
	start("MULLIGAN_RUN=agrp10", "MULLIGAN_TASK=fix", "MULLIGAN_ATTEMPT=2", "MULLIGAN_PROMPT_FILE=/p") // another run
	got := agentGroups("agrp1")
	if len(got) != 1 || !slices.Equal(got["fix@2"], []int{agent}) {
		t.Errorf("agentGroups = %v, want fix@2: [%d]", got, agent)
	}
}

// BenchmarkAgentGroups is the /proc scan resume and kill fall back on when a dead runner did not
// record an attempt's process group: one read of every process's environment.
func BenchmarkAgentGroups(b *testing.B) {
	for b.Loop() {
		agentGroups("nosuchrun")
	}
}
