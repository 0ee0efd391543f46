package cmd

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mulligan-dev/mulligan/attempt/plan"
	"github.com/mulligan-dev/mulligan/compensate"
	"github.com/mulligan-dev/mulligan/store"
)

// The printing of the operator's plans (attempt/plan: revert, retry-task, timetravel, stop) and
// the mapping of their refusals to exit codes.

func init() {
	errorMappers = append([]func(error) error{mapPlanError}, errorMappers...)
}

func mapPlanError(err error) error {
	var (
		uncomp   *plan.UncompensableError
		replay   *plan.ReplayError
		pruned   *plan.PrunedError
		noTree   *plan.NoTreeError
		noBase   *plan.NoBaseError
		wrongWT  *plan.WorktreeError
		compFail *plan.CompensationFailedError
		unapply  *plan.UnapplyConflictError
		back     *plan.TimetravelConflictError
	)
	switch {
	case errors.As(err, &uncomp):
		return withHint(ExitRefused, err, "undo them by hand, then pass --force (they are left unresolved); `mulligan effects` lists them")
	case errors.As(err, &replay):
		return withHint(ExitRefused, err, fmt.Sprintf("undo them (`mulligan compensate %s --unresolved` runs the compensations they have; the others by hand), or pass --force to replay anyway", replay.Run))
	case errors.As(err, &pruned):
		return withHint(ExitFailed, err, "its rows stay for `mulligan show`; gc --older-than sets how long runs are kept")
	case errors.As(err, &noTree) && noTree.Base:
		return withHint(ExitFailed, err)
	case errors.As(err, &noTree):
		return withHint(ExitFailed, err, fmt.Sprintf("`mulligan revert %s/%s@%d --pre` sets the tree it started from", noTree.Run, noTree.Task, noTree.N))
	case errors.As(err, &noBase):
		return withHint(ExitFailed, err, fmt.Sprintf("`mulligan retry-task %s %s` starts it from the current tree", noBase.Run, noBase.Task))
	case errors.As(err, &wrongWT):
		return withHint(ExitUsage, err, fmt.Sprintf("run it there: mulligan -C %s %s", wrongWT.Worktree, wrongWT.Command))
	case errors.As(err, &unapply):
		return withHint(ExitRefused, err, "put those paths back by hand (`mulligan diff` shows the attempt's change), or pass --no-restore to reset the run's record and leave the tree as it is")
	case errors.As(err, &back):
		e := withHint(ExitRefused, err, "nothing was changed; take each path as the attempt left it (your version goes to an undo ref), then timetravel again:")
		e.Hints = append(e.Hints, restoreHints(back.Ref, back.Paths, "")...)
		e.Hints = append(e.Hints, fmt.Sprintf("or keep the tree as it is and reset the run's record alone: mulligan timetravel %s/%s@%d --no-restore", back.Run, back.Task, back.N))
		return e
	case errors.As(err, &compFail):
		return withHint(ExitFailed, err, fmt.Sprintf("when `mulligan compensate %s` has undone it, run `mulligan %s` again", compFail.Run, compFail.Command))
	}
	return nil
}

// compensationList prints each compensation's outcome on stderr and returns them for the JSON;
// failed is set when one failed (the command then exits 1 after printing its result).
func compensationList(w io.Writer, results []compensate.Result) (list []compensationJSON, failed bool) {
	list = []compensationJSON{}
	run := ""
	for _, r := range results {
		if r.State == "" {
			continue
		}
		run = r.Effect.RunID
		j := compensationJSON{ID: r.Effect.ID, Task: r.Effect.TaskID, Attempt: r.Effect.Attempt, Name: r.Effect.Name,
			State: r.State, DeliveryID: r.Effect.DeliveryID, Output: r.Output}
		switch r.State {
		case store.EffectCompensated:
			fmt.Fprintf(w, "compensated %s\n", describeEffect(r.Effect, ", delivery id "+r.Effect.DeliveryID))
		case store.EffectCompensationFailed:
			failed = true
			j.Error = r.Err.Error()
			fmt.Fprintf(w, "mulligan: error: compensation of %s failed: %v\n", describeEffect(r.Effect, ""), r.Err)
			if out := strings.TrimSpace(r.Output); out != "" {
				fmt.Fprintf(w, "%s\n", indentLines(out))
			}
		case store.EffectUnresolved:
			fmt.Fprintf(w, "left %s unresolved %s\n", effectName(r.Effect), effectRef(r.Effect, ""))
		}
		list = append(list, j)
	}
	if failed {
		fmt.Fprintf(w, "hint: fix the cause, then `mulligan compensate %s` runs the failed ones again (same delivery ids)\n", run)
	}
	return list, failed
}

// crossedJSON is one element of "crossed" in a plan's JSON: an effect the decision goes back
// across and what it will do with it.
type crossedJSON struct {
	ID         int64    `json:"id"`
	Task       string   `json:"task"`
	Attempt    int      `json:"attempt"`
	Name       string   `json:"name"`
	Idempotent bool     `json:"idempotent"`
	Compensate []string `json:"compensate"`
	State      string   `json:"state"`
	DeliveryID string   `json:"delivery_id"`
	Action     string   `json:"action"`
}

