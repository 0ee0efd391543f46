// Command demoagent is the agent of `make demo`: the scriptable fake agent of the tests as a
// program of its own, so the demo needs no API key and no network. It adds one step of its own:
//
//	publish:PATH   "publish a release": write PATH (a file outside the working tree, standing
//	               for the world outside) and record the side effect with
//	               `mulligan effect record publish --compensate 'rm -f PATH' --data …`
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/mulligan-dev/mulligan/testdata/fakeagent"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	for _, a := range args {
		if path, ok := strings.CutPrefix(a, "publish:"); ok {
			if err := publish(path); err != nil {
				fmt.Fprintf(os.Stderr, "demoagent: publish: %v\n", err)
				return 1
			}
			continue
		}
		if code, stop := fakeagent.Step(a); stop {
			return code
		}
	}
	return 0
}

// publish writes the release file, then records it: mulligan (on PATH, as for any agent)
// finds the attempt through MULLIGAN_RUN, MULLIGAN_TASK and MULLIGAN_ATTEMPT. The
// compensation is plain argv (no shell), so it works on any machine without a network.
func publish(path string) error {
	if strings.ContainsAny(path, `'\`) {
		return fmt.Errorf("%q: no quotes or backslashes in the path, please", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	text := fmt.Sprintf("release published by run %s, attempt %s@%s\n",
		os.Getenv("MULLIGAN_RUN"), os.Getenv("MULLIGAN_TASK"), os.Getenv("MULLIGAN_ATTEMPT"))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return err
	}
	data, err := json.Marshal(map[string]string{"file": path})
	if err != nil {
		return err
	}
	cmd := exec.Command("mulligan", "effect", "record", "publish", "--compensate", "rm -f '"+path+"'", "--data", string(data))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}
