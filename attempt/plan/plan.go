// Package plan holds the operator's decisions that change the working tree, the world and the
// run's recorded state at once — revert, retry-task, timetravel, stop, approve and apply — as
// plans: PlanRevert, PlanRetry, PlanTimetravel, PlanStop, PlanApprove and PlanApply read the run,
// check everything that could refuse the decision and return what it will change (the tree it
// restores and the paths that differ, the side effects it crosses and what becomes of each, the
// tasks it replays, the state change), or the refusal as a typed error; Plan.Execute then does
// it, in one order for all of them. A dry run is the plan, printed. Nothing here prints: package
// cmd prints plans and results and maps the refusals to exit codes (SPEC §8). The state changes
// themselves (attempt.Timetravel, attempt.ResetTasks, attempt.StopTask, the revert audit,
// attempt.Apply's record) stay in package attempt: a plan calls them; it never writes the
// store's rows by hand.
//
// The order, and why (think of a SIGKILL between any two steps):
//
//  1. Check (the plan): nothing changes; a refusal leaves no trace.
//  2. Compensate the side effects crossed, newest first (compensate.Compensate: all of them
//     marked compensating in one transaction first, each outcome recorded as it happens). This
//     comes before the tree changes because a compensation is the saga's undo of something a
//     later attempt did: it runs in the world that attempt left, where its command was recorded
//     (a script the attempt wrote is still there), and if it fails nothing else has moved yet —
//     a plan that would redo the effect at once (retry-task) stops here. Killed here: the tree
//     and the run are as they were, the interrupted effects are owed (`mulligan compensate`
//     delivers them with their delivery ids), and running the same command again completes it.
//  3. Change the tree: Restore takes its undo point (refs/mulligan/undo/<id>) of the tree as it
//     is at that moment — after the compensations, so whatever they or the user left on disk is
//     in it — and only then writes; retry-task from the current tree takes the undo point alone.
//     Going back to where an attempt started (revert --pre or --base, retry-task --from-base)
//     then puts HEAD, refs and the index back too, by compare-and-swap (attempt.RevertGit).
//     Killed here: the undo ref holds the tree replaced, the run's state is unchanged, and the
//     same command again finds the tree already in place and goes on to the record.
//  4. Record the state change in the database, naming the undo ref (timetravel's paused state,
//     retry-task's reset, stop's failed task, revert's audit event). This is the commit point:
//     `resume` and `supervise` act on the recorded state, so the state never claims a tree or a
//     compensation that did not happen. Only then does cmd continue the run (retry-task, stop,
//     timetravel --resume).
package plan

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/compensate"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// Env is what plans read and change: the repository and its history.
type Env struct {
	DB   *store.DB
	Repo *snapshot.Repo
}

// Plan is one operator's decision, computed: what Execute will change. Its fields are for
// printing; only Execute acts.
type Plan struct {
	// Command is the decision as a command line after `mulligan`: "revert k3f9/a@2 --pre".
	Command string
	Run     string
	// Target is the point the decision goes to, for messages: "k3f9/a@2", "k3f9 --base".
	Target string

	// Tree is the tree the working tree is set to (zero: the tree is left as it is). Changes are
	// the paths that differ now (what Restore would write, delete or re-mode), Spared the
	// differences it leaves alone because the file is ignored (SPEC §2).
	Tree    snapshot.Hash
	From    snapshot.Hash // the working tree now
	Changes []snapshot.Change
	Spared  []snapshot.Change
	// KeepTree: the tree is left as it is but kept under an undo point first (retry-task from
	// the current tree: the run will change it).
	KeepTree bool

	// Crossed are the side effects the decision goes back across, newest first; Action says what
	// Execute does with each.
	Crossed      []store.Effect
	NoCompensate bool
	// StopOnFailure stops Execute after a failed compensation, before the tree or the run
	// changes: the decision would do the effect again at once (retry-task replays it).
	StopOnFailure bool

	// Replayed are the tasks that run again after the decision (retry-task, timetravel --resume).
	Replayed []string
	// Timetravel is what timetravel's state change will do (computed in a transaction rolled
	// back); nil for the other decisions.
	Timetravel *attempt.TimetravelResult
	// Reload is retry-task --reload's edited task file and what it changes.
	Reload     *taskfile.File
	ReloadPlan *attempt.ReloadPlan
	// Stop names the task stop fails (operator-stop).
	Stop string
	// Approved is the attempt approve accepts.
	Approved *store.Attempt
	// Apply is what `mulligan apply` would do now: the merge, what it changes, what refuses it.
	// Recovered says what finishing the applies a crash interrupted did first.
	Apply     *attempt.ApplyPlan
	Recovered []string
	// Git is what going back to an attempt's pre puts back of HEAD, refs, the stash and the
	// index, and what it leaves (SPEC §2.1), as planned; nil when the decision does not go back
	// to a pre.
	Git *attempt.GitRevert

	env      Env
	undoWhat string // the command the undo point names
	// SubmoduleRef names the snapshot of the submodules' working trees (in their own
	// repositories) that goes with the tree: RestoreSubmodules after the tree ("": none).
	SubmoduleRef string
	// apply is the tree step of `mulligan apply` (attempt.Apply: merge, intent, write, record).
	apply func(ctx context.Context, res *Result) error
	// git puts the git state back after the tree (step 3), or says what it would (dry).
	git func(ctx context.Context, dry bool) (*attempt.GitRevert, error)
	// record is step 4; complete is false when the tree changed only in part (revert audits it).
	record func(ctx context.Context, res *Result, complete bool) error
	// auditPartial records (complete false) even when the restore stopped half-way.
	auditPartial bool
}

