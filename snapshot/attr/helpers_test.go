package attr

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The test binary doubles as a long-running filter process: git (and our
// Converter) start it through sh with this variable set.
const helperEnv = "ATTR_TEST_FILTER_PROCESS"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		if err := filterProcessHelper(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "filter helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperProcessCommand is the filter.<name>.process value that runs the
// helper.
func helperProcessCommand(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return helperEnv + "=1 " + sqQuote(exe)
}

// filterProcessHelper is a minimal long-running filter: clean upper-cases
// ASCII letters, smudge lower-cases them. A path containing "error" gets
// status=error, one containing "abort" status=abort.
func filterProcessHelper(in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	bw := bufio.NewWriter(out)
	w := pktWriter{bw}
	readList := func() ([]string, error) {
		var lines []string
		for {
			line, ok, err := readLine(r)
			if err != nil {
				return nil, err
			}
			if !ok {
				return lines, nil
			}
			lines = append(lines, line)
		}
	}
	hello, err := readList()
	if err != nil {
		return err
	}
	if len(hello) < 2 || hello[0] != "git-filter-client" || hello[1] != "version=2" {
		return fmt.Errorf("bad hello %q", hello)
	}
	w.text("git-filter-server\n")
	w.text("version=2\n")
	w.flush()
	if err := bw.Flush(); err != nil {
		return err
	}
	caps, err := readList()
	if err != nil {
		return err
	}
	for _, c := range caps {
		if c == "capability=clean" || c == "capability=smudge" {
			w.text(c + "\n")
		}
	}
	w.flush()
	bw.Flush()
	for {
		hdr, err := readList()
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil // git closed our stdin
		}
		if err != nil {
			return err
		}
		var cmd, path string
		for _, l := range hdr {
			if v, ok := strings.CutPrefix(l, "command="); ok {
				cmd = v
			}
			if v, ok := strings.CutPrefix(l, "pathname="); ok {
				path = v
			}
		}
		var data []byte
		for {
			p, end, err := readPkt(r)
			if err != nil {
				return err
			}
			if end {
				break
			}
			data = append(data, p...)
		}
		switch {
		case strings.Contains(path, "error"):
			w.text("status=error\n")
			w.flush()
		case strings.Contains(path, "abort"):
			w.text("status=abort\n")
			w.flush()
		default:
			conv := bytes.ToUpper
			if cmd == "smudge" {
				conv = bytes.ToLower
			}
			data = conv(data)
			w.text("status=success\n")
			w.flush()
			for len(data) > 0 {
				n := min(len(data), pktDataMax)
				w.data(data[:n])
				data = data[n:]
			}
			w.flush()
			w.flush() // empty list: status stays success
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
}

// gitEnv is a hermetic environment for the git binary.
type gitEnv struct {
	t   *testing.T
	env []string
}

func newGitEnv(t *testing.T) *gitEnv {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	home := t.TempDir()
	global := filepath.Join(home, "gitconfig")
	cfg := "[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n" +
		"[commit]\n\tgpgSign = false\n[maintenance]\n\tauto = false\n[core]\n\tsafecrlf = false\n"
	if err := os.WriteFile(global, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "HOME=") ||
			strings.HasPrefix(kv, "XDG_CONFIG_HOME=") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"GIT_CONFIG_GLOBAL="+global,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
	)
	return &gitEnv{t: t, env: env}
}

// run runs git in dir and returns stdout; stderr is part of the error.
func (g *gitEnv) run(dir string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = g.env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

func (g *gitEnv) must(dir string, args ...string) []byte {
	g.t.Helper()
	out, err := g.run(dir, nil, args...)
	if err != nil {
		g.t.Fatal(err)
	}
	return out
}

func (g *gitEnv) initRepo() string {
	dir := g.t.TempDir()
	g.must(dir, "init", "-q")
	return dir
}

// catBlobs reads blobs by id with one `git cat-file --batch`.
func (g *gitEnv) catBlobs(dir string, ids []string) map[string][]byte {
	g.t.Helper()
	out, err := g.run(dir, []byte(strings.Join(ids, "\n")+"\n"), "cat-file", "--batch")
	if err != nil {
		g.t.Fatal(err)
	}
	blobs := map[string][]byte{}
	for len(out) > 0 {
		nl := bytes.IndexByte(out, '\n')
		var id, typ string
		var size int
		if _, err := fmt.Sscanf(string(out[:nl]), "%s %s %d", &id, &typ, &size); err != nil {
			g.t.Fatalf("cat-file header %q: %v", out[:nl], err)
		}
		blobs[id] = out[nl+1 : nl+1+size]
		out = out[nl+1+size+1:]
	}
	return blobs
}

// indexEntries returns path → blob id from `git ls-files -s`.
func (g *gitEnv) indexEntries(dir string) map[string]string {
	out := g.must(dir, "ls-files", "-s", "-z")
	m := map[string]string{}
	for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if rec == "" {
			continue
		}
		meta, path, _ := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		m[path] = f[1]
	}
	return m
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
