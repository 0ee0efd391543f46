// Package compensate is the saga side of mulligan: the side effects attempts record in the
// ledger (store's effects table), the warning a retry gets about them, and the
// compensations that undo them. It must not import package attempt (attempt uses it).
package compensate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/shlex"

	"github.com/mulligan-dev/mulligan/store"
)

// Split turns `--compensate 'CMD …'` into argv by shell-word rules (quotes and backslashes),
// without a shell: no expansion, no pipes. An empty command is an error.
func Split(cmd string) ([]string, error) {
	argv, err := shlex.Split(cmd)
	if err != nil {
		return nil, fmt.Errorf("--compensate %q: %w", cmd, err)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("--compensate is empty: give the command that undoes the effect")
	}
	return argv, nil
}

// Pending reports whether an effect may still be out in the world: recorded and not undone.
func Pending(e store.Effect) bool {
	return e.State != store.EffectCompensated
}

// WarningInput is what the next attempt of a task knows about the ones before it.
type WarningInput struct {
	// Effects are the task's effects recorded by earlier attempts (any order; idempotent and
	// compensated ones are left out of the warning). An implicit one stands for an attempt of a
	// task marked `side_effects: non_idempotent` that started and said nothing finer.
	Effects []store.Effect
	// Key is MULLIGAN_IDEMPOTENCY_KEY, the same for every attempt of the task.
	Key string
}

// Warning is the "side effects of earlier attempts" section of a retry's prompt, or "" when
// no earlier attempt may have acted on the world in a way a retry could duplicate.
func Warning(in WarningInput) string {
	var lines []string
	var started []int
	for _, e := range in.Effects {
		if e.Idempotent || !Pending(e) {
			continue
		}
		if e.Implicit {
			started = append(started, e.Attempt)
			continue
		}
		l := fmt.Sprintf("- attempt %d recorded `%s`", e.Attempt, e.Name)
		if e.State != store.EffectRecorded {
			l += " (" + strings.ReplaceAll(e.State, "_", " ") + ")"
		}
		if len(e.Data) > 0 {
			l += ": " + string(e.Data)
		}
		lines = append(lines, l)
	}
	slices.Sort(started)
	started = slices.Compact(started)
	if len(started) > 0 {
		nums := make([]string, len(started))
		for i, n := range started {
			nums[i] = fmt.Sprint(n)
		}
		word := "attempt"
		if len(nums) > 1 {
			word = "attempts"
		}
		lines = append(lines, fmt.Sprintf("- %s %s of this task started, and the task is marked `side_effects: non_idempotent`", word, strings.Join(nums, ", ")))
	}
	if len(lines) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Earlier attempts of this task may already have acted outside the working tree:\n\n")
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString("\n")
	}
	b.WriteString("\nThese effects may already have happened, even though the attempt did not succeed. ")
	b.WriteString("Verify the external state first (is it already done, or half done?) and do not repeat what is already there.\n")
	if in.Key != "" {
		fmt.Fprintf(&b, "The idempotency key is the same as before: %s (in $MULLIGAN_IDEMPOTENCY_KEY); pass it to any API that accepts one.\n", in.Key)
	}
	return b.String()
}