// Effect actions: what Execute does with a crossed effect.
const (
	ActionCompensate = "compensate"
	ActionUnresolved = "leave-unresolved"
	ActionNone       = "none" // idempotent with no compensation: nothing to undo or resolve
)

// Action says what Execute does with crossed effect e (compensate.Compensate's rules).
func (p *Plan) Action(e store.Effect) string {
	switch {
	case len(e.Compensate) == 0 && e.Idempotent:
		return ActionNone
	case p.NoCompensate || len(e.Compensate) == 0:
		return ActionUnresolved
	}
	return ActionCompensate
}

// Result is what Execute did.
type Result struct {
	// Compensations are the outcomes of the crossed effects Execute resolved (compensated,
	// compensation_failed or unresolved), newest effect first.
	Compensations []compensate.Result
	// CompensationFailed is set when one failed: the command exits 1 (SPEC §5).
	CompensationFailed bool
	Restore            *snapshot.RestoreResult
	UndoRef            string
	Timetravel         *attempt.TimetravelResult
	Applied            *attempt.ApplyResult
	Reset              []string // the tasks retry-task reset to pending
	Git                *attempt.GitRevert
	// Submodules are the submodules whose working tree was set back as SubmoduleRef kept it.
	Submodules []snapshot.SubmoduleResult
}

// Steps of Execute, named in a StepError.
const (
	StepCompensate = "compensate"
	StepTree       = "tree"
	StepGit        = "git"
	StepRecord     = "record"
)

// StepError is a failure of one step of Execute after the earlier ones were done.
type StepError struct {
	Step string
	Err  error
}

