// Command mulligan runs coding-agent CLIs as tasks in a git working tree, with a snapshot of the
// whole tree for every attempt, a SQLite history, and failure handling shaped for agent work.
package main

import (
	"os"

	"github.com/mulligan-dev/mulligan/cmd"
)

func main() { os.Exit(cmd.Main()) }
