// Package clis holds the end-to-end tests of mulligan driving the real agent CLIs (installed from
// npm, versions pinned in testdata/clis) against the fake model API of testdata/modelapi. It is a
// package of its own so the npm install and the CLIs' start-up have their own test timeout.
package clis

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/mulligan-dev/mulligan/cmd"
	"github.com/mulligan-dev/mulligan/testdata/modelapi"
	"github.com/mulligan-dev/mulligan/testdata/scripttest"
)

// TestMain registers mulligan and the script helpers as commands of the test binary.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"mulligan": func() { os.Exit(cmd.Main()) },
		"status":   func() { os.Exit(scripttest.Status(os.Args[1:])) },
		"jget":     func() { os.Exit(scripttest.JSONGet(os.Args[1:])) },
	})
}

// The real agent CLIs, pinned in testdata/clis/package.json (with its lock file), are installed
// with npm into a cache directory shared by every test run of this machine, then driven under
// `mulligan run` against testdata/modelapi on a loopback port. No request leaves the machine:
// every CLI is pointed at the fake, and its other traffic is switched off.

// agentCLIs are the commands the package installs, each a testscript condition ([claude]).
var agentCLIs = []string{"claude", "codex", "gemini", "opencode"}

type cliInstall struct {
	bin     string          // the node_modules/.bin directory
	have    map[string]bool // CLIs npm linked into bin
	skipped string          // why none can be used
}

var (
	clisOnce sync.Once
	clis     cliInstall
)

// installCLIs installs the pinned CLIs once per cache directory (MULLIGAN_CLIS_DIR, or the user
// cache dir keyed by the lock file's hash), under a file lock so concurrent test binaries share
// one install.
func installCLIs() cliInstall {
	clisOnce.Do(func() {
		clis = doInstallCLIs()
	})
	return clis
}

func doInstallCLIs() cliInstall {
	src := filepath.Join("..", "testdata", "clis")
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		return cliInstall{skipped: err.Error()}
	}
	dir := os.Getenv("MULLIGAN_CLIS_DIR")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return cliInstall{skipped: "no cache directory: " + err.Error()}
		}
		sum := sha256.Sum256(lock)
		dir = filepath.Join(cache, "mulligan-test-clis", hex.EncodeToString(sum[:6]))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return cliInstall{skipped: err.Error()}
	}
	lf, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return cliInstall{skipped: err.Error()}
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return cliInstall{skipped: err.Error()}
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
	stamp := filepath.Join(dir, ".installed")
	if old, err := os.ReadFile(stamp); err != nil || !bytes.Equal(old, lock) {
		if _, err := exec.LookPath("npm"); err != nil {
			return cliInstall{skipped: "npm is not installed (the real agent CLIs come from the npm registry)"}
		}
		for _, f := range []string{"package.json", "package-lock.json"} {
			data, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				return cliInstall{skipped: err.Error()}
			}
			if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
				return cliInstall{skipped: err.Error()}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		// npm install, not npm ci: npm ci refuses the lock file over the optional per-platform
		// packages opencode-ai lists (npm 11 leaves some out of the lock); the versions are
		// still the lock's.
		cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return cliInstall{skipped: fmt.Sprintf("npm install of testdata/clis failed: %v\n%s", err, lastLines(out, 10))}
		}
		if err := os.WriteFile(stamp, lock, 0o644); err != nil {
			return cliInstall{skipped: err.Error()}
		}
	}
	in := cliInstall{bin: filepath.Join(dir, "node_modules", ".bin"), have: map[string]bool{}}
	// A CLI is there when npm linked it; it is not started here (four CLIs' start-up costs
	// more than a script that skips on a broken one would).
	for _, c := range agentCLIs {
		fi, err := os.Stat(filepath.Join(in.bin, c))
		in.have[c] = err == nil && fi.Mode()&0o111 != 0
	}
	return in
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

type apiKey struct{}

