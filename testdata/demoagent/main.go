// Command demoagent is the agent of `make demo`: the scriptable fake agent of the tests as a
// program of its own, so the demo needs no API key and no network.
package main

import (
	"os"

	"github.com/mulligan-dev/mulligan/testdata/fakeagent"
)

func main() { os.Exit(fakeagent.Main(os.Args[1:])) }
