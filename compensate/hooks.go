package compensate

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

// HookTimeout bounds one hook delivery unless MULLIGAN_HOOK_TIMEOUT says otherwise: a hook
// that hangs must not hold the run (or the command that delivers it) for longer.
const HookTimeout = 30 * time.Second

// claimMargin is how long past its timeout a claim still holds: a process that is still
// delivering is not raced by another one, and a claim whose process is gone without a trace
// (on another host) expires.
const claimMargin = 30 * time.Second

// Hooks delivers the hook outbox (store.HookDelivery rows): at least once, each delivery with
// its stable MULLIGAN_DELIVERY_ID. A hook's failure is recorded and reported, never more: it
// cannot change a task's or a run's outcome.
type Hooks struct {
	DB *store.DB
	// Expand substitutes the template variables of a hook's command for the delivery.
	Expand func(d store.HookDelivery) ([]string, error)
	// Environ is the environment hooks inherit, before the MULLIGAN_* variables.
	Environ []string
	// Timeout bounds each hook (HookTimeout when zero).
	Timeout time.Duration
	// Self is the owner claims are made in the name of; Alive tells a dead claimer (or run
	// owner) from a live one. Defaults: store.Self and store.ProcessAlive.
	Self  store.Owner
	Alive func(store.Owner) bool
	// Report, when set, is told of each finished delivery (the terminal's note of a failure).
	Report func(HookResult)
}

// HookResult is the outcome of one delivery.
type HookResult struct {
	Delivery store.HookDelivery
	Err      error // the hook failed: non-zero exit, timed out, or could not start
}

// HookTimeoutFromEnv reads MULLIGAN_HOOK_TIMEOUT (a Go duration, e.g. 10s); the default when it
// is unset or invalid.
func HookTimeoutFromEnv() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("MULLIGAN_HOOK_TIMEOUT")); err == nil && d > 0 {
		return d
	}
	return HookTimeout
}

func (h *Hooks) defaults() {
	if h.Timeout <= 0 {
		h.Timeout = HookTimeout
	}
	if h.Self.PID == 0 {
		h.Self = store.Self()
	}
	if h.Alive == nil {
		h.Alive = store.ProcessAlive
	}
	if h.Environ == nil {
		h.Environ = os.Environ()
	}
}

// DeliverRun delivers the pending deliveries of one run that no live process has claimed: the
// runner calls it after its state changes commit.
func (h *Hooks) DeliverRun(ctx context.Context, run string) ([]HookResult, error) {
	return h.deliver(ctx, run, nil)
}

// DeliverOrphans delivers pending deliveries of any run whose owner is not a live process
// (other than this one): what a crash left undelivered. Runs that a live process owns deliver
// their own.
func (h *Hooks) DeliverOrphans(ctx context.Context) ([]HookResult, error) {
	h.defaults()
	owners := map[string]bool{} // run → owned by a live process other than this one
	return h.deliver(ctx, "", func(tx *store.Tx, d store.HookDelivery) (bool, error) {
		busy, seen := owners[d.RunID]
		if !seen {
			run, err := tx.RunHeader(d.RunID)
			if err != nil {
				return false, err
			}
			// A live owner delivers its run's hooks itself, finished or not (a runner delivers
			// the last ones after it records the run's end).
			busy = run.Owner != nil && *run.Owner != h.Self && h.Alive(*run.Owner)
			owners[d.RunID] = busy
		}
		return !busy, nil
	})
}

func (h *Hooks) deliver(ctx context.Context, run string, take func(*store.Tx, store.HookDelivery) (bool, error)) ([]HookResult, error) {
	h.defaults()
	var results []HookResult
	for {
		d, dir, err := h.claimNext(ctx, run, take)
		if err != nil || d == nil {
			return results, err
		}
		r := h.run(ctx, *d, dir)
		results = append(results, r)
		if h.Report != nil {
			h.Report(r)
		}
		if ctx.Err() != nil {
			return results, nil
		}
	}
}

