package autopsy

import "fmt"

// providerRules read the provider's failures: a rate limit that outlasts the retries, errors
// that come and go, a CLI that gave up on its provider and exited quietly.
var providerRules = []Rule{
	{
		// The provider answered 429 to every attempt after the CLI's own retries (codex gives
		// up with "exceeded retry limit, last status: 429"): the account's rate limit, which
		// back-to-back retries only meet again.
		Name: "rate-limited", Category: Environment, Confidence: 0.81,
		Match: func(f *facts) bool {
			if len(f.failed) < 2 || f.lastClass() != cTransport {
				return false
			}
			for _, a := range f.failed {
				if a.Class == cTransport && a.Code != "rate_limit" {
					return false
				}
			}
			return f.count(cTransport) >= 2
		},
		Why: func(f *facts) string {
			return fmt.Sprintf("the provider refused %d attempt(s) with 429 Too Many Requests after the CLI's own retries: the account's rate limit, not a blip (%s)", f.count(cTransport), f.last().Message)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "wait for the account's rate limit to recover (or raise it with the provider, or give the task a longer backoff), then run the task again",
				Commands: []string{"sleep 900 && " + f.retry()}}
		},
	},
	{
		// The provider failed (overloaded, 5xx, a reset connection) in ways that changed from
		// attempt to attempt, or while other tasks got through: a flake, not the machine.
		Name: "provider-flake", Category: AgentFlake, Confidence: 0.8,
		Match: func(f *facts) bool {
			return f.allClasses(cTransport) || (f.lastClass() == cTransport && f.count(cTransport)*2 > len(f.failed))
		},
		Why: func(f *facts) string {
			why := fmt.Sprintf("the provider failed %d time(s) (%s)", f.count(cTransport), f.lastOf(cTransport).Message)
			if t := f.siblingRecovered(); t != "" {
				why += fmt.Sprintf("; task %s failed the same way and recovered on retry, so the network works", t)
			}
			return why
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "the provider's errors are transient: run the task again (later, if its status page reports an incident)", Commands: []string{f.retry()}}
		},
	},
	{
		// The agent's CLI gave up on its provider (overloaded, a 5xx) and exited without a
		// change: a transient failure the runner saw only as an empty attempt.
		Name: "provider-failed-quietly", Category: AgentFlake, Confidence: 0.8,
		Match: func(f *facts) bool { _, _, ok := f.providerDown(); return ok },
		Why: func(f *facts) string {
			a, l, _ := f.providerDown()
			return fmt.Sprintf("agent %s's provider failed in every attempt and the agent changed nothing (its CLI gave up and exited): %s", a.Agent, l)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "the provider's errors are transient: run the task again (later, if its status page reports an incident)", Commands: []string{f.retry()}}
		},
		Lines: func(f *facts) []string { _, l, _ := f.providerDown(); return []string{l} },
	},
}
