package cmd

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mulligan-dev/mulligan/taskfile"
)

// Every starter init can write validates: any set of CLIs on PATH, any guessed verify or none.
func TestStarterFileValidates(t *testing.T) {
	for _, onPath := range [][]string{nil, {"claude"}, {"gemini"}, {"claude", "codex", "gemini", "aider", "opencode"}} {
		look := func(name string) (string, error) {
			for _, p := range onPath {
				if p == name {
					return "/bin/" + name, nil
				}
			}
			return "", errors.New("not found")
		}
		agents := foundAgents(look)
		if len(agents) != len(onPath) {
			t.Fatalf("on PATH %v: found %d agents", onPath, len(agents))
		}
		for _, v := range [][]string{nil, {"go", "test", "./..."}, {"npm", "test"}, {"pytest"}, {"cargo", "test"}} {
			content := starterFile(agents, v, "a file")
			f, err := taskfile.Parse("mulligan.yaml", []byte(content))
			if err != nil {
				t.Fatalf("on PATH %v, verify %v: %v\n%s", onPath, v, err, content)
			}
			task := f.Tasks[0]
			if want := max(len(onPath), 1); len(task.Agents) != want {
				t.Errorf("on PATH %v: chain %v", onPath, task.Agents)
			}
			if v == nil && task.Verify != nil || v != nil && (task.Verify == nil || !reflect.DeepEqual(task.Verify.Command, v)) {
				t.Errorf("verify %v: got %+v", v, task.Verify)
			}
			if v != nil && !strings.Contains(content, "A guess from a file") {
				t.Errorf("the guessed verify is not marked as a guess:\n%s", content)
			}
		}
	}
}

func TestGuessVerify(t *testing.T) {
	for _, c := range []struct {
		file, content string
		want          []string
	}{
		{"go.mod", "module x\n", []string{"go", "test", "./..."}},
		{"Cargo.toml", "[package]\n", []string{"cargo", "test"}},
		{"package.json", `{"scripts": {"test": "vitest run"}}`, []string{"npm", "test"}},
		{"package.json", `{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}`, nil},
		{"pyproject.toml", "[project]\n", []string{"pytest"}},
		{"Makefile", "build:\n\tgo build\ntest:\n\tgo test\n", []string{"make", "test"}},
		{"README.md", "hello\n", nil},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, _ := guessVerify(dir); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %q: guessed %v, want %v", c.file, c.content, got, c.want)
		}
	}
}
