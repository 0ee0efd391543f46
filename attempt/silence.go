package attempt

import (
	"context"
	"sync"
	"time"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// Silence (SPEC §4 Policy): `silence: DURATION` raises a flag when an attempt prints nothing for
// that long — a task.silent event (which fires on_silent), the task's silent_at (shown by `show`,
// listed by `tasks --state attention`) and a note — and kills nothing: `heartbeat` is the one
// that ends an attempt. Output after the flag clears it; a later silence raises it again.

// silenceWatch watches one attempt's output.
type silenceWatch struct {
	mu      sync.Mutex
	last    time.Time
	flagged bool
	done    chan struct{}
	wg      sync.WaitGroup
	clear   func()
}

// output notes output (ProcSpec.OnOutput).
func (w *silenceWatch) output([]byte) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.last = time.Now()
	wasFlagged := w.flagged
	w.flagged = false
	w.mu.Unlock()
	if wasFlagged {
		w.clear()
	}
}

// stop ends the watch (the attempt ended); the attempt's record clears silent_at.
func (w *silenceWatch) stop() {
	if w == nil {
		return
	}
	close(w.done)
	w.wg.Wait()
}

// watchSilence starts the watch of attempt n of task when the task sets `silence`; nil otherwise
// (its methods are no-ops on nil).
func (r *runner) watchSilence(ctx context.Context, def *taskfile.Task, task string, n int) *silenceWatch {
	if def.Silence <= 0 {
		return nil
	}
	w := &silenceWatch{last: time.Now(), done: make(chan struct{})}
	w.clear = func() {
		_ = r.update(ctx, func(tx *store.Tx) error {
			t, err := tx.GetTask(r.run.ID, task)
			if err != nil {
				return err
			}
			t.SilentAt = nil
			return tx.UpdateTask(t)
		})
	}
	every := min(def.Silence/4, time.Second)
	if every <= 0 {
		every = time.Millisecond
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			w.mu.Lock()
			quiet := time.Since(w.last)
			raise := !w.flagged && quiet >= def.Silence
			if raise {
				w.flagged = true
			}
			w.mu.Unlock()
			if !raise {
				continue
			}
			now := r.env.Now().UTC()
			_ = r.update(ctx, func(tx *store.Tx) error {
				t, err := tx.GetTask(r.run.ID, task)
				if err != nil {
					return err
				}
				t.SilentAt = &now
				if err := tx.UpdateTask(t); err != nil {
					return err
				}
				return r.event(tx, task, n, store.EventTaskSilent, store.TaskSilent{
					SilenceMS: def.Silence.Milliseconds(), QuietMS: quiet.Milliseconds(),
				})
			})
			r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: task,
				Message: "no output for " + quiet.Round(time.Second).String() + " (silence " + def.Silence.String() + "): flagged, not stopped"})
		}
	}()
	return w
}
