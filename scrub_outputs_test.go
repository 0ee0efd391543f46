package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// secretShapes are the secrets testdata/script/scrub_outputs.txtar feeds to every output: the
// agent prints each (so they reach messages, events, the autopsy's evidence and the log), the
// prompt and an effect's compensation and data hold some, and a failing hook prints more. The
// key is the shape, the value the text that must never be printed scrubbed.
var secretShapes = map[string]string{
	"sk-ant":        "sk-ant-api03-AbCdEfGhIjKlMnOpQrSt",
	"sk-proj":       "sk-proj-AbCdEfGhIjKlMnOpQrSt0123",
	"sk":            "sk-ZyXwVuTsRqPoNmLkJiHg0123",
	"ghp":           "ghp_0123456789abcdefghijABCDEFGHIJ",
	"gho":           "gho_9876543210abcdefghijABCDEFGHIJ",
	"github_pat":    "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
	"aws-key-id":    "AKIAIOSFODNN7EXAMPLE",
	"aws-secret":    "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",
	"slack":         "xoxb-1234567890-abcdefghij",
	"bearer":        "eyJhbGciOiJIUzI1NiJ9.e30.c2lnbmF0dXJl",
	"password=":     "hunter2hunter2",
	"env-value":     "envsecret-777-value",
	"private-key":   "MIIEpAIBAAKCAQEAsecretkeybody",
	"url-userinfo":  "s3cretpassword",
	"json-key-name": "jsonkeyvalue-4242",
}

// scrubOutput is one way mulligan prints: a command line, and whether it prints JSON (which must
// stay valid, line by line for streams).
type scrubOutput struct {
	args  []string
	json  string // "", "doc" or "lines"
	carry bool   // the raw output carries secrets: --no-scrub must show at least one
}

var scrubOutputs = []scrubOutput{
	{args: []string{"show"}, carry: true},
	{args: []string{"show", "-o", "json"}, json: "doc", carry: true},
	{args: []string{"events"}, carry: true},
	{args: []string{"events", "-o", "json"}, json: "lines", carry: true},
	{args: []string{"ls"}},
	{args: []string{"ls", "-o", "json"}, json: "doc"},
	// The autopsy is printed as it was written, and it is written scrubbed (a file mulligan
	// writes), so --no-scrub cannot show its secrets.
	{args: []string{"autopsy"}},
	{args: []string{"autopsy", "-o", "json"}, json: "doc"},
	{args: []string{"effects"}, carry: true},
	{args: []string{"effects", "-o", "json"}, json: "doc", carry: true},
	{args: []string{"hooks"}}, // a hook's error is its exit status, not its output
	{args: []string{"hooks", "-o", "json"}, json: "doc"},
	{args: []string{"logs", "main@1", "--scrub"}, carry: true},
	{args: []string{"report", "-o", "-"}, carry: true},  // the HTML report, written to stdout
	{args: []string{"retry-task", "main"}, carry: true}, // the run's own live output, stderr included
}

// scrubCheck runs `scrubcheck`: every output in scrubOutputs against every shape in
// secretShapes. Scrubbed (the default), no secret may appear and JSON must stay valid; with
// --no-scrub, an output that carries secrets must show them (so the check can fail).
func scrubCheck(args []string) int {
	failed := false
	fail := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", a...)
		failed = true
	}
	seen := map[string]bool{}
	for _, o := range scrubOutputs {
		name := strings.Join(o.args, " ")
		for _, raw := range []bool{false, true} {
			argv := o.args
			if raw {
				argv = append(append([]string{}, o.args...), "--no-scrub")
			}
			c := exec.Command("mulligan", argv...)
			var stdout, stderr bytes.Buffer
			c.Stdout, c.Stderr = &stdout, &stderr
			c.Run() // the exit code is each command's own business here
			all := stdout.String() + stderr.String()
			if strings.Contains(all, "panic") || stdout.Len() == 0 {
				fail("%s: no output or a panic:\n%s", name, all)
				continue
			}
			if !raw {
				for shape, secret := range secretShapes {
					if strings.Contains(all, secret) {
						fail("%s: shape %s not scrubbed: %q", name, shape, line(all, secret))
					}
				}
				if err := validJSON(o.json, stdout.Bytes()); err != nil {
					fail("%s: scrubbing broke the JSON: %v\n%s", name, err, stdout.String())
				}
				continue
			}
			n := 0
			for shape, secret := range secretShapes {
				if strings.Contains(all, secret) {
					seen[shape] = true
					n++
				}
			}
			if o.carry && n == 0 {
				fail("%s --no-scrub: shows none of the secrets, so the scrubbed check proves nothing:\n%s", name, all)
			}
		}
	}
	for shape := range secretShapes {
		if !seen[shape] {
			fail("shape %s reached no output (with --no-scrub): the fixture does not feed it", shape)
		}
	}
	if failed {
		return 1
	}
	fmt.Printf("%d outputs x %d shapes: scrubbed\n", len(scrubOutputs), len(secretShapes))
	return 0
}

func validJSON(kind string, out []byte) error {
	switch kind {
	case "doc":
		var v any
		return json.Unmarshal(out, &v)
	case "lines":
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var v any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				return fmt.Errorf("%v in %s", err, sc.Text())
			}
		}
	}
	return nil
}

// line is the line of text holding s.
func line(text, s string) string {
	i := strings.Index(text, s)
	start := strings.LastIndexByte(text[:i], '\n') + 1
	end := strings.IndexByte(text[i:], '\n')
	if end < 0 {
		return text[start:]
	}
	return text[start : i+end]
}
