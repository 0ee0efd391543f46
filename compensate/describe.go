package compensate

import (
	"fmt"

	"github.com/mulligan-dev/mulligan/store"
)

// Describe names an effect in a message: `push (effect 1 of a@1…)`, and for the implicit effect
// of an attempt of a task marked side_effects: non_idempotent, what it stands for. extra goes
// inside the parentheses.
func Describe(e store.Effect, extra string) string {
	return Name(e) + " " + Ref(e, extra)
}

// Name is what an effect is called in a message.
func Name(e store.Effect) string {
	if e.Implicit {
		return fmt.Sprintf("whatever %s@%d did", e.TaskID, e.Attempt)
	}
	return e.Name
}

// Ref is the parenthesised reference to an effect in a message (extra inside the parentheses).
func Ref(e store.Effect, extra string) string {
	if e.Implicit {
		return fmt.Sprintf("(effect %d: the task is marked side_effects: non_idempotent%s)", e.ID, extra)
	}
	return fmt.Sprintf("(effect %d of %s@%d%s)", e.ID, e.TaskID, e.Attempt, extra)
}
