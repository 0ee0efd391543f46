package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// Version is set at build time with -ldflags "-X github.com/mulligan-dev/mulligan/cmd.Version=…";
// without it the module version or VCS revision from the build info is used.
var Version = ""

func versionString() (version, revision string) {
	version = Version
	if bi, ok := debug.ReadBuildInfo(); ok {
		if version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	if version == "" {
		version = "dev"
	}
	return version, revision
}

func versionCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print mulligan's version",
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError("", "version takes no arguments")
			}
			v, rev := versionString()
			if g.json() {
				return writeJSON(g.io.Out, map[string]any{
					"version": v, "revision": nullString(rev), "go": runtime.Version(),
					"os": runtime.GOOS, "arch": runtime.GOARCH,
				})
			}
			fmt.Fprintf(g.io.Out, "mulligan %s (%s, %s/%s)\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}

// nullString is nil for "", so JSON shows null for an absent value (SPEC §9).
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
