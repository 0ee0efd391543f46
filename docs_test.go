package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/mulligan-dev/mulligan/taskfile"
	"github.com/mulligan-dev/mulligan/testdata/scripttest"
)

// TestRecipes runs every recipe of docs/recipes as written, so the user's documentation cannot
// rot: each recipe becomes a testscript (recipeScript) run with the real binary, the fake agent
// CLIs the recipe defines in hidden blocks, and a hermetic git, as testdata/script does.
func TestRecipes(t *testing.T) {
	t.Parallel() // scripts in their own directories, like TestScripts: the two share the slots
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the recipes' verify commands run go test")
	}
	recipes, err := filepath.Glob(filepath.Join("docs", "recipes", "*.md"))
	if err != nil || len(recipes) == 0 {
		t.Fatalf("no recipes in docs/recipes: %v", err)
	}
	dir := t.TempDir()
	for _, r := range recipes {
		md, err := os.ReadFile(r)
		if err != nil {
			t.Fatal(err)
		}
		ar, err := recipeScript(string(md))
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		name := strings.TrimSuffix(filepath.Base(r), ".md") + ".txtar"
		if err := os.WriteFile(filepath.Join(dir, name), txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gocache := goEnv(t, "GOCACHE")
	gopath := goEnv(t, "GOPATH")
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			if err := scripttest.HermeticGit(env); err != nil {
				return err
			}
			// The recipes' verify runs go test: the user's build cache keeps it fast, and
			// the toolchain is this one.
			env.Setenv("GOCACHE", gocache)
			env.Setenv("GOPATH", gopath)
			env.Setenv("GOTOOLCHAIN", "local")
			env.Setenv("GOFLAGS", "-mod=mod")
			env.Setenv("PATH", filepath.Join(env.WorkDir, "bin")+string(os.PathListSeparator)+env.Getenv("PATH"))
			return nil
		},
	})
}

func goEnv(t *testing.T, name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

var (
	fence       = regexp.MustCompile("^```([a-z]*)(?: +(\\S+))?\\s*$")
	exitComment = regexp.MustCompile(`\s+#\s*exits (\d+)\b.*$`)
	lineComment = regexp.MustCompile(`\s+#\s.*$`)
)

// recipeScript turns a recipe into a testscript archive. What the reader sees is what runs:
//
//   - a ```yaml FILE block is written to FILE in the repository at that point of the recipe;
//   - each `$ COMMAND` line of a ```sh block runs, and must exit 0, or N when the line ends in
//     `# exits N` (other lines of the block are sample output, not checked);
//   - `<!-- test … -->` holds testscript lines the reader does not need (setup, checks), run at
//     that point, and `<!-- file PATH … -->` a file of the sandbox ($WORK/PATH: the fake agent
//     CLIs under bin/, the repository's files under repo/).
//
// The script starts in $WORK/repo, a git repository whose first commit holds the repo/ files.
func recipeScript(md string) (*txtar.Archive, error) {
	ar := &txtar.Archive{}
	var body []string
	var bins []string
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, "<!-- test"):
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "-->"; i++ {
				body = append(body, lines[i])
			}
		case strings.HasPrefix(line, "<!-- file "):
			name := strings.TrimSpace(strings.TrimPrefix(line, "<!-- file "))
			var content []string
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "-->"; i++ {
				content = append(content, lines[i])
			}
			ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(strings.Join(content, "\n") + "\n")})
			if path.Dir(name) == "bin" {
				bins = append(bins, name)
			}
		case fence.MatchString(line):
			m := fence.FindStringSubmatch(line)
			start := i
			var block []string
			for i++; i < len(lines) && lines[i] != "```"; i++ {
				block = append(block, lines[i])
			}
			if i == len(lines) {
				return nil, fmt.Errorf("line %d: the block is not closed", start+1)
			}
			switch {
			case m[1] == "yaml" && m[2] != "":
				stored := fmt.Sprintf(".recipe/%d/%s", start+1, m[2])
				ar.Files = append(ar.Files, txtar.File{Name: stored, Data: []byte(strings.Join(block, "\n") + "\n")})
				body = append(body, fmt.Sprintf("cp $WORK/%s %s", stored, m[2]))
			case m[1] == "sh":
				for j, l := range block {
					cmd, ok := strings.CutPrefix(l, "$ ")
					if !ok {
						continue
					}
					if strings.Contains(cmd, `"`) {
						return nil, fmt.Errorf("line %d: quote with single quotes in recipes (the test runs the line as testscript, which knows no double quotes)", start+j+2)
					}
					body = append(body, scriptLine(cmd))
				}
			}
		}
	}
	pre := []string{"# Generated from a recipe in docs/recipes by TestRecipes."}
	for _, b := range bins {
		pre = append(pre, "chmod 0755 $WORK/"+b)
	}
	pre = append(pre, "cd repo", "exec git init -q", "exec git add -A", "exec git commit -qm 'initial commit' --allow-empty")
	ar.Comment = []byte(strings.Join(append(pre, body...), "\n") + "\n")
	if !bytes.Contains(ar.Comment, []byte("exec mulligan")) && !bytes.Contains(ar.Comment, []byte("exec status")) {
		return nil, fmt.Errorf("the recipe runs no mulligan command")
	}
	return ar, nil
}

// scriptLine is one `$ COMMAND` as a testscript line.
func scriptLine(cmd string) string {
	want := ""
	if m := exitComment.FindStringSubmatch(cmd); m != nil {
		want = m[1]
		cmd = exitComment.ReplaceAllString(cmd, "")
	}
	cmd = strings.TrimSpace(lineComment.ReplaceAllString(cmd, ""))
	if strings.HasPrefix(cmd, "cd ") {
		return cmd
	}
	if want != "" && want != "0" {
		return "exec status " + want + " " + cmd
	}
	return "exec " + cmd
}

// TestReadme: the README keeps its two set-up commands, its task file loads, and every relative
// link of the README and docs/ names a file that exists.
func TestReadme(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"make demo", "make test", "make install", "mulligan init"} {
		if !bytes.Contains(readme, []byte(want)) {
			t.Errorf("the README no longer says %q", want)
		}
	}
	blocks := regexp.MustCompile("(?ms)^```yaml\n(.*?)^```").FindAllSubmatch(readme, -1)
	if len(blocks) != 1 {
		t.Fatalf("the README has %d task files, want 1", len(blocks))
	}
	if _, err := taskfile.Parse("README.md", blocks[0][1]); err != nil {
		t.Errorf("the README's task file does not load: %v", err)
	}
	pages, _ := filepath.Glob(filepath.Join("docs", "*.md"))
	more, _ := filepath.Glob(filepath.Join("docs", "recipes", "*.md"))
	link := regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)
	for _, p := range append(append([]string{"README.md"}, pages...), more...) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllSubmatch(data, -1) {
			target := filepath.Join(filepath.Dir(p), string(m[1]))
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links to %s, which does not exist", p, m[1])
			}
		}
	}
}