// printPlan prints what a plan would do (--dry-run): on stdout, as text or JSON; nothing changed.
func printPlan(g *globals, p *plan.Plan) error {
	crossed := make([]crossedJSON, 0, len(p.Crossed))
	for _, e := range p.Crossed {
		crossed = append(crossed, crossedJSON{ID: e.ID, Task: e.TaskID, Attempt: e.Attempt, Name: e.Name, Idempotent: e.Idempotent,
			Compensate: nonNil(e.Compensate), State: e.State, DeliveryID: e.DeliveryID, Action: p.Action(e)})
	}
	if g.json() {
		return writeJSON(g.io.Out, planJSON(p, crossed))
	}
	w := g.io.Out
	for _, ch := range p.Changes {
		fmt.Fprintf(w, "%s %s\n", actionLetter(ch.Action), ch.Path)
	}
	printSpared(w, p.Spared)
	if p.Git != nil {
		printGitRevert(w, p.Git, true)
	}
	switch {
	case !p.Tree.IsZero():
		differ := fmt.Sprintf("%d paths differ", len(p.Changes))
		if len(p.Changes) == 1 {
			differ = "1 path differs"
		}
		fmt.Fprintf(w, "would restore tree %s: %s, with an undo point first\n", p.Tree, differ)
	case p.KeepTree:
		fmt.Fprintf(w, "would keep the working tree as it is, under an undo point\n")
	default:
		fmt.Fprintf(w, "would leave the working tree as it is\n")
	}
	for _, e := range p.Crossed {
		switch p.Action(e) {
		case plan.ActionCompensate:
			fmt.Fprintf(w, "would compensate %s\n", describeEffect(e, ", delivery id "+e.DeliveryID))
		case plan.ActionUnresolved:
			extra := ""
			if len(e.Compensate) == 0 {
				extra = ", no compensation"
			}
			fmt.Fprintf(w, "would leave %s unresolved %s\n", effectName(e), effectRef(e, extra))
		}
	}
	printPlanState(w, p)
	fmt.Fprintf(w, "`mulligan %s` would do this (dry run, nothing changed)\n", p.Command)
	return nil
}

// printPlanState prints the state change of a plan: timetravel's, retry-task's or stop's.
func printPlanState(w io.Writer, p *plan.Plan) {
	if p.Reload != nil {
		printReload(w, "retry-task (dry run)", p.Reload, p.ReloadPlan)
	}
	if tt := p.Timetravel; tt != nil {
		for _, s := range tt.Superseded {
			fmt.Fprintf(w, "would supersede %s\n", s)
		}
		for _, s := range tt.Restored {
			fmt.Fprintf(w, "would bring back superseded %s\n", s)
		}
		for _, t := range tt.Tasks {
			fmt.Fprintf(w, "task %s: %s → %s\n", t.Task, t.From, t.To)
		}
		fmt.Fprintf(w, "run %s would be paused as of just after %s\n", p.Run, p.Target)
	}
	if p.Stop != "" {
		fmt.Fprintf(w, "task %s would fail (operator-stop); its dependents would be skipped\n", p.Stop)
	}
	if a := p.Approved; a != nil {
		fmt.Fprintf(w, "%s@%d would be accepted: task %s would succeed (approved)\n", a.TaskID, a.N, a.TaskID)
	}
	if len(p.Replayed) > 0 {
		fmt.Fprintf(w, "would run %s again\n", joinList(p.Replayed))
	}
}

func planJSON(p *plan.Plan, crossed []crossedJSON) map[string]any {
	changed := changesJSON(p.Changes)
	spared := make([]string, 0, len(p.Spared))
	for _, ch := range p.Spared {
		spared = append(spared, ch.Path)
	}
	var tree, from any
	if !p.Tree.IsZero() {
		tree, from = p.Tree.String(), p.From.String()
	}
	out := map[string]any{
		"dry_run": true, "command": "mulligan " + p.Command, "run": p.Run, "tree": tree, "from": from,
		"keep_tree": p.KeepTree, "changed": changed, "kept_ignored": spared, "submodules": []any{},
		"undo_ref": nil, "compensated": []compensationJSON{}, "crossed": crossed,
		"replayed": nonNil(p.Replayed), "stop": nullable(p.Stop),
	}
	if a := p.Approved; a != nil {
		out["approve"] = fmt.Sprintf("%s@%d", a.TaskID, a.N)
	}
	if tt := p.Timetravel; tt != nil {
		out["superseded"], out["unsuperseded"], out["tasks"] = nonNil(tt.Superseded), nonNil(tt.Restored), nonNil(tt.Tasks)
		out["state"] = "paused"
	}
	if p.Git != nil {
		out["git_restored"], out["git_left"] = p.Git.RestoredList(), p.Git.LeftList()
	}
	if p.Reload != nil {
		out["reload"] = map[string]any{"file": p.Reload.Path, "added": nonNil(p.ReloadPlan.Added),
			"removed": nonNil(p.ReloadPlan.Removed), "changed": nonNil(p.ReloadPlan.Changed)}
	}
	return out
}

// restoreHints names, for the first five conflicting paths, the restore that takes the version
// ref holds of it; more says how to list the rest ("" for nothing).
func restoreHints(ref string, paths []string, more string) []string {
	var hints []string
	for i, p := range paths {
		if i == 5 {
			hints = append(hints, fmt.Sprintf("  … and %d more%s", len(paths)-5, more))
			break
		}
		hints = append(hints, fmt.Sprintf("  mulligan restore %s -- %s", ref, p))
	}
	return hints
}
