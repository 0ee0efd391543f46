package taskfile

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// Class is a failure class of SPEC §4. Its string is part of the JSON contract.
type Class string

// The failure classes, in the order of the spec's table.
const (
	ClassTransport        Class = "transport"
	ClassAttemptTimeout   Class = "attempt_timeout"
	ClassHeartbeatTimeout Class = "heartbeat_timeout"
	ClassAgentExit        Class = "agent_exit"
	ClassQuota            Class = "quota"
	ClassAuth             Class = "auth"
	ClassAgentMissing     Class = "agent_missing"
	ClassPayloadDeclared  Class = "payload_declared"
	ClassSchemaInvalid    Class = "schema_invalid"
	ClassQualityRejection Class = "quality_rejection"
	ClassBudgetExhausted  Class = "budget_exhausted"
	ClassCancellation     Class = "cancellation"
	ClassRunnerDied       Class = "runner_died"
	ClassAuthoring        Class = "authoring"
	ClassInternal         Class = "internal"
)

// Classes lists every class in the spec's order.
var Classes = []Class{
	ClassTransport, ClassAttemptTimeout, ClassHeartbeatTimeout, ClassAgentExit, ClassQuota,
	ClassAuth, ClassAgentMissing, ClassPayloadDeclared, ClassSchemaInvalid, ClassQualityRejection,
	ClassBudgetExhausted, ClassCancellation, ClassRunnerDied, ClassAuthoring, ClassInternal,
}

// widenable are the only classes retry_on may add: the agent ran and finished, and only its
// result was judged. Widening anything else would retry what the spec says must not be
// (auth, a missing agent) or what has its own path (quota).
var widenable = []Class{ClassQualityRejection, ClassPayloadDeclared, ClassSchemaInvalid}

// userClassifiable are the classes a task's classify rules may assign. The others are
// facts only mulligan observes (a timeout it enforced, its own death, a cancel it sent).
var userClassifiable = []Class{
	ClassTransport, ClassAgentExit, ClassQuota, ClassAuth, ClassAgentMissing,
	ClassPayloadDeclared, ClassSchemaInvalid, ClassQualityRejection,
}

// retriedByDefault is the "retried by default" column. quota is absent because a quota
// wall is never retried as an attempt (it fails over or parks); runner_died is present
// because its attempt is run again, outside the retry budget. quality_rejection is present
// because a rejected result goes to repair with the verify's output in the next prompt
// (retry_on may still name it: that changes nothing).
var retriedByDefault = []Class{
	ClassTransport, ClassAttemptTimeout, ClassHeartbeatTimeout, ClassAgentExit, ClassRunnerDied,
	ClassQualityRejection,
}

// ParseClass reads a class name as written in a task file.
func ParseClass(s string) (Class, error) {
	c := Class(s)
	if slices.Contains(Classes, c) {
		return c, nil
	}
	return "", fmt.Errorf("unknown failure class %q", s)
}

// Eligible reports whether a failure of class c may be retried under a task's lists:
// non_retryable only removes classes, retry_on only adds quality_rejection,
// payload_declared and schema_invalid (other entries are ignored here; the loader refuses
// them). A class in both lists is not retried: the narrowing is the safer reading.
func Eligible(c Class, nonRetryable, retryOn []Class) bool {
	if slices.Contains(nonRetryable, c) {
		return false
	}
	if slices.Contains(retriedByDefault, c) {
		return true
	}
	return slices.Contains(widenable, c) && slices.Contains(retryOn, c)
}

// ClassifyRule is one user `classify` entry of a task.
type ClassifyRule struct {
	Pattern    string
	Re         *regexp.Regexp
	Class      Class
	RetryAfter time.Duration
}
