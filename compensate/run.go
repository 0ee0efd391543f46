package compensate

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

// Timeout bounds one compensation: a hanging undo must not hold the operator's command forever.
const Timeout = 5 * time.Minute

// outputLimit bounds the output kept with an effect.
const outputLimit = 16 << 10

// CrossedBy returns the effects an operator crosses going back in time, newest first: those
// after reaches an effect that is still out in the world (not compensated).
func CrossedBy(effects []store.Effect, after func(store.Effect) bool) []store.Effect {
	var out []store.Effect
	for _, e := range effects {
		if Pending(e) && after(e) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b store.Effect) int { return int(b.ID - a.ID) })
	return out
}

// Uncompensable returns the effects of es that are not idempotent and have no compensation:
// crossing them is refused without --force.
func Uncompensable(es []store.Effect) []store.Effect {
	var out []store.Effect
	for _, e := range es {
		if !e.Idempotent && len(e.Compensate) == 0 {
			out = append(out, e)
		}
	}
	return out
}

// Result is the outcome of one effect's compensation.
type Result struct {
	Effect store.Effect
	State  string // compensated, compensation_failed, unresolved; "" when nothing was to run
	Output string
	Err    error
}

// Exec runs one compensation argv directly (no shell) in dir, with the environment env plus
// MULLIGAN_DELIVERY_ID (the effect's stable id: the same on every redelivery), MULLIGAN_RUN,
// MULLIGAN_TASK, MULLIGAN_ATTEMPT and MULLIGAN_EFFECT. It returns the combined output.
func Exec(ctx context.Context, dir string, env []string, e store.Effect) (string, error) {
	if len(e.Compensate) == 0 {
		return "", errors.New("no compensation")
	}
	env = append(slices.Clone(env), "MULLIGAN_DELIVERY_ID="+e.DeliveryID, "MULLIGAN_RUN="+e.RunID,
		"MULLIGAN_TASK="+e.TaskID, "MULLIGAN_ATTEMPT="+strconv.Itoa(e.Attempt), "MULLIGAN_EFFECT="+e.Name)
	text, _, err := runBounded(ctx, e.Compensate, dir, env, Timeout)
	return text, err
}

// Compensate runs the compensations of es in the order given (CrossedBy's: newest first), all
// marked compensating first, each outcome recorded at once in the ledger with an
// effect.compensated event. A failure does not stop the
// others. Idempotent effects without a compensation are left as they are (also with
// noCompensate: there is nothing to resolve); with noCompensate (or, for a non-idempotent
// effect, no compensation at all) the effect becomes unresolved.
func Compensate(ctx context.Context, db *store.DB, dir string, es []store.Effect, noCompensate bool) ([]Result, error) {
	env := os.Environ()
	// The decision is made durable before anything runs: every effect about to be compensated
	// becomes compensating in one transaction, so a crash anywhere below leaves all of them
	// owed, and `mulligan compensate` delivers them again with the same delivery ids — not only
	// the ones whose outcome happened to be recorded before the crash.
	if !noCompensate {
		if err := db.Update(ctx, func(tx *store.Tx) error {
			for _, e := range es {
				if len(e.Compensate) > 0 {
					if err := tx.ResolveEffect(e.ID, store.EffectCompensating, e.Output); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	var results []Result
	for _, e := range es {
		r := Result{Effect: e}
		switch {
		case len(e.Compensate) == 0 && e.Idempotent:
			results = append(results, r) // nothing to undo, nothing to resolve
			continue
		case noCompensate || len(e.Compensate) == 0:
			r.State = store.EffectUnresolved
		default:
			r.Output, r.Err = Exec(ctx, dir, env, e)
			r.State = store.EffectCompensated
			if r.Err != nil {
				r.State = store.EffectCompensationFailed
			}
		}
		crashPoint("after-compensation")
		err := db.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
			if err := tx.ResolveEffect(e.ID, r.State, r.Output); err != nil {
				return err
			}
			p := store.EffectCompensatedPayload{Effect: e.ID, Name: e.Name, State: r.State, DeliveryID: e.DeliveryID}
			if r.Err != nil {
				p.Error = r.Err.Error()
			}
			_, err := tx.AppendEvent(e.RunID, e.TaskID, e.Attempt, store.EventEffectCompensated, p)
			return err
		})
		if err != nil {
			return results, err
		}
		r.Effect.State = r.State
		results = append(results, r)
	}
	return results, nil
}

// crashPoint kills this process with SIGKILL when MULLIGAN_TEST_CRASH_AT names the point, for
// the tests of redelivery after a crash between a compensation and its record.
func crashPoint(name string) {
	if os.Getenv("MULLIGAN_TEST_CRASH_AT") == name {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
}
