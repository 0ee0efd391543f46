package cmd

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/snapshot"
)

type restoreOptions struct {
	Rev    string
	DryRun bool
}

func restoreCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "restore",
		Usage:     "set the working tree to any commit, tree or ref (an undo ref is taken first)",
		ArgsUsage: "REV",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would change, change nothing"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("e.g. `mulligan restore refs/mulligan/manual/<id>`", "restore takes exactly one revision")
			}
			return runRestore(c, g, restoreOptions{Rev: c.Args().First(), DryRun: c.Bool("dry-run")})
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
		return err
	}
	return restoreTree(c, g, repo, tree, opts.DryRun, "restore "+opts.Rev)
}

// restoreTree is the shared tail of restore and undo: take an undo ref, restore, print.
func restoreTree(c *cli.Context, g *globals, repo *snapshot.Repo, tree snapshot.Hash, dryRun bool, what string) error {
	id := snapshot.NewID(time.Now())
	res, err := repo.Restore(c.Context, tree, snapshot.RestoreOptions{
		UndoRef:     snapshot.UndoRef(id),
		UndoMessage: fmt.Sprintf("mulligan undo %s\n\nThe working tree just before `mulligan %s`.\n", id, what),
		DryRun:      dryRun,
	})
	if err != nil {
		return err
	}
	return printRestore(g, tree, res, dryRun, nil)
}

type changeJSON struct {
	Path   string `json:"path"`
	Action string `json:"action"`
}

// printRestore prints a restore; compensated is what revert undid on the way (nil: nothing).
func printRestore(g *globals, tree snapshot.Hash, res *snapshot.RestoreResult, dryRun bool, compensated []compensationJSON) error {
	var undoRef any
	if res.Undo != nil {
		undoRef = res.Undo.Ref
	}
	if g.json() {
		changed := make([]changeJSON, 0, len(res.Changes))
		for _, ch := range res.Changes {
			changed = append(changed, changeJSON{Path: ch.Path, Action: ch.Action.String()})
		}
		return writeJSON(g.io.Out, map[string]any{
			"tree": tree.String(), "undo_ref": undoRef, "changed": changed,
			"compensated": nonNil(compensated), "dry_run": dryRun,
		})
	}
	for _, ch := range res.Changes {
		fmt.Fprintf(g.io.Out, "%s %s\n", actionLetter(ch.Action), ch.Path)
	}
	switch {
	case dryRun:
		fmt.Fprintf(g.io.Out, "would restore tree %s: %d paths differ (dry run, nothing changed)\n", tree, len(res.Changes))
	case len(res.Changes) == 0:
		fmt.Fprintf(g.io.Out, "the working tree already matches %s; undo point %s\n", tree, undoRef)
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