// TestAgentCLIs runs testdata/clis/script/*.txtar: the real CLIs under mulligan against the fake
// model API. Each script gets its own server; `api` commands script it and read its log.
func TestAgentCLIs(t *testing.T) {
	if testing.Short() {
		t.Skip("the real agent CLIs are not run with -short")
	}
	in := installCLIs()
	if in.skipped != "" {
		t.Skip("the real agent CLIs are unavailable: " + in.skipped)
	}
	files, err := slowestFirst(filepath.Join("..", "testdata", "clis", "script"))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Files:               files,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			if err := scripttest.HermeticGit(env); err != nil {
				return err
			}
			srv, err := modelapi.Start(nil)
			if err != nil {
				return err
			}
			env.Defer(func() { srv.Close() })
			srv.LogTo(filepath.Join(env.WorkDir, "api.jsonl"))
			env.Values[apiKey{}] = srv
			env.Setenv("PATH", in.bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("MODELAPI_URL", srv.URL)
			for k, v := range cliEnv(srv.URL, env.Getenv("HOME")) {
				env.Setenv(k, v)
			}
			return writeCLIConfig(env.Getenv("HOME"), srv.URL)
		},
		Condition: func(cond string) (bool, error) {
			for _, c := range agentCLIs {
				if cond == c {
					return in.have[c], nil
				}
			}
			return false, nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"api": apiCmd},
	})
}

// startOrder ranks the CLIs by what one of their runs costs, the slowest first: opencode's
// start-up takes seconds of CPU, then gemini-cli's Node bundle, claude's and codex's binaries.
var startOrder = []string{"opencode", "gemini", "claude", "codex"}

// slowestFirst lists the scripts in dir with the slowest CLI's first, so that the longest
// scripts start while the short ones fill the other -parallel slots, instead of starting last
// (in name order, opencode's) and running on alone.
func slowestFirst(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no scripts in %s: %v", dir, err)
	}
	rank := func(f string) int {
		for i, c := range startOrder {
			if strings.HasPrefix(filepath.Base(f), c+"_") {
				return i
			}
		}
		return len(startOrder)
	}
	sort.SliceStable(files, func(i, j int) bool { return rank(files[i]) < rank(files[j]) })
	return files, nil
}

// cliEnv points every CLI at the fake and switches off what else it would reach: update checks,
// telemetry, feedback surveys.
func cliEnv(url, home string) map[string]string {
	return map[string]string{
		// claude
		"ANTHROPIC_BASE_URL":                       url,
		"ANTHROPIC_API_KEY":                        "sk-ant-modelapi",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_AUTOUPDATER":                      "1",
		// codex: the provider of $CODEX_HOME/config.toml reads this key
		"OPENAI_API_KEY": "sk-modelapi",
		"CODEX_HOME":     filepath.Join(home, ".codex"),
		// gemini
		"GEMINI_API_KEY":             "modelapi",
		"GOOGLE_GEMINI_BASE_URL":     url,
		"GEMINI_CLI_TRUST_WORKSPACE": "true",
		"GEMINI_CLI_NO_RELAUNCH":     "true", // no second node process with a larger heap
		// opencode: its provider is in $XDG_CONFIG_HOME/opencode/opencode.json (writeCLIConfig).
		// It installs @opencode-ai/plugin into its config directory in the background with the
		// npm code it bundles, which reads npm's own settings: the registry is the fake (a 404).
		"OPENCODE_DISABLE_AUTOUPDATE":      "1",
		"OPENCODE_DISABLE_MODELS_FETCH":    "1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD":    "1",
		"npm_config_registry":              url + "/npm/",
	}
}

