// Command serve runs the fake model API by hand, for probing a CLI: serve SCRIPT.json LOG.jsonl
// prints the base URL and serves until killed.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/mulligan-dev/mulligan/testdata/modelapi"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: serve SCRIPT.json LOG.jsonl")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var script []modelapi.Turn
	if err := json.Unmarshal(data, &script); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s, err := modelapi.Start(script)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s.LogTo(os.Args[2])
	fmt.Println(s.URL)
	select {}
}
