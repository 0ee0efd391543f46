package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

type restoreOptions struct {
	Rev    string
	DryRun bool
	// Paths limits the restore to these paths (after `--`), relative to the current directory.
	Paths []string
}

func restoreCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "restore",
		Usage:     "set the working tree, or only some paths of it, to any commit, tree or ref (an undo ref is taken first)",
		ArgsUsage: "REV [-- PATH…]",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would change, change nothing"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("e.g. `mulligan restore refs/mulligan/manual/<id>`, or `mulligan restore REV -- PATH`", "restore takes exactly one revision (paths go after `--`)")
			}
			if g.rest != nil && len(g.rest) == 0 {
				return usageError("e.g. `mulligan restore REV -- src/main.go`", "no path after `--`")
			}
			return runRestore(c, g, restoreOptions{Rev: c.Args().First(), DryRun: c.Bool("dry-run"), Paths: g.rest})
		},
	}
}

func runRestore(c *cli.Context, g *globals, opts restoreOptions) error {
	repo, err := openRepo()
	if err != nil {
		return err
	}
	defer repo.Close()
	tree, _, err := repo.ResolveRevision(opts.Rev)
	if err != nil {
		// Not a git revision: an attempt's address (k3f9/fix-tests@2) names the tree it left.
		t, aerr := addressTree(c.Context, g, repo, opts.Rev)
		if aerr != nil {
			var addr *attempt.AddressError
			if _, perr := attempt.ParseAddress(opts.Rev); perr == nil && (errors.As(aerr, &addr) || strings.ContainsAny(opts.Rev, "/@")) {
				return aerr
			}
			return err
		}
		tree = t
	}
	paths, err := repoPaths(repo, opts.Paths)
	if err != nil {
		return err
	}
	what := "restore " + opts.Rev
	if len(paths) > 0 {
		what += " -- " + strings.Join(paths, " ")
	}
	return restorePaths(c, g, repo, tree, opts.DryRun, what, paths)
}

// addressTree is the tree the attempt an address names left (its post snapshot).
func addressTree(ctx context.Context, g *globals, repo *snapshot.Repo, text string) (snapshot.Hash, error) {
	db, err := store.Open(store.DefaultPath(repo.CommonDir()))
	if err != nil {
		return snapshot.Hash{}, err
	}
	defer db.Close()
	st := &state{repo: repo, db: db, g: g, noHooks: true}
	run, a, err := st.resolveAddress(ctx, text)
	if err != nil {
		return snapshot.Hash{}, err
	}
	if err := notPruned(run); err != nil {
		return snapshot.Hash{}, err
	}
	if a.Tree == "" {
		return snapshot.Hash{}, &Error{Code: ExitFailed, Msg: fmt.Sprintf("%s/%s@%d has no tree yet: it is still running", run.ID, a.TaskID, a.N)}
	}
	return snapshot.NewHash(a.Tree), nil
}

// repoPaths turns paths given on the command line (relative to the current directory) into
// slash-separated paths relative to the working tree root.
func repoPaths(repo *snapshot.Repo, args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, nil
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	out := make([]string, 0, len(args))
	for _, a := range args {
		abs := a
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(cwd, a)
		}
		rel, err := filepath.Rel(repo.Root(), filepath.Clean(abs))
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return nil, usageError("name paths inside the working tree "+repo.Root(), "%s is outside the working tree", a)
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out, nil
}

// restoreTree is the shared tail of restore and undo: take an undo ref, restore, print.
func restoreTree(c *cli.Context, g *globals, repo *snapshot.Repo, tree snapshot.Hash, dryRun bool, what string) error {
	return restorePaths(c, g, repo, tree, dryRun, what, nil)
}

// restorePaths is restoreTree limited to paths (none: the whole tree).
func restorePaths(c *cli.Context, g *globals, repo *snapshot.Repo, tree snapshot.Hash, dryRun bool, what string, paths []string) error {
	id := snapshot.NewID(time.Now())
	res, err := repo.Restore(c.Context, tree, snapshot.RestoreOptions{
		UndoRef:     snapshot.UndoRef(id),
		UndoMessage: fmt.Sprintf("mulligan undo %s\n\nThe working tree just before `mulligan %s`.\n", id, what),
		DryRun:      dryRun,
		Paths:       paths,
	})
	if err != nil {
		return err
	}
	return printRestore(g, tree, res, dryRun, nil, nil)
}

type changeJSON struct {
	Path   string `json:"path"`
	Action string `json:"action"`
}