// claimNext claims the oldest pending delivery nobody else is delivering, or returns nil. dir is
// its run's working tree, where the hook runs (a hook may be ./scripts/page-me.sh).
func (h *Hooks) claimNext(ctx context.Context, run string, take func(*store.Tx, store.HookDelivery) (bool, error)) (claimed *store.HookDelivery, dir string, err error) {
	// Most calls find nothing: a read says so without taking the database's write lock.
	var pending bool
	if err := h.DB.View(context.WithoutCancel(ctx), func(tx *store.Tx) (err error) {
		pending, err = tx.HasPendingHooks(run)
		return err
	}); err != nil || !pending {
		return nil, "", err
	}
	err = h.DB.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		claimed = nil
		pending, err := tx.PendingHookDeliveries(run)
		if err != nil {
			return err
		}
		now := tx.Now()
		for _, d := range pending {
			if d.Claim != nil && *d.Claim != h.Self && d.ClaimedUntil != nil && now.Before(*d.ClaimedUntil) && h.Alive(*d.Claim) {
				continue // another live process is delivering it
			}
			if d.Claim != nil && *d.Claim == h.Self && d.ClaimedUntil != nil {
				continue // this process claimed it and is delivering it (another goroutine)
			}
			if take != nil {
				ok, err := take(tx, d)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
			}
			run, err := tx.RunHeader(d.RunID)
			if err != nil {
				return err
			}
			if err := tx.ClaimHookDelivery(&d, h.Self, now.Add(h.Timeout+claimMargin)); err != nil {
				return err
			}
			claimed, dir = &d, run.Worktree
			return nil
		}
		return nil
	})
	return claimed, dir, err
}

// run delivers one claimed delivery and records the outcome.
func (h *Hooks) run(ctx context.Context, d store.HookDelivery, dir string) HookResult {
	crashPoint("before-hook")
	var (
		argv   []string
		output string
		exit   *int
		err    error
	)
	argv, err = h.Expand(d)
	if err == nil {
		output, exit, err = h.exec(ctx, argv, dir, d)
	}
	crashPoint("after-hook")
	state, errText := store.HookDelivered, ""
	if err != nil {
		state, errText = store.HookFailed, err.Error()
	}
	rerr := h.DB.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		return tx.FinishHookDelivery(&d, h.Self, state, exit, output, errText)
	})
	if errors.Is(rerr, store.ErrClaimed) {
		// our claim expired and another process took the delivery over: it records the outcome
		rerr = nil
	}
	if err == nil {
		err = rerr
	}
	return HookResult{Delivery: d, Err: err}
}

func (h *Hooks) exec(ctx context.Context, argv []string, dir string, d store.HookDelivery) (string, *int, error) {
	attempt := ""
	if d.Attempt != 0 {
		attempt = strconv.Itoa(d.Attempt)
	}
	env := append(slices.Clone(h.Environ), "MULLIGAN_DELIVERY_ID="+d.DeliveryID, "MULLIGAN_EVENT="+d.Hook,
		"MULLIGAN_RUN="+d.RunID, "MULLIGAN_TASK="+d.TaskID, "MULLIGAN_ATTEMPT="+attempt,
		"MULLIGAN_STATE="+d.To, "MULLIGAN_REASON="+d.Reason)
	return runBounded(ctx, argv, dir, env, h.Timeout)
}

// Background delivers one run's hooks from a goroutine, so a slow hook never holds the runner:
// Wake after each commit that may have fired hooks; Close delivers what is left and waits.
type Background struct {
	wake   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	closed bool
}

// Start starts delivering run's hooks in the background (and at once, what is pending).
func (h *Hooks) Start(ctx context.Context, run string) *Background {
	h.defaults()
	b := &Background{wake: make(chan struct{}, 1), done: make(chan struct{})}
	ctx = context.WithoutCancel(ctx) // a cancelled run still delivers its on_cancelled
	go func() {
		defer close(b.done)
		for range b.wake {
			h.DeliverRun(ctx, run)
		}
		h.DeliverRun(ctx, run)
	}()
	b.Wake()
	return b
}

// Wake makes the goroutine look for pending deliveries (it never blocks; after Close it does
// nothing).
func (b *Background) Wake() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Close delivers the run's last pending hooks and waits for every delivery to end (each is
// bounded by the hook timeout).
func (b *Background) Close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.wake)
	}
	b.mu.Unlock()
	<-b.done
}
