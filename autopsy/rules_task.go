package autopsy

import (
	"fmt"

	"github.com/mulligan-dev/mulligan/agentcli"
)

// budgetBelowAttemptRule: the spend limit was spent by the first attempt alone. However the
// attempt went, no second one can run under that limit: the setting, not the agent, stopped it.
var budgetBelowAttemptRule = Rule{
	Name: "budget-below-one-attempt", Category: WorkflowBug, Confidence: 0.55,
	Match: func(f *facts) bool {
		a := f.last()
		return a.Class == cBudget && (a.Code == agentcli.CodeMaxCost || a.Code == agentcli.CodeRunMaxCost) && len(f.failed) == 1 && a.N <= 1
	},
	Why: func(f *facts) string {
		return "one attempt spent the whole limit, so no retry could run: " + f.last().Message
	},
	Suggest: func(f *facts) Suggestion {
		knob := "`max_cost_usd` of task " + f.task.ID + " in " + f.fileName()
		if f.last().Code == agentcli.CodeRunMaxCost {
			knob = "the run's --max-cost"
		}
		return Suggestion{Text: fmt.Sprintf("raise %s above what one attempt costs (this one: the spend in the message) times the attempts you allow, then run the task again", knob),
			Commands: []string{f.fixed()}}
	},
}
