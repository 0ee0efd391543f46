package attempt

import (
	"testing"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// An agent that failed before it did anything (not logged in, not installed, out of credit with
// nothing done, overloaded on its first request) has no session worth a resume command; one that
// hit its limit halfway has.
func TestFailedBeforeWork(t *testing.T) {
	ten := int64(10)
	for _, c := range []struct {
		name string
		at   attemptRun
		want bool
	}{
		{"succeeded", attemptRun{}, false},
		{"not logged in", attemptRun{failure: &agentcli.Failure{Class: taskfile.ClassAuth}}, true},
		{"not installed", attemptRun{failure: &agentcli.Failure{Class: taskfile.ClassAgentMissing}}, true},
		{"no credit, nothing done", attemptRun{failure: &agentcli.Failure{Class: taskfile.ClassQuota, Code: agentcli.CodeBilling}}, true},
		{"usage limit after writing", attemptRun{failure: &agentcli.Failure{Class: taskfile.ClassQuota}, usage: attemptUsage{out: &ten}}, false},
		{"usage limit after a change", attemptRun{failure: &agentcli.Failure{Class: taskfile.ClassQuota}, changed: []snapshot.Change{{Path: "a.go"}}}, false},
		{"overloaded on the first request", attemptRun{failure: &agentcli.Failure{Class: taskfile.ClassTransport, Code: "overloaded"}}, true},
		{"overloaded after writing", attemptRun{failure: &agentcli.Failure{Class: taskfile.ClassTransport}, usage: attemptUsage{out: &ten}}, false},
		{"verify rejected", attemptRun{failure: &agentcli.Failure{Class: taskfile.ClassQualityRejection}}, false},
	} {
		if got := failedBeforeWork(&c.at); got != c.want {
			t.Errorf("%s: failedBeforeWork = %v, want %v", c.name, got, c.want)
		}
	}
}
