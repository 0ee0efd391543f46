package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/autopsy"
)

func bugCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "bug",
		Usage:     "write a scrubbed diagnostic bundle (.tar.gz) of a run to a local file; nothing is sent anywhere",
		ArgsUsage: "[RUN]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bundle", Usage: "write the bundle to `FILE` (default <git-dir>/mulligan/bugs/<run>.tar.gz, outside the working tree)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("e.g. mulligan bug k3f9 --bundle /tmp/k3f9.tar.gz", "bug takes one run")
			}
			st, id, err := openRun(c.Context, g, c.Args().First())
			if err != nil {
				return err
			}
			defer st.Close()
			v, rev := versionString()
			b, err := autopsy.BuildBundle(c.Context, autopsyInput(g, st, id), autopsy.HostVersions(v, rev))
			if err != nil {
				return err
			}
			path := c.String("bundle")
			if path == "" {
				// Under the git directory, never in the working tree, where `git add -A` would
				// commit it.
				dir := filepath.Join(st.repo.CommonDir(), "mulligan", "bugs")
				if err := os.MkdirAll(dir, 0o700); err != nil {
					return fmt.Errorf("write the bundle: %w", unwrapPathError(err))
				}
				path = filepath.Join(dir, id+".tar.gz")
			}
			if err := b.WriteTarGz(path, id, time.Now()); err != nil {
				return fmt.Errorf("write the bundle: %w", unwrapPathError(err))
			}
			names := make([]string, len(b.Files))
			for i, f := range b.Files {
				names[i] = f.Name
			}
			if g.json() {
				return writeJSON(g.io.Out, map[string]any{"run": id, "bundle": path, "files": names})
			}
			fmt.Fprintf(g.io.Out, "wrote %s (%d files, secrets scrubbed); nothing was sent anywhere\n", path, len(names))
			fmt.Fprintf(g.io.Out, "hint: read it before you attach it to a report: tar -xzf %s\n", path)
			return nil
		},
	}
}
