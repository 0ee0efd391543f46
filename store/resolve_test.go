package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

func TestResolveRun(t *testing.T) {
	db, clock := openDB(t)
	view(t, db, func(tx *store.Tx) error {
		if _, err := tx.ResolveRun("last", ""); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("last of an empty database: %v, want ErrNotFound", err)
		}
		return nil
	})
	for _, r := range []struct{ id, wt string }{
		{"k3f9aa01", "/w"}, {"k3f9ab02", "/w"}, {"m000zz03", "/other"}, {"k3f9", "/w"},
	} {
		clock.Advance(time.Second)
		run := newRun(r.id)
		run.Worktree = r.wt
		insertRun(t, db, run)
	}
	view(t, db, func(tx *store.Tx) error {
		for _, c := range []struct {
			ref, worktree, want string
			err                 error
		}{
			{"", "", "k3f9", nil},
			{"last", "", "k3f9", nil},
			{"last", "/other", "m000zz03", nil},
			{"last", "/nowhere", "", store.ErrNotFound},
			{"k3f9aa01", "", "k3f9aa01", nil},
			{"k3f9a", "", "", store.ErrAmbiguous},
			{"k3f9aa", "", "k3f9aa01", nil},
			{"m000", "/w", "m000zz03", nil}, // a prefix is not limited to the worktree
			{"k3f9", "", "k3f9", nil},       // an exact id wins over being a prefix of others
			{"k3f", "", "", store.ErrShortPrefix},
			{"zzzz", "", "", store.ErrNotFound},
			{"K3F9", "", "", store.ErrNotFound},
			{"k3f9%", "", "", store.ErrNotFound},
		} {
			got, err := tx.ResolveRun(c.ref, c.worktree)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Errorf("ResolveRun(%q, %q) = %q, %v; want error %v", c.ref, c.worktree, got, err, c.err)
				}
				continue
			}
			if err != nil || got != c.want {
				t.Errorf("ResolveRun(%q, %q) = %q, %v; want %q", c.ref, c.worktree, got, err, c.want)
			}
		}
		_, err := tx.ResolveRun("k3f9a", "")
		var amb *store.AmbiguousError
		if !errors.As(err, &amb) || len(amb.Candidates) != 2 || amb.Candidates[0] != "k3f9aa01" ||
			amb.Candidates[1] != "k3f9ab02" || amb.More {
			t.Errorf("ambiguous error = %#v", err)
		}
		if want := `run prefix "k3f9a" is ambiguous: it matches k3f9aa01, k3f9ab02`; err.Error() != want {
			t.Errorf("message %q, want %q", err, want)
		}
		return nil
	})
}

func TestResolveRunManyCandidates(t *testing.T) {
	db, _ := openDB(t)
	update(t, db, func(tx *store.Tx) error {
		for i := range 12 {
			if err := tx.InsertRun(&store.Run{ID: "abcd" + string(rune('a'+i)), Worktree: "/w"}); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, db, func(tx *store.Tx) error {
		_, err := tx.ResolveRun("abcd", "")
		var amb *store.AmbiguousError
		if !errors.As(err, &amb) || len(amb.Candidates) != 10 || !amb.More {
			t.Errorf("ambiguous among 12: %v", err)
		}
		return nil
	})
}
