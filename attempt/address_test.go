package attempt

import "testing"

func TestParseAddress(t *testing.T) {
	good := map[string]Address{
		"fix-tests":             {Task: "fix-tests"},
		"fix-tests@2":           {Task: "fix-tests", N: 2},
		"k3f9/fix-tests":        {Run: "k3f9", Task: "fix-tests"},
		"k3f9/fix-tests@latest": {Run: "k3f9", Task: "fix-tests"},
		"last/main@1":           {Run: "last", Task: "main", N: 1},
		"abc123/a.b_c-d@10":     {Run: "abc123", Task: "a.b_c-d", N: 10},
	}
	for in, want := range good {
		got, err := ParseAddress(in)
		if err != nil || got != want {
			t.Errorf("ParseAddress(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "@2", "a@0", "a@x", "K3F9/a", "a/b/c", "a b", "run/", "t@-1"} {
		if _, err := ParseAddress(in); err == nil {
			t.Errorf("ParseAddress(%q) succeeded", in)
		}
	}
}