// writeCLIConfig writes the settings files of the CLIs that take no environment variable for
// what the tests need: codex's model provider (the fake, with its own retries off),
// gemini-cli's auth method and attempts (1: mulligan's policy retries, not gemini's loop) and
// opencode's provider (the fake's Chat Completions through the openai-compatible package it
// bundles; a cost per million tokens so that its step-finish events carry a spend). opencode's
// own retries have no setting (see agentcli/preset_api.go).
func writeCLIConfig(home, url string) error {
	files := map[string]string{
		filepath.Join(home, ".codex", "config.toml"): `model = "gpt-5"
model_provider = "modelapi"

[features]
plugins = false

[analytics]
enabled = false

[model_providers.modelapi]
name = "modelapi"
base_url = "` + url + `/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`,
		filepath.Join(home, ".config", "opencode", "opencode.json"): `{
  "model": "modelapi/fake-model",
  "small_model": "modelapi/fake-model",
  "autoupdate": false,
  "share": "disabled",
  "provider": {
    "modelapi": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "modelapi",
      "options": {"baseURL": "` + url + `/v1", "apiKey": "sk-modelapi"},
      "models": {
        "fake-model": {
          "name": "fake model",
          "tool_call": true,
          "cost": {"input": 3, "output": 15, "cache_read": 0.3},
          "limit": {"context": 200000, "output": 8000}
        }
      }
    }
  }
}
`,
		filepath.Join(home, ".gemini", "settings.json"): `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true, "maxAttempts": 1}
}
`,
	}
	for path, text := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// apiCmd is the scripts' handle on the fake:
//
//	api script FILE        serve the turns in FILE (a JSON list of modelapi.Turn) from now on
//	api requests [API]     print the count of conversation requests answered (of that API)
//	api done               fail unless every scripted turn was reached
//	api messages N         print how many messages (turns of the conversation) the Nth
//	                       conversation request (from 1) carried
//	api spent N            print the uncached input, cache reads and output the fake reported
//	                       over the conversation requests from the Nth on (from 1)
//	api resume-at FILE KEY fail unless the time at KEY of the JSON in FILE is the last reset the
//	                       fake announced (to the minute: CLIs print clock times)
func apiCmd(ts *testscript.TestScript, neg bool, args []string) {
	srv := ts.Value(apiKey{}).(*modelapi.Server)
	if len(args) == 0 {
		ts.Fatalf("usage: api script FILE | api requests [API] | api done | api messages N | api spent N | api resume-at FILE KEY")
	}
	switch args[0] {
	case "script":
		if len(args) != 2 {
			ts.Fatalf("usage: api script FILE")
		}
		var turns []modelapi.Turn
		if err := json.Unmarshal([]byte(ts.ReadFile(args[1])), &turns); err != nil {
			ts.Fatalf("api script: %v", err)
		}
		srv.SetScript(turns)
	case "requests":
		n := 0
		for _, r := range srv.Requests() {
			if r.Scripted && (len(args) < 2 || r.API == args[1]) {
				n++
			}
		}
		fmt.Fprintf(ts.Stdout(), "%d\n", n)
	case "done":
		if left := srv.Remaining(); (left == 0) == neg {
			ts.Fatalf("api done: %d scripted turns not reached", left)
		}
	case "messages", "spent":
		if len(args) != 2 {
			ts.Fatalf("usage: api %s N", args[0])
		}
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 1 {
			ts.Fatalf("api %s: N must be a number from 1", args[0])
		}
		var scripted []modelapi.Request
		for _, r := range srv.Requests() {
			if r.Scripted {
				scripted = append(scripted, r)
			}
		}
		if n > len(scripted) {
			ts.Fatalf("api %s: only %d conversation requests", args[0], len(scripted))
		}
		req := scripted[n-1]
		if args[0] == "spent" {
			var u modelapi.Usage
			for _, r := range scripted[n-1:] {
				if r.Reported != nil {
					u.Input += r.Reported.Input
					u.CacheRead += r.Reported.CacheRead
					u.Output += r.Reported.Output
				}
			}
			fmt.Fprintf(ts.Stdout(), "input %d cache_read %d output %d\n", u.Input, u.CacheRead, u.Output)
			break
		}
		var body map[string]json.RawMessage
		if err := json.Unmarshal(req.Body, &body); err != nil {
			ts.Fatalf("api messages: request %d: %v", n, err)
		}
		var msgs []json.RawMessage
		for _, k := range []string{"messages", "input", "contents"} {
			if json.Unmarshal(body[k], &msgs) == nil && msgs != nil {
				break
			}
		}
		fmt.Fprintf(ts.Stdout(), "%d\n", len(msgs))
	case "resume-at":
		if len(args) != 3 {
			ts.Fatalf("usage: api resume-at FILE KEY")
		}
		var v any
		if err := json.Unmarshal([]byte(ts.ReadFile(args[1])), &v); err != nil {
			ts.Fatalf("api resume-at: %v", err)
		}
		for _, k := range strings.Split(args[2], ".") {
			switch x := v.(type) {
			case map[string]any:
				v = x[k]
			case []any:
				i, err := strconv.Atoi(k)
				if err != nil || i < 0 || i >= len(x) {
					ts.Fatalf("api resume-at: no index %q", k)
				}
				v = x[i]
			}
		}
		str, _ := v.(string)
		got, err := time.Parse(time.RFC3339Nano, str)
		if err != nil {
			ts.Fatalf("api resume-at: %s is %v, not a time", args[2], v)
		}
		want := time.Unix(srv.LastReset(), 0)
		if d := got.Sub(want); d < -time.Minute || d > time.Minute {
			ts.Fatalf("api resume-at: %s is %s, the fake announced %s", args[2], got.UTC().Format(time.RFC3339), want.UTC().Format(time.RFC3339))
		}
	default:
		ts.Fatalf("api: unknown subcommand %q", args[0])
	}
}
