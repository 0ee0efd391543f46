package cmd

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/snapshot"
)

type snapshotOptions struct {
	Message string
}

func snapshotCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "snapshot",
		Usage:     "snapshot the working tree now into refs/mulligan/manual/<id>",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "message", Aliases: []string{"m"}, Usage: "a note stored in the snapshot's commit message"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError("use -m MSG for a message", "snapshot takes no arguments (got %q)", c.Args().First())
			}
			return runSnapshot(c, g, snapshotOptions{Message: c.String("message")})
		},
	}
}

func runSnapshot(c *cli.Context, g *globals, opts snapshotOptions) error {
	repo, err := openRepo()
	if err != nil {
		return err
	}
	defer repo.Close()
	id := snapshot.NewID(time.Now())
	msg := "mulligan snapshot " + id
	if opts.Message != "" {
		msg += "\n\n" + strings.TrimSpace(opts.Message) + "\n"
	}
	res, err := repo.Snapshot(c.Context, snapshot.SnapshotOptions{Ref: snapshot.ManualRef(id), Message: msg})
	if err != nil {
		return err
	}
	if g.json() {
		return writeJSON(g.io.Out, map[string]any{
			"ref": res.Ref, "commit": res.Commit.String(), "tree": res.Tree.String(),
			"files": res.Files, "duration_ms": res.Duration.Milliseconds(),
		})
	}
	fmt.Fprintf(g.io.Out, "%s\ncommit %s\ntree   %s\nfiles  %d (%s)\n", res.Ref, res.Commit, res.Tree, res.Files, roundDuration(res.Duration))
	return nil
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < time.Second:
		return d.Round(time.Millisecond)
	default:
		return d.Round(10 * time.Millisecond)
	}
}
