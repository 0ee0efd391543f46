package compensate

import (
	"slices"
	"strings"
	"testing"

	"github.com/mulligan-dev/mulligan/store"
)

func TestSplit(t *testing.T) {
	argv, err := Split(`git push origin --delete "fix/a b" 'x;y' z\ w`)
	if err != nil || !slices.Equal(argv, []string{"git", "push", "origin", "--delete", "fix/a b", "x;y", "z w"}) {
		t.Errorf("Split = %q, %v", argv, err)
	}
	if _, err := Split("   "); err == nil {
		t.Error("empty command accepted")
	}
	if _, err := Split(`echo "unterminated`); err == nil {
		t.Error("unterminated quote accepted")
	}
}

func TestWarning(t *testing.T) {
	if w := Warning(WarningInput{Key: "k"}); w != "" {
		t.Errorf("no effects: %q", w)
	}
	quiet := WarningInput{Key: "k", Effects: []store.Effect{
		{Attempt: 1, Name: "cache", Idempotent: true, State: store.EffectRecorded},
		{Attempt: 1, Name: "push", State: store.EffectCompensated},
	}}
	if w := Warning(quiet); w != "" {
		t.Errorf("idempotent and compensated effects only: %q", w)
	}
	w := Warning(WarningInput{Key: "mulligan-r-t", Effects: []store.Effect{
		{Attempt: 2, Name: store.ImplicitEffect, Implicit: true, State: store.EffectRecorded},
		{Attempt: 1, Name: "push", State: store.EffectCompensationFailed, Data: []byte(`{"b":1}`)},
		{Attempt: 1, Name: store.ImplicitEffect, Implicit: true, State: store.EffectUnresolved},
		{Attempt: 3, Name: store.ImplicitEffect, Implicit: true, State: store.EffectCompensated},
	}})
	for _, want := range []string{
		"- attempt 1 recorded `push` (compensation failed): {\"b\":1}\n",
		"- attempts 1, 2 of this task started, and the task is marked `side_effects: non_idempotent`\n",
		"may already have happened",
		"Verify the external state first",
		"mulligan-r-t",
	} {
		if !strings.Contains(w, want) {
			t.Errorf("warning lacks %q:\n%s", want, w)
		}
	}
}
