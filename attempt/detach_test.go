package attempt

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mulligan-dev/mulligan/taskfile"
)

// TestHandoffRoundTrip: the hand-off a foreground process writes is the value the background
// process reads, from a private file named in its argv (not from its environment), which the
// reader removes; a file that is not a hand-off is refused.
func TestHandoffRoundTrip(t *testing.T) {
	common := t.TempDir()
	retries, cost := 2, 1.5
	h := &Handoff{Kind: HandoffRun, Run: "k3f9", Dir: t.TempDir(), Output: "json", NoAutopsy: true,
		Tasks: []string{"a"}, AdHoc: &taskfile.AdHocOptions{Command: []string{"go", "test"}, Prompt: "fix it", Retries: &retries},
		MaxCostUSD: &cost}
	cmd, logPath, err := h.Start("/bin/sh", "mulligan", common, "detach.log", []string{"PATH=/usr/bin:/bin"})
	if err != nil {
		t.Fatal(err)
	}
	cmd.Wait() // sh cannot open "__handoff": it exits; the file stays for the reader
	if len(cmd.Args) != 3 || cmd.Args[1] != "__handoff" || cmd.Dir != h.Dir {
		t.Fatalf("argv %q in %s; want mulligan __handoff FILE in %s", cmd.Args, cmd.Dir, h.Dir)
	}
	for _, e := range cmd.Env {
		if e != "PATH=/usr/bin:/bin" {
			t.Errorf("the child's environment carries %q", e)
		}
	}
	path := cmd.Args[2]
	if filepath.Dir(path) != filepath.Dir(logPath) {
		t.Errorf("hand-off %s not in the run's log directory (%s)", path, logPath)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("hand-off mode %v; want 0600 (it may hold a prompt)", fi.Mode().Perm())
	}
	got, err := ReadHandoff(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Errorf("read %+v; wrote %+v", got, h)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("the reader left the hand-off file behind")
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"kind":"rm -rf","run":"x","dir":"/"}`), 0o600)
	if _, err := ReadHandoff(bad); err == nil {
		t.Error("a hand-off of an unknown kind was accepted")
	}
}
