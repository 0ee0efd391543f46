package cmd

import (
	"reflect"
	"strings"
	"testing"
)

func TestNormalizeArgs(t *testing.T) {
	g := &globals{io: func() *IOStreams { s, _, _ := Test(); return s }()}
	app := newApp(g)
	cases := []struct {
		in, want, rest string // space-separated; rest "-" means nil
	}{
		{"restore REV -o json", "mulligan -o json restore -- REV", "-"},
		{"snapshot -m x -o json", "mulligan -o json snapshot -m x", "-"},
		{"-C dir snapshot --message=y", "mulligan -C dir snapshot --message=y", "-"},
		{"restore REV --dry-run", "mulligan restore --dry-run -- REV", "-"},
		{"run --retries 2 -- agent --dry-run -o json", "mulligan run --retries 2", "agent --dry-run -o json"},
		{"run fix docs -f t.yaml", "mulligan run -f t.yaml -- fix docs", "-"},
		{"restore -- -odd", "mulligan restore -- -odd", "-"},
		{"restore REV -- a.txt --dry-run src", "mulligan restore -- REV", "a.txt --dry-run src"},
		{"show -o=json k3f9", "mulligan -o=json show -- k3f9", "-"},
		{"help snapshot", "mulligan help snapshot", "-"},
	}
	for _, c := range cases {
		got, err := normalizeArgs(app, strings.Fields(c.in))
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if want := strings.Fields(c.want); !reflect.DeepEqual(got.Args, want) {
			t.Errorf("%q → %q, want %q", c.in, got.Args, want)
		}
		var wantRest []string
		if c.rest != "-" {
			wantRest = strings.Fields(c.rest)
		}
		if !reflect.DeepEqual(got.Rest, wantRest) {
			t.Errorf("%q rest → %q, want %q", c.in, got.Rest, wantRest)
		}
	}
	for _, bad := range []string{"restore REV --bogus", "--nope snapshot", "snapshot -m", "restore REV -o"} {
		if _, err := normalizeArgs(app, strings.Fields(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		} else if e, ok := err.(*Error); !ok || e.Code != ExitUsage {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
}

func TestColorDecision(t *testing.T) {
	env := map[string]string{}
	s := &IOStreams{outTTY: true, getenv: func(k string) string { return env[k] }}
	if !s.ColorEnabled() {
		t.Fatal("a terminal should get color")
	}
	for k, v := range map[string]string{"NO_COLOR": "1", "CLICOLOR": "0", "TERM": "dumb"} {
		env = map[string]string{k: v}
		if s.ColorEnabled() {
			t.Errorf("%s=%s should turn color off", k, v)
		}
	}
	env = map[string]string{"CLICOLOR_FORCE": "1"}
	s.outTTY = false
	if !s.ColorEnabled() {
		t.Error("CLICOLOR_FORCE should turn color on off a terminal")
	}
	env = map[string]string{}
	if s.ColorEnabled() {
		t.Error("no terminal, no color")
	}
}
