package attempt

import (
	"errors"
	"reflect"
	"testing"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

func TestPlanOrder(t *testing.T) {
	f, err := taskfile.Parse("plan.yaml", []byte(`version: 1
agents:
  a: {command: [x]}
tasks:
  - {id: docs, needs: [fix], prompt: p, agent: a}
  - {id: fix, needs: [setup], prompt: p, agent: a}
  - {id: lint, prompt: p, agent: a}
  - {id: setup, prompt: p, agent: a}
`))
	if err != nil {
		t.Fatal(err)
	}
	ids := func(ts []*taskfile.Task) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.ID)
		}
		return out
	}
	all, err := plan(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Dependency order, the first ready task in file order each time: lint, setup, fix, docs.
	if got, want := ids(all), []string{"lint", "setup", "fix", "docs"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("plan = %v, want %v", got, want)
	}
	some, err := plan(f, []string{"fix"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(some), []string{"setup", "fix"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("plan(fix) = %v, want %v", got, want)
	}
	var unknown *UnknownTaskError
	if _, err := plan(f, []string{"nope"}); !errors.As(err, &unknown) {
		t.Fatalf("plan(nope) error = %v", err)
	}
}

func TestPickAgent(t *testing.T) {
	chain := []string{"fast", "strong"}
	off := func(names ...string) map[string]store.AgentHealth {
		m := map[string]store.AgentHealth{}
		for _, n := range names {
			m[n] = store.AgentHealth{Agent: n, Disabled: true}
		}
		return m
	}
	cases := []struct {
		counted  int
		disabled map[string]store.AgentHealth
		want     string
		ok       bool
	}{
		{0, nil, "fast", true},
		{1, nil, "strong", true},
		{5, nil, "strong", true},
		{0, off("fast"), "strong", true},
		{1, off("strong"), "fast", true},
		{0, off("fast", "strong"), "", false},
	}
	for _, c := range cases {
		got, ok := pickAgent(chain, c.counted, c.disabled)
		if got != c.want || ok != c.ok {
			t.Errorf("pickAgent(%d, %v) = %q %v, want %q %v", c.counted, c.disabled, got, ok, c.want, c.ok)
		}
	}
}
