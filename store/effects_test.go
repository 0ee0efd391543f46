package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

func TestEffectLedger(t *testing.T) {
	db, clock := openDB(t)
	insertRun(t, db, newRun("run1"))
	update(t, db, func(tx *store.Tx) error {
		for _, task := range []string{"a", "a", "b"} {
			if err := tx.InsertAttempt(&store.Attempt{RunID: "run1", TaskID: task, Agent: "fast"}); err != nil {
				return err
			}
		}
		return nil
	})
	var push, mail store.Effect
	update(t, db, func(tx *store.Tx) error {
		push = store.Effect{RunID: "run1", TaskID: "a", Attempt: 2, Name: "push",
			Compensate: []string{"git", "push", "origin", "--delete", "fix x"}, Data: []byte(`{"branch":"fix"}`)}
		return tx.RecordEffect(&push)
	})
	clock.Advance(time.Second)
	update(t, db, func(tx *store.Tx) error {
		mail = store.Effect{RunID: "run1", TaskID: "b", Attempt: 1, Name: "mail", Idempotent: true}
		return tx.RecordEffect(&mail)
	})
	if push.DeliveryID != "run1-1" || mail.DeliveryID != "run1-2" || push.State != store.EffectRecorded {
		t.Errorf("recorded: %+v %+v", push, mail)
	}
	err := db.Update(ctx, func(tx *store.Tx) error {
		return tx.RecordEffect(&store.Effect{RunID: "run1", TaskID: "a", Attempt: 9, Name: "x"})
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("effect of a missing attempt: %v, want ErrNotFound", err)
	}
	err = db.Update(ctx, func(tx *store.Tx) error {
		return tx.RecordEffect(&store.Effect{RunID: "run1", TaskID: "a", Attempt: 1, Name: "x", Data: []byte("{")})
	})
	if err == nil {
		t.Error("invalid data JSON accepted")
	}

	clock.Advance(time.Second)
	update(t, db, func(tx *store.Tx) error {
		return tx.ResolveEffect(push.ID, store.EffectCompensationFailed, "remote: denied\n")
	})
	if err := db.Update(ctx, func(tx *store.Tx) error { return tx.ResolveEffect(99, store.EffectCompensated, "") }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("resolve a missing effect: %v", err)
	}
	if err := db.Update(ctx, func(tx *store.Tx) error { return tx.ResolveEffect(push.ID, "gone", "") }); err == nil {
		t.Error("unknown state accepted")
	}

	var all, ofA []store.Effect
	view(t, db, func(tx *store.Tx) (err error) {
		if all, err = tx.Effects("run1"); err != nil {
			return err
		}
		ofA, err = tx.TaskEffects("run1", "a")
		return err
	})
	if len(all) != 2 || len(ofA) != 1 {
		t.Fatalf("effects: %d of the run, %d of a", len(all), len(ofA))
	}
	got := all[0]
	if got.Name != "push" || got.TaskID != "a" || got.Attempt != 2 || got.Idempotent ||
		!slices.Equal(got.Compensate, push.Compensate) || string(got.Data) != `{"branch":"fix"}` ||
		got.State != store.EffectCompensationFailed || got.Output != "remote: denied\n" ||
		got.DeliveryID != "run1-1" || !got.RecordedAt.Equal(t0) || got.ResolvedAt == nil ||
		!got.ResolvedAt.Equal(t0.Add(2*time.Second)) {
		t.Errorf("push read back: %+v", got)
	}
	if m := all[1]; !m.Idempotent || m.Compensate == nil || len(m.Compensate) != 0 || m.Data != nil || m.ResolvedAt != nil {
		t.Errorf("mail read back: %+v", m)
	}

	// A compensation under way is owed, not resolved: no resolved_at, and JSON keeps SPEC's
	// states (recorded).
	update(t, db, func(tx *store.Tx) error { return tx.ResolveEffect(mail.ID, store.EffectCompensating, "") })
	var m *store.Effect
	view(t, db, func(tx *store.Tx) (err error) { m, err = tx.Effect(mail.ID); return err })
	if m.State != store.EffectCompensating || m.ResolvedAt != nil {
		t.Errorf("compensating: %+v", m)
	}
	if b, err := json.Marshal(m); err != nil || !strings.Contains(string(b), `"state":"recorded"`) {
		t.Errorf("compensating as JSON: %s, %v", b, err)
	}
}

// The implicit effect of an attempt (side_effects: non_idempotent) stands until the attempt
// records its own: the finer account takes over its row (id and delivery id). Once an operator
// decided about it (unresolved by --force), nothing replaces or drops it any more.
func TestImplicitEffect(t *testing.T) {
	db, _ := openDB(t)
	insertRun(t, db, newRun("run1"))
	update(t, db, func(tx *store.Tx) error {
		for range 3 {
			if err := tx.InsertAttempt(&store.Attempt{RunID: "run1", TaskID: "a", Agent: "fast"}); err != nil {
				return err
			}
		}
		for n := 1; n <= 3; n++ {
			e := store.Effect{RunID: "run1", TaskID: "a", Attempt: n, Implicit: true, Name: "ignored", Compensate: []string{"x"}}
			if err := tx.RecordEffect(&e); err != nil {
				return err
			}
			if e.Name != store.ImplicitEffect || e.Compensate != nil || e.Idempotent {
				t.Errorf("implicit effect recorded as %+v", e)
			}
		}
		return tx.ResolveEffect(3, store.EffectUnresolved, "")
	})
	update(t, db, func(tx *store.Tx) error {
		if err := tx.RecordEffect(&store.Effect{RunID: "run1", TaskID: "a", Attempt: 1, Name: "push"}); err != nil {
			return err
		}
		if err := tx.RecordEffect(&store.Effect{RunID: "run1", TaskID: "a", Attempt: 3, Name: "mail"}); err != nil {
			return err
		}
		return tx.DropImplicitEffect("run1", "a", 2)
	})
	var es []store.Effect
	view(t, db, func(tx *store.Tx) (err error) { es, err = tx.Effects("run1"); return err })
	var got []string
	for _, e := range es {
		got = append(got, fmt.Sprintf("%d:%s@%d:%v", e.ID, e.Name, e.Attempt, e.Implicit))
	}
	if want := []string{"1:push@1:false", "3:attempt@3:true", "4:mail@3:false"}; !slices.Equal(got, want) {
		t.Errorf("effects = %v, want %v", got, want)
	}
	if es[0].DeliveryID != "run1-1" || len(es[0].Compensate) != 0 {
		t.Errorf("push took over the implicit effect as %+v", es[0])
	}
	if b, err := json.Marshal(es[1]); err != nil || !strings.Contains(string(b), `"implicit":true`) || !strings.Contains(string(b), `"compensate":null`) {
		t.Errorf("implicit effect as JSON: %s, %v", b, err)
	}
}