func (e *StepError) Error() string { return e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// Execute carries the plan out in the package's one order: compensate, change the tree (undo
// point first), record. See the package comment for why.
func (p *Plan) Execute(ctx context.Context) (*Result, error) {
	res := &Result{}
	if err := p.compensate(ctx, res); err != nil {
		return res, err
	}
	if err := p.changeTree(ctx, res); err != nil {
		if p.auditPartial && res.Restore != nil && res.Restore.Undo != nil {
			// Audited even when the restore stopped half-way: the tree changed.
			p.record(context.WithoutCancel(ctx), res, false)
		}
		return res, &StepError{Step: StepTree, Err: err}
	}
	crashPoint("plan-after-tree")
	// The submodules' working trees go with the tree (the superproject's holds only their commit).
	if p.SubmoduleRef != "" {
		res.Submodules = p.env.Repo.RestoreSubmodules(ctx, p.SubmoduleRef)
	}
	// HEAD, refs and the index go back with the tree (by compare-and-swap); a failure there is
	// reported after the record: the tree did change.
	var gitErr error
	if p.git != nil {
		g, err := p.git(ctx, false)
		res.Git = g
		if err != nil {
			gitErr = &StepError{Step: StepGit, Err: fmt.Errorf("the tree is restored, but putting back HEAD, refs and the index failed: %w", err)}
		}
	}
	if p.record != nil {
		if err := p.record(ctx, res, true); err != nil {
			return res, &StepError{Step: StepRecord, Err: err}
		}
	}
	if gitErr != nil {
		return res, gitErr
	}
	return res, nil
}

// gitBack makes the plan put back the git state attempt task@n of run started from (task "":
// the run's first attempt) after the tree, and says now what it would do.
func (p *Plan) gitBack(ctx context.Context, run *store.Run, task string, n int) error {
	p.git = func(ctx context.Context, dry bool) (*attempt.GitRevert, error) {
		return attempt.RevertGit(ctx, p.env.Repo, p.env.DB, run, task, n, dry, "mulligan: "+p.Command)
	}
	var err error
	p.Git, err = p.git(ctx, true)
	return err
}

func (p *Plan) compensate(ctx context.Context, res *Result) error {
	if len(p.Crossed) == 0 {
		return nil
	}
	results, err := compensate.Compensate(ctx, p.env.DB, p.env.Repo.Root(), p.Crossed, p.NoCompensate)
	for _, r := range results {
		if r.State == "" {
			continue
		}
		res.Compensations = append(res.Compensations, r)
		if r.State == store.EffectCompensationFailed {
			res.CompensationFailed = true
		}
	}
	if err != nil {
		return &StepError{Step: StepCompensate, Err: err}
	}
	if res.CompensationFailed && p.StopOnFailure {
		return &CompensationFailedError{Command: p.Command, Run: p.Run}
	}
	return nil
}

func (p *Plan) changeTree(ctx context.Context, res *Result) error {
	if p.apply != nil {
		return p.apply(ctx, res)
	}
	ref, msg := undoPoint(p.undoWhat)
	switch {
	case !p.Tree.IsZero():
		r, err := p.env.Repo.Restore(ctx, p.Tree, snapshot.RestoreOptions{UndoRef: ref, UndoMessage: msg})
		res.Restore = r
		if r != nil && r.Undo != nil {
			res.UndoRef = r.Undo.Ref
		}
		return err
	case p.KeepTree:
		r, err := p.env.Repo.Snapshot(ctx, snapshot.SnapshotOptions{Ref: ref, Message: msg})
		if err != nil {
			return err
		}
		res.UndoRef = r.Ref
	}
	return nil
}

// crashPoint kills this process with SIGKILL when MULLIGAN_TEST_CRASH_AT names the point: the
// scripts that check a rerun of the same command completes after a kill between two steps.
func crashPoint(name string) {
	if os.Getenv("MULLIGAN_TEST_CRASH_AT") == name {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
}

// undoPoint is the name and message of a new undo ref for `mulligan WHAT`.
func undoPoint(what string) (ref, message string) {
	id := snapshot.NewID(time.Now())
	return snapshot.UndoRef(id),
		fmt.Sprintf("mulligan undo %s\n\nThe working tree just before `mulligan %s`.\n", id, what)
}

// diffTree fills the plan's view of the tree: what restoring tree would change now (a dry run
// of the restore: nothing is written).
func (p *Plan) diffTree(ctx context.Context, tree snapshot.Hash) error {
	r, err := p.env.Repo.Restore(ctx, tree, snapshot.RestoreOptions{DryRun: true})
	if err != nil {
		return err
	}
	p.Tree, p.From, p.Changes, p.Spared = tree, r.UndoTree, r.Changes, r.Spared
	return nil
}

func getRun(ctx context.Context, db *store.DB, id string) (*store.Run, error) {
	var run *store.Run
	err := db.View(ctx, func(tx *store.Tx) error {
		var err error
		run, err = tx.GetRun(id)
		return err
	})
	return run, err
}

// inWorktree refuses to change a run's state from another worktree than the run's own: the rest
// of the run would execute here, on a tree it never saw.
func inWorktree(env Env, run *store.Run, command string) error {
	if run.Worktree == "" || run.Worktree == env.Repo.Root() {
		return nil
	}
	return &WorktreeError{Run: run.ID, Worktree: run.Worktree, Here: env.Repo.Root(), Command: command}
}

func notPruned(run *store.Run) error {
	if run.Pruned {
		return &PrunedError{Run: run.ID}
	}
	return nil
}
