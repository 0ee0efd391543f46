package cockpit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDetail is what enter opens: a raced task's attempts and the end of each lane's output,
// scrubbed; a run's tasks.
func TestDetail(t *testing.T) {
	dir := t.TempDir()
	logs := map[int]string{1: "lane one works\nlane one token sk-secret\n", 2: "lane two works\n"}
	b := board()
	fix := &b.Runs[0].Tasks[0]
	for i := range fix.Attempts {
		a := &fix.Attempts[i]
		a.Log = filepath.Join(dir, a.Agent+".log")
		if err := os.WriteFile(a.Log, []byte(logs[a.N]), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	scrub := func(s string) string { return strings.ReplaceAll(s, "sk-secret", "[scrubbed]") }
	got := Detail(b, dir, "aaaa1111", "fix", scrub)
	for _, want := range []string{
		"task aaaa1111/fix  running",
		"1  1     claude  running",
		"2  2     codex   running",
		"output of @1, lane 1 (its end):\n  lane one works\n  lane one token [scrubbed]\n",
		"output of @2, lane 2 (its end):\n  lane two works\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the detail of fix lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "sk-secret") {
		t.Errorf("the detail shows a secret:\n%s", got)
	}
	got = Detail(b, dir, "bbbb2222", "", scrub)
	for _, want := range []string{"run bbbb2222  blocked", "merge  blocked        0         apply-conflict"} {
		if !strings.Contains(got, want) {
			t.Errorf("the detail of run bbbb2222 lacks %q:\n%s", want, got)
		}
	}
}
