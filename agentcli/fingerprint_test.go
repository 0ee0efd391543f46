package agentcli

import (
	"testing"

	"github.com/mulligan-dev/mulligan/taskfile"
)

// Pairs of outputs that must give the same fingerprint (the same failure seen twice) and pairs
// that must not (a different failure, or progress).
func TestFingerprintPairs(t *testing.T) {
	exit := &Failure{Class: taskfile.ClassAgentExit, Code: "exit_1"}
	verify := &Failure{Class: taskfile.ClassQualityRejection, Code: "verify_failed"}
	for _, tc := range []struct {
		name       string
		f1, f2     *Failure
		out1, out2 string
		tree1      string
		tree2      string
		same       bool
	}{
		{"same output", exit, exit, "error: x is undefined\n", "error: x is undefined\n", "t", "t", true},
		{"line numbers and durations", verify, verify,
			"--- FAIL: TestAdd (0.01s)\n    add_test.go:12: got 3, want 4\nFAIL\tpkg\t0.005s\n",
			"--- FAIL: TestAdd (0.32s)\n    add_test.go:14: got 3, want 4\nFAIL\tpkg\t1.204s\n", "t", "t", true},
		{"temp dirs", exit, exit,
			"open /tmp/go-build2931/b001/x.go: no such file\nerror: build failed\n",
			"open /tmp/go-build8812/b004/x.go: no such file\nerror: build failed\n", "t", "t", true},
		{"macOS temp dirs", exit, exit,
			"error: cannot write /var/folders/xy/abc123/T/tmp.Xq1/out\n",
			"error: cannot write /var/folders/xy/abc123/T/tmp.Pp9/out\n", "t", "t", true},
		{"timestamps", exit, exit,
			"2026-01-02T03:04:05.678Z ERROR request failed\n",
			"2026-03-09T23:59:01.002Z ERROR request failed\n", "t", "t", true},
		{"clock times", exit, exit, "[12:03:44] fatal: lost\n", "[01:59:02.5] fatal: lost\n", "t", "t", true},
		{"hex ids and pids", exit, exit,
			"panic: runtime error at 0xc000123abc (goroutine 17, pid 4411)\nobject 3f9a2b1c0d missing\n",
			"panic: runtime error at 0xc0009f0010 (goroutine 3, pid 812)\nobject 77e01fa93c missing\n", "t", "t", true},
		{"uuids", exit, exit, "error: job 0f8fad5b-d9cb-469f-a165-70867728950e failed\n",
			"error: job 7c9e6679-7425-40de-944b-e07fc1f90ae7 failed\n", "t", "t", true},
		{"chatter before the error", exit, exit,
			"thinking…\nreading 12 files\nerror: x is undefined\n",
			"thinking harder…\nreading 40 files\nlooked at main.go\nerror: x is undefined\n", "t", "t", true},

		{"another message", exit, exit, "error: x is undefined\n", "error: y is undefined\n", "t", "t", false},
		{"another failing test", verify, verify, "--- FAIL: TestAdd (0.01s)\n", "--- FAIL: TestSub (0.01s)\n", "t", "t", false},
		{"another tree: the agent changed something", exit, exit, "error: x\n", "error: x\n", "t1", "t2", false},
		{"another class", exit, verify, "error: x\n", "error: x\n", "t", "t", false},
		{"another code", exit, &Failure{Class: taskfile.ClassAgentExit, Code: "exit_2"}, "error: x\n", "error: x\n", "t", "t", false},
		{"a word is not a hex id", exit, exit, "error: defaced file\n", "error: effaced file\n", "t", "t", false},
		{"a path outside temp dirs", exit, exit, "error: /home/a/x.go broken\n", "error: /home/a/y.go broken\n", "t", "t", false},
	} {
		a := Fingerprint(tc.f1, []byte(tc.out1), tc.tree1)
		b := Fingerprint(tc.f2, []byte(tc.out2), tc.tree2)
		if a == "" || b == "" {
			t.Errorf("%s: empty fingerprint", tc.name)
			continue
		}
		if (a == b) != tc.same {
			t.Errorf("%s: same = %v, want %v\n  %q\n  %q", tc.name, a == b, tc.same, DecisiveLines([]byte(tc.out1)), DecisiveLines([]byte(tc.out2)))
		}
	}
}

func TestFingerprintOnlyForWorkFailures(t *testing.T) {
	for _, c := range []taskfile.Class{taskfile.ClassTransport, taskfile.ClassAttemptTimeout, taskfile.ClassHeartbeatTimeout, taskfile.ClassQuota, taskfile.ClassRunnerDied, taskfile.ClassAuth, taskfile.ClassAgentMissing, taskfile.ClassCancellation} {
		if fp := Fingerprint(&Failure{Class: c}, []byte("error: x\n"), "t"); fp != "" {
			t.Errorf("%s got a fingerprint %s", c, fp)
		}
	}
	for _, c := range []taskfile.Class{taskfile.ClassAgentExit, taskfile.ClassPayloadDeclared, taskfile.ClassSchemaInvalid, taskfile.ClassQualityRejection} {
		if fp := Fingerprint(&Failure{Class: c}, []byte("error: x\n"), "t"); fp == "" {
			t.Errorf("%s got no fingerprint", c)
		}
	}
	if Fingerprint(nil, nil, "t") != "" {
		t.Error("a success got a fingerprint")
	}
}

func TestNormaliseLine(t *testing.T) {
	for in, want := range map[string]string{
		"main_test.go:42: got 3":                          "main_test.go:<n>: got <n>",
		"commit 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b": "commit <hex>",
		"at 2026-01-02 03:04:05 UTC":                      "at <time> UTC",
		"wrote /tmp/mulligan-x1/out.json":                 "wrote <tmp>",
		"error: cafe added":                               "error: cafe added",
	} {
		if got := NormaliseLine(in); got != want {
			t.Errorf("NormaliseLine(%q) = %q, want %q", in, got, want)
		}
	}
}
