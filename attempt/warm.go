package attempt

import (
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// Warm retry (`retry_mode: resume`): a retry continues the previous attempt's conversation of
// the agent CLI instead of starting a new one, told that it continues and (unless carry_over)
// that its edits were reverted.

// resumeArgs turns a preset CLI's command into the one that continues session id; nil when the
// preset cannot. claude (`--resume ID`) and opencode (`run … --session ID`) were checked against
// the model API to re-send the earlier turns (as cache reads), to keep the session's id and to
// report the new turn's tokens; claude's total_cost_usd becomes the session's (warmCost takes
// the earlier attempts' share off). codex (`codex exec resume ID`) reported cumulative-looking
// input on a resumed turn and gemini resumes by index only: both stay cold.
func resumeArgs(preset string, argv []string, id string) []string {
	if id == "" || len(argv) == 0 {
		return nil
	}
	switch preset {
	case taskfile.PresetClaude:
		return append(append([]string{}, argv...), "--resume", id)
	case taskfile.PresetOpencode:
		return append(append([]string{}, argv...), "--session", id)
	}
	return nil
}

// warmSession is the session a retry continues: retry_mode resume, a previous failed attempt
// on the same agent that reported its session, and a preset that can resume. "" means cold.
func warmSession(def *taskfile.Task, agent *taskfile.Agent, prev *store.Attempt) string {
	if def.RetryMode != taskfile.RetryResume || prev == nil || agent == nil || prev.Agent != agent.Name || prev.AgentSession == "" {
		return ""
	}
	if resumeArgs(agent.Preset, []string{agent.Name}, prev.AgentSession) == nil {
		return ""
	}
	return prev.AgentSession
}

// warmCost is a resumed attempt's own cost: claude reports the whole session's, so the cost the
// earlier attempts of that session recorded is taken off. opencode prints the steps of the
// resumed run only, each with its own cost: nothing to take off.
func warmCost(usd *float64, preset, session string, history []store.Attempt) *float64 {
	if usd == nil || session == "" || preset != taskfile.PresetClaude {
		return usd
	}
	c := *usd
	for _, a := range history {
		if a.AgentSession == session && a.CostUSD != nil {
			c -= *a.CostUSD
		}
	}
	c = max(c, 0)
	return &c
}
