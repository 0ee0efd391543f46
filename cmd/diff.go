package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/snapshot"
)

type diffOptions struct {
	Addrs    []string
	Stat     bool
	NameOnly bool
}

func diffCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "what an attempt changed (pre → post), or the difference between two attempts' trees",
		ArgsUsage: "ADDR [ADDR2]",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "stat", Usage: "a line per file with the lines added and removed"},
			&cli.BoolFlag{Name: "name-only", Usage: "only the paths that differ"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 || c.NArg() > 2 {
				return usageError("e.g. mulligan diff fix-tests@2, or mulligan diff fix-tests@1 fix-tests@2", "diff takes one or two addresses")
			}
			if c.Bool("stat") && c.Bool("name-only") {
				return usageError("", "--stat and --name-only cannot go together")
			}
			return runDiff(c.Context, g, diffOptions{Addrs: c.Args().Slice(), Stat: c.Bool("stat"), NameOnly: c.Bool("name-only")})
		},
	}
}

func runDiff(ctx context.Context, g *globals, opts diffOptions) error {
	st, err := openState(g)
	if err != nil {
		return err
	}
	defer st.Close()
	var from, to, fromName, toName string
	run, a, err := st.resolveAddress(ctx, opts.Addrs[0])
	if err != nil {
		return err
	}
	if err := notPruned(run); err != nil {
		return err
	}
	addr := fmt.Sprintf("%s/%s@%d", run.ID, a.TaskID, a.N)
	if len(opts.Addrs) == 1 {
		from, to, fromName, toName = a.PreTree, a.Tree, addr+" (pre)", addr
	} else {
		run2, b, err := st.resolveAddress(ctx, opts.Addrs[1])
		if err != nil {
			return err
		}
		if err := notPruned(run2); err != nil {
			return err
		}
		from, to = a.Tree, b.Tree
		fromName, toName = addr, fmt.Sprintf("%s/%s@%d", run2.ID, b.TaskID, b.N)
	}
	if from == "" || to == "" {
		return &Error{Code: ExitFailed, Msg: "the attempt has no tree recorded yet (it is still running)"}
	}
	changes, err := st.repo.DiffTrees(snapshot.NewHash(from), snapshot.NewHash(to))
	if err != nil {
		return err
	}
	if opts.NameOnly && !g.json() {
		for _, ch := range changes {
			fmt.Fprintln(g.io.Out, ch.Path)
		}
		return nil
	}
	patches := make([]*snapshot.FilePatch, 0, len(changes))
	for _, ch := range changes {
		p, err := st.repo.Patch(ch)
		if err != nil {
			return err
		}
		patches = append(patches, p)
	}
	switch {
	case g.json():
		files := make([]map[string]any, 0, len(patches))
		for i, p := range patches {
			add, del := p.Counts()
			files = append(files, map[string]any{"path": changes[i].Path, "action": changes[i].Action.String(),
				"additions": add, "deletions": del, "binary": p.Binary()})
		}
		return writeJSON(g.io.Out, map[string]any{"from": fromName, "to": toName, "from_tree": from, "to_tree": to, "files": files})
	case opts.Stat:
		return writeStat(g.io.Out, changes, patches)
	}
	return snapshot.WriteUnified(g.io.Out, patches, g.io.ColorEnabled())
}

func writeStat(w io.Writer, changes []snapshot.Change, patches []*snapshot.FilePatch) error {
	width := 0
	for _, ch := range changes {
		width = max(width, len(ch.Path))
	}
	var adds, dels int
	for i, p := range patches {
		add, del := p.Counts()
		adds, dels = adds+add, dels+del
		if p.Binary() {
			fmt.Fprintf(w, " %-*s | Bin\n", width, changes[i].Path)
			continue
		}
		bar := strings.Repeat("+", min(add, 40)) + strings.Repeat("-", min(del, 40))
		fmt.Fprintf(w, " %-*s | %d %s\n", width, changes[i].Path, add+del, bar)
	}
	fmt.Fprintf(w, " %d file%s changed, %d insertion%s(+), %d deletion%s(-)\n",
		len(changes), plural(len(changes)), adds, plural(adds), dels, plural(dels))
	return nil
}
