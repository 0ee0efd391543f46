package taskfile

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// referenceSections are the key lists the loader accepts, by the name docs/taskfile.md gives each
// table (`<!-- keys: NAME -->` before it).
var referenceSections = map[string][]string{
	"top": topKeys, "agent": agentKeys, "task": taskKeys, "backoff": backoffKeys,
	"verify": verifyKeys, "result_contract": resultContractKeys, "classify": classifyKeys,
	"effects": effectKeys, "hooks": HookNames, "worktree": worktreeKeys,
}

const referencePath = "../docs/taskfile.md"

// TestReferenceListsEveryKey fails when a key the parser accepts is missing from the user's
// reference (docs/taskfile.md), or when the reference documents a key the parser refuses.
func TestReferenceListsEveryKey(t *testing.T) {
	data, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	doc := referenceTables(t, string(data))
	for name, keys := range referenceSections {
		documented, ok := doc[name]
		if !ok {
			t.Errorf("%s has no table of the %s keys (a `<!-- keys: %s -->` line before it)", referencePath, name, name)
			continue
		}
		for _, k := range keys {
			if !slices.Contains(documented, k) {
				t.Errorf("the parser accepts `%s` in %s, but %s does not document it: add a row `| `%s` | default | what it does |`", k, name, referencePath, k)
			}
		}
		for _, k := range documented {
			if !slices.Contains(keys, k) {
				t.Errorf("%s documents `%s` in %s, which the parser does not accept", referencePath, k, name)
			}
		}
	}
	for name := range doc {
		if _, ok := referenceSections[name]; !ok {
			t.Errorf("%s has a table of %q keys, which the test does not know", referencePath, name)
		}
	}
}

// TestReferenceExamplesParse: every YAML block of the reference is a whole task file that loads,
// and the last one ("A file with every key") uses every key of every table.
func TestReferenceExamplesParse(t *testing.T) {
	data, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?ms)^```yaml\n(.*?)^```").FindAllStringSubmatch(string(data), -1)
	if len(blocks) < 2 {
		t.Fatalf("%s has %d yaml blocks", referencePath, len(blocks))
	}
	for i, b := range blocks {
		if _, err := Parse("block"+string(rune('1'+i))+".yaml", []byte(b[1])); err != nil {
			t.Errorf("%s, yaml block %d does not load: %v\n%s", referencePath, i+1, err, b[1])
		}
	}
	every := blocks[len(blocks)-1][1]
	for name, keys := range referenceSections {
		for _, k := range keys {
			if !regexp.MustCompile(`(?m)(^|[{\s,-])` + regexp.QuoteMeta(k) + `:`).MatchString(every) {
				t.Errorf("the reference's last example does not use `%s` (%s)", k, name)
			}
		}
	}
}

// referenceTables reads each `<!-- keys: NAME -->` table: the keys in its rows' first cells.
func referenceTables(t *testing.T, doc string) map[string][]string {
	out := map[string][]string{}
	lines := strings.Split(doc, "\n")
	cell := regexp.MustCompile("^\\| `([a-z_]+)` \\|")
	for i := 0; i < len(lines); i++ {
		name, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "<!-- keys: ")
		if !ok {
			continue
		}
		name = strings.TrimSuffix(name, " -->")
		var keys []string
		for i++; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
			if m := cell.FindStringSubmatch(lines[i]); m != nil {
				keys = append(keys, m[1])
			}
		}
		if len(keys) == 0 {
			t.Errorf("the %s table has no rows", name)
		}
		out[name] = keys
	}
	return out
}
