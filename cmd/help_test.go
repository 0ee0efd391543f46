package cmd

import (
	"strings"
	"testing"
)

// TestEveryCommandHasExamples: each visible command's --help shows examples and its exit codes.
func TestEveryCommandHasExamples(t *testing.T) {
	ios, _, _ := Test()
	app := newApp(&globals{io: ios, output: "text"})
	for _, c := range app.Commands {
		if c.Hidden {
			continue
		}
		if !strings.Contains(c.Description, "Examples:\n  ") || !strings.Contains(c.Description, "Exit codes: 0") {
			t.Errorf("mulligan %s --help has no examples or exit codes: add it to commandHelp", c.Name)
		}
	}
}
