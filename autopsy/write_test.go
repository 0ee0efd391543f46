package autopsy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReportShapeAndFiles(t *testing.T) {
	f := mkFacts(t, "", att{class: cAgentExit, msg: "agent exited with status 1: error: cannot open boom", out: "step 1\nerror: cannot open boom\n", files: 1})
	r := f.report(Input{Now: func() time.Time { return time.Unix(1e9+90, 0) }})
	js, err := JSON(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	// SPEC §9: autopsy -o json
	for _, k := range []string{"run", "verdict", "suggestion", "timeline", "evidence", "suspicious"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %q in %s", k, js)
		}
	}
	v := m["verdict"].(map[string]any)
	for _, k := range []string{"category", "confidence", "rule"} {
		if _, ok := v[k]; !ok {
			t.Errorf("verdict has no %q", k)
		}
	}
	s := m["suggestion"].(map[string]any)
	if _, ok := s["text"]; !ok || s["commands"] == nil {
		t.Errorf("suggestion %v", s)
	}
	if r.DurationMS != 90000 {
		t.Errorf("duration_ms %d, want 90000 (running run: until now)", r.DurationMS)
	}

	dir := filepath.Join(t.TempDir(), "mulligan", "autopsy")
	md, err := WriteFiles(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{md, filepath.Join(dir, "k3f9abcd.json")} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", p, st, err)
		}
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v", st.Mode())
	}
	b, _ := os.ReadFile(md)
	for _, want := range []string{"# Autopsy of run k3f9abcd (failed)", "## Verdict: unknown", "Rule `single-failure`", "```sh\nmulligan logs k3f9abcd/fix@1\n", "The lines that decided it:", "| fix@1 | fast | failed | agent_exit |", "error: cannot open boom"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("markdown lacks %q:\n%s", want, b)
		}
	}
	sum := Summary(r, ".git/mulligan/autopsy/k3f9abcd.md")
	if lines := strings.Split(strings.TrimSpace(sum), "\n"); len(lines) != 4 || !strings.HasPrefix(lines[2], "  next: mulligan logs k3f9abcd/fix@1") {
		t.Errorf("summary:\n%s", sum)
	}
}
