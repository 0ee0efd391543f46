package cmd

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/autopsy"
	"github.com/mulligan-dev/mulligan/report"
)

func reportCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "write one self-contained HTML file of a run: timeline of attempts and lanes, diffs, verify output, autopsy and effects (scrubbed)",
		ArgsUsage: "[RUN]",
		Flags: []cli.Flag{
			// -o is the global output format elsewhere; here it names the file, as in `bug --bundle`.
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` (- for standard output); default <git-dir>/mulligan/reports/<run>.html, outside the working tree"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("e.g. mulligan report k3f9 -o k3f9.html", "report takes one run")
			}
			file := c.String("output")
			if file == "json" || file == "text" {
				// -o is the output format of the other commands: a file named json is a slip.
				return usageError("report's -o names the file: mulligan report -o run.html; its JSON summary is mulligan -o json report",
					"report -o %s would write the report to a file named %s", file, file)
			}
			return runReport(c.Context, g, c.Args().First(), file)
		},
	}
}

func runReport(ctx context.Context, g *globals, ref, file string) error {
	st, id, err := openRun(ctx, g, ref)
	if err != nil {
		return err
	}
	defer st.Close()
	doc, err := report.Build(ctx, report.Input{Repo: st.repo, DB: st.db, RunID: id,
		AutopsyDir: autopsy.Dir(st.repo.CommonDir()), Commands: g.commandNames, Scrub: g.io.Scrubber()})
	if err != nil {
		return err
	}
	if file == "-" {
		// Through the scrubbing writer as all output; the texts in it were scrubbed already.
		return report.Write(g.io.Out, doc)
	}
	if file == "" {
		// Under the git directory, never in the working tree, where `git add -A` would commit
		// it and the next run's snapshot would take it for the user's work.
		dir := filepath.Join(st.repo.CommonDir(), "mulligan", "reports")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("write the report: %w", unwrapPathError(err))
		}
		file = filepath.Join(dir, id+".html")
	}
	f, err := os.Create(file)
	if err != nil {
		return &Error{Code: ExitFailed, Msg: fmt.Sprintf("cannot write the report: %v", unwrapPathError(err)), Err: err,
			Hints: []string{"name another file: mulligan report " + id + " -o FILE"}}
	}
	w := bufio.NewWriter(f)
	err = report.Write(w, doc)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(file)
		return err
	}
	if g.json() {
		return writeJSON(g.io.Out, map[string]any{"run": id, "file": file})
	}
	fmt.Fprintf(g.io.Out, "report of run %s written to %s (%d attempt%s); open it in a browser\n", id, displayPath(file), len(doc.Attempts), plural(len(doc.Attempts)))
	return nil
}