func changesJSON(changes []snapshot.Change) []changeJSON {
	out := make([]changeJSON, 0, len(changes))
	for _, ch := range changes {
		out = append(out, changeJSON{Path: ch.Path, Action: ch.Action.String()})
	}
	return out
}

// printRestore prints a restore; compensated is what revert undid on the way (nil: nothing), git
// what it did to HEAD, refs and the index (nil: not asked to).
func printRestore(g *globals, tree snapshot.Hash, res *snapshot.RestoreResult, dryRun bool, compensated []compensationJSON, git *attempt.GitRevert) error {
	var undoRef any
	if res.Undo != nil {
		undoRef = res.Undo.Ref
	}
	if g.json() {
		changed := changesJSON(res.Changes)
		spared := make([]string, 0, len(res.Spared))
		for _, ch := range res.Spared {
			spared = append(spared, ch.Path)
		}
		subs := make([]map[string]any, 0, len(res.Submodules))
		for _, sm := range res.Submodules {
			subs = append(subs, map[string]any{"path": sm.Path, "commit": sm.Commit.String(), "restored": sm.Skipped == "",
				"undo_ref": nullable(sm.UndoRef), "reason": nullable(sm.Skipped)})
		}
		out := map[string]any{
			"tree": tree.String(), "undo_ref": undoRef, "changed": changed, "kept_ignored": spared, "submodules": subs,
			"compensated": nonNil(compensated), "dry_run": dryRun,
		}
		if git != nil {
			out["git_restored"], out["git_left"] = git.RestoredList(), git.LeftList()
		}
		return writeJSON(g.io.Out, out)
	}
	for _, ch := range res.Changes {
		fmt.Fprintf(g.io.Out, "%s %s\n", actionLetter(ch.Action), ch.Path)
	}
	printSpared(g.io.Out, res.Spared)
	notRestored := 0
	for _, sm := range res.Submodules {
		if sm.Skipped != "" {
			notRestored++
			fmt.Fprintf(g.io.Out, "! %s not restored: %s\n", sm.Path, sm.Skipped)
			continue
		}
		fmt.Fprintf(g.io.Out, "submodule %s set to %s (detached); what its working tree held is in its %s\n", sm.Path, sm.Commit, sm.UndoRef)
	}
	if git != nil {
		printGitRevert(g.io.Out, git, dryRun)
	}
	switch {
	case dryRun:
		fmt.Fprintf(g.io.Out, "would restore tree %s: %d paths differ (dry run, nothing changed)\n", tree, len(res.Changes))
	case len(res.Changes) == 0:
		fmt.Fprintf(g.io.Out, "the working tree already matches %s; undo point %s\n", tree, undoRef)
	case notRestored > 0:
		fmt.Fprintf(g.io.Out, "restored tree %s except %d path%s named above: %d path%s changed; undo point %s\n", tree,
			notRestored, plural(notRestored), len(res.Changes)-notRestored, plural(len(res.Changes)-notRestored), undoRef)
		fmt.Fprintf(g.io.Out, "hint: `mulligan undo` puts back the tree this replaced\n")
	default:
		fmt.Fprintf(g.io.Out, "restored tree %s: %d path%s changed; undo point %s\n", tree, len(res.Changes), plural(len(res.Changes)), undoRef)
		fmt.Fprintf(g.io.Out, "hint: `mulligan undo` puts back the tree this replaced\n")
	}
	return nil
}

// actionLetter is the one-letter form of a change, as `git status --short` writes them.
func actionLetter(a snapshot.Action) string {
	switch a {
	case snapshot.Add:
		return "A"
	case snapshot.Delete:
		return "D"
	case snapshot.TypeChange:
		return "T"
	}
	return "M"
}

// printSpared names the ignored files a restore left as they were (at most 10, then a count):
// the tree it set holds another version of them, or none, but the file on disk is one the ignore
// rules exclude, and restore never deletes or overwrites such a file.
func printSpared(w io.Writer, spared []snapshot.Change) {
	if len(spared) == 0 {
		return
	}
	names := make([]string, 0, 10)
	for i, ch := range spared {
		if i == 10 {
			names = append(names, fmt.Sprintf("and %d more", len(spared)-10))
			break
		}
		names = append(names, ch.Path)
	}
	fmt.Fprintf(w, "left %d ignored path%s as on disk (restore never deletes or overwrites an ignored file): %s\n",
		len(spared), plural(len(spared)), strings.Join(names, ", "))
}

// nullable is s, or JSON null when s is empty.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
