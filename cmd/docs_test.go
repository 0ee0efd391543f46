package cmd

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

const commandsDoc = "../docs/commands.md"

// TestCommandsDocumented: every command `mulligan --help` lists has a section in the user's
// docs/commands.md (a heading "### `mulligan NAME`") that names each of its visible flags and its
// exit codes, and the global flags are documented too. A new command or flag fails here until
// the page says what it does.
func TestCommandsDocumented(t *testing.T) {
	data, err := os.ReadFile(commandsDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	sections := docSections(doc)
	ios, _, _ := Test()
	app := newApp(&globals{io: ios, output: "text"})
	for _, c := range app.Commands {
		if c.Hidden {
			continue
		}
		sec, ok := sections[c.Name]
		if !ok {
			t.Errorf("mulligan %s is not documented: add a section \"### `mulligan %s`\" to %s, with its flags and exit codes", c.Name, c.Name, commandsDoc)
			continue
		}
		if !strings.Contains(sec, "Exit codes:") {
			t.Errorf("the section of mulligan %s in %s does not give its exit codes (\"Exit codes: …\")", c.Name, commandsDoc)
		}
		flags := c.Flags
		for _, s := range c.Subcommands {
			flags = append(flags, s.Flags...)
		}
		for _, f := range flags {
			if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
				continue
			}
			if name := flagSpelling(f); !strings.Contains(sec, "`"+name) {
				t.Errorf("mulligan %s %s is not documented in its section of %s", c.Name, name, commandsDoc)
			}
		}
	}
	global := doc[strings.Index(doc, "## Global flags"):]
	global = global[:strings.Index(global[1:], "\n## ")+1]
	for _, f := range app.Flags {
		if name := flagSpelling(f); !strings.Contains(global, "`"+name) {
			t.Errorf("the global flag %s is not in the \"Global flags\" table of %s", name, commandsDoc)
		}
	}
}

// flagSpelling is how a user types the flag: --name, or -C for a one-letter one.
func flagSpelling(f cli.Flag) string {
	name := f.Names()[0]
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// docSections splits the page at its "### `mulligan NAME`" headings.
func docSections(doc string) map[string]string {
	out := map[string]string{}
	heading := regexp.MustCompile("(?m)^### `mulligan ([a-z-]+)`\\s*$")
	idx := heading.FindAllStringSubmatchIndex(doc, -1)
	for i, m := range idx {
		end := len(doc)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		if next := strings.Index(doc[m[1]:end], "\n## "); next >= 0 {
			end = m[1] + next
		}
		out[doc[m[2]:m[3]]] = doc[m[1]:end]
	}
	return out
}
