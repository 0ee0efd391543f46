package attempt

import (
	"github.com/mulligan-dev/mulligan/store"
)

// ReasonNoProgress is the block reason of the no-progress rule (SPEC §4 Policy): max_identical_failures
// identical fingerprints (agentcli.Fingerprint) in a row hold the task blocked.
const ReasonNoProgress = "no-progress"

// identicalInARow counts the task's latest failures, newest first, that carry fingerprint fp,
// this one included: a success or another fingerprint ends the streak; failures without a
// fingerprint (transient classes) and superseded attempts are stepped over. Attempts from before
// the task last started (retry-task) do not count.
func identicalInARow(t *store.Task, fp string) int {
	if fp == "" {
		return 0
	}
	n := 1
	for i := len(t.Attempts) - 1; i >= 0; i-- {
		a := t.Attempts[i]
		if a.State == store.AttemptSuperseded || a.State == store.AttemptRunning {
			continue
		}
		if t.StartedAt != nil && a.StartedAt.Before(*t.StartedAt) {
			break
		}
		if a.State == store.AttemptSucceeded {
			break
		}
		if a.Fingerprint == "" {
			continue
		}
		if a.Fingerprint != fp {
			break
		}
		n++
	}
	return n
}
