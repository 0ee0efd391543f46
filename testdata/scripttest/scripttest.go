// Package scripttest holds what every testscript suite of mulligan shares: a hermetic git for
// each script and the commands scripts use to check exit codes and JSON.
package scripttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"
)

// HermeticGit gives every script a git that reads no configuration of this machine (STYLE.md #10).
func HermeticGit(env *testscript.Env) error {
	home := filepath.Join(env.WorkDir, ".home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	gitconfig := filepath.Join(home, ".gitconfig")
	cfg := "[user]\n\tname = Test User\n\temail = test@example.com\n" +
		"[init]\n\tdefaultBranch = main\n[commit]\n\tgpgSign = false\n" +
		"[maintenance]\n\tauto = false\n[gc]\n\tauto = 0\n[protocol \"file\"]\n\tallow = always\n"
	if err := os.WriteFile(gitconfig, []byte(cfg), 0o600); err != nil {
		return err
	}
	env.Setenv("HOME", home)
	env.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	// mulligan's worktrees go under $XDG_DATA_HOME/mulligan/worktrees (SPEC §4.1): the script's own.
	env.Setenv("XDG_DATA_HOME", filepath.Join(home, ".local", "share"))
	env.Setenv("MULLIGAN_WORKTREES", "")
	env.Setenv("GIT_CONFIG_GLOBAL", gitconfig)
	env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	env.Setenv("GIT_TERMINAL_PROMPT", "0")
	env.Setenv("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
	env.Setenv("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
	env.Setenv("LC_ALL", "C")
	env.Setenv("NO_COLOR", "1")
	return nil
}

// Status runs `status N CMD ARG…`: CMD with the script's environment and streams, and
// succeeds only when CMD exits with status N. testscript's `! exec` checks only "non-zero"; the
// exit codes of SPEC §8 are part of the contract, so scripts check them exactly.
func Status(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: status N CMD [ARG…]")
		return 2
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "status: N must be a number")
		return 2
	}
	c := exec.Command(args[1], args[2:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Forward the signals a script sends (`kill -INT`) to the command under test.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	if err := c.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "status: %v\n", err)
		return 1
	}
	go func() {
		for s := range sigs {
			c.Process.Signal(s)
		}
	}()
	got := 0
	if err := c.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			fmt.Fprintf(os.Stderr, "status: %v\n", err)
			return 1
		}
		got = ee.ExitCode()
	}
	if got != want {
		fmt.Fprintf(os.Stderr, "status: %s exited %d, want %d\n", args[1], got, want)
		return 1
	}
	return 0
}

// JSONGet runs `jget FILE KEY[.KEY…]` and prints the value (strings bare, the rest as JSON).
// Numeric keys index arrays.
func JSONGet(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: jget FILE KEY[.KEY…]")
		return 2
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		fmt.Fprintf(os.Stderr, "jget: %s: %v\n", args[0], err)
		return 1
	}
	for _, k := range strings.Split(args[1], ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[k]; !ok {
				fmt.Fprintf(os.Stderr, "jget: no key %q\n", k)
				return 1
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				fmt.Fprintf(os.Stderr, "jget: no index %q\n", k)
				return 1
			}
			v = x[i]
		default:
			fmt.Fprintf(os.Stderr, "jget: %q is not an object\n", k)
			return 1
		}
	}
	if s, ok := v.(string); ok {
		fmt.Println(s)
		return 0
	}
	out, _ := json.Marshal(v)
	fmt.Println(string(out))
	return 0
}
