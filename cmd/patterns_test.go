package cmd

import (
	"testing"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// Every package's patterns are compiled on first use (lazyre): this compiles them all, as
// regexp.MustCompile at start-up did, so a bad one fails here and not in a user's run.
func TestPatternsCompile(t *testing.T) {
	if bad, err := lazyre.CompileAll(); err != nil {
		t.Fatalf("%q: %v", bad, err)
	}
}
