package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemo runs `make demo`'s script as a newcomer would, piped: it must succeed, show the task file
// it runs, tell its story in two screens at most, print no escape codes when not on a terminal, and
// leave nothing behind in the temporary directory, unless asked to keep its repository (--keep,
// `make demo KEEP=1`), which it then names.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries and runs the whole demo")
	}
	t.Parallel() // its own binaries and TMPDIR: it runs beside the scripts
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the demo makes its repository with git, which is not installed")
	}
	bin := t.TempDir()
	for _, b := range [][]string{{filepath.Join(bin, "mulligan"), "."}, {filepath.Join(bin, "demoagent"), "./testdata/demoagent"}} {
		if out, err := exec.Command("go", "build", "-o", b[0], b[1]).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b[1], err, out)
		}
	}
	tmp := t.TempDir()
	cmd := exec.Command("bash", "testdata/demo/demo.sh", filepath.Join(bin, "mulligan"), filepath.Join(bin, "demoagent"))
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "MULLIGAN_DEMO_KEEP=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out)
	}
	text := string(out)
	if lines := strings.Count(text, "\n"); lines > 125 {
		t.Errorf("the demo prints %d lines; keep it to two screens (125 lines):\n%s", lines, text)
	}
	if strings.Contains(text, "\x1b") {
		t.Errorf("escape codes in piped output:\n%q", text)
	}
	for _, want := range []string{"fix-add@2 succeeded", "(empty: the release was withdrawn)", "autopsy: ", "changelog@2 started (agent strong)", "deploy@1 accepted", "$ cat mulligan.yaml\nversion: 1\n", "  - id: fix-add\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("the demo does not show %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "fakeagent") {
		t.Errorf("the demo's agent is demoagent, but the output says fakeagent:\n%s", text)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "mulligan-demo.*")); len(left) > 0 {
		t.Errorf("the demo left %v behind", left)
	}

	cmd = exec.Command("bash", "testdata/demo/demo.sh", filepath.Join(bin, "mulligan"), filepath.Join(bin, "demoagent"), "--keep")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "MULLIGAN_DEMO_KEEP=")
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo --keep failed: %v\n%s", err, out)
	}
	kept, _ := filepath.Glob(filepath.Join(tmp, "mulligan-demo.*", "repo"))
	if len(kept) != 1 {
		t.Fatalf("demo --keep kept %v", kept)
	}
	if !strings.Contains(string(out), "The demo repository is kept in "+kept[0]) {
		t.Errorf("demo --keep does not say where its repository is (%s):\n%s", kept[0], out)
	}
	if _, err := os.Stat(filepath.Join(kept[0], "mulligan.yaml")); err != nil {
		t.Errorf("the kept repository has no task file: %v", err)
	}
}
