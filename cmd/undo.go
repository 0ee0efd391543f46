package cmd

import (
	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/snapshot"
)

func undoCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "undo",
		Usage: "put back the tree the last revert, restore, timetravel or undo replaced",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would change, change nothing"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError("", "undo takes no arguments")
			}
			return runUndo(c, g, c.Bool("dry-run"))
		},
	}
}

// runUndo restores the newest undo ref. Undo takes an undo ref of its own first, so a second
// `undo` redoes what the first one undid: nothing is ever lost, only toggled.
func runUndo(c *cli.Context, g *globals, dryRun bool) error {
	repo, err := openRepo()
	if err != nil {
		return err
	}
	defer repo.Close()
	refs, err := repo.Refs(snapshot.UndoPrefix)
	if err != nil {
		return err
	}
	if len(refs) == 0 {
		return &Error{Code: ExitFailed, Msg: "nothing to undo: no refs/mulligan/undo/* in this repository",
			Hints: []string{"undo points are taken by restore, revert, timetravel and retry-task"}}
	}
	last := refs[len(refs)-1] // ids sort by creation time
	tree, _, err := repo.ResolveRevision(last.Hash.String())
	if err != nil {
		return err
	}
	return restoreTree(c, g, repo, tree, dryRun, "undo (back to "+last.Name+")")
}
