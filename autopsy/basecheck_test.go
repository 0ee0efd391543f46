package autopsy

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The base check's command runs bounded in the directory the base tree was written to
// (snapshot's Materialize, tested there).
func TestRunOnBase(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "check.sh"), []byte("#!/bin/sh\ntest -f ../wanted.txt || { echo 'FAIL: wanted.txt missing'; exit 3; }\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := runBounded(context.Background(), []string{"sh", "-c", "cd scripts && ./check.sh"}, dir, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || lastNonBlank(res.Output) != "FAIL: wanted.txt missing" {
		t.Errorf("base check = %+v", res)
	}
	if res, err := runBounded(context.Background(), []string{"true"}, dir, time.Minute); err != nil || res.failed() {
		t.Errorf("a passing command: %+v, %v", res, err)
	}
	if _, err := runBounded(context.Background(), []string{"no-such-command-here"}, dir, time.Minute); err == nil {
		t.Error("a command that cannot start gives an answer")
	}
}
