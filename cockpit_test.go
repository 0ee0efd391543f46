package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// The commands of the scripts of `top` and `report` (testdata/script/top_*.txtar, report_*.txtar).

// tmuxSession runs `tmuxsession COLS ROWS`: a tmux server on $WORK/tmux.sock with a session t
// of that size, started with the script's environment and killed when the script ends, failed
// or not (a failed script's server, and the top in it, would otherwise run on).
func tmuxSession(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: tmuxsession COLS ROWS")
	}
	sock := filepath.Join(ts.Getenv("WORK"), "tmux.sock")
	ts.Check(ts.Exec("tmux", "-u", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-x", args[0], "-y", args[1], "-s", "t"))
	ts.Defer(func() { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() })
}

// waitScreen runs `waitscreen [-not] SOCKET REGEXP`: it reads the tmux pane of the server at
// SOCKET (session t) until REGEXP (multi-line) matches it, or with -not until it no longer does,
// for up to a minute, and prints the screen it stopped at. A screen is awaited, never slept for.
func waitScreen(args []string) int {
	not := len(args) > 0 && args[0] == "-not"
	if not {
		args = args[1:]
	}
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: waitscreen [-not] SOCKET REGEXP")
		return 2
	}
	re, err := regexp.Compile("(?m)" + args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var screen []byte
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(30 * time.Millisecond) {
		screen, err = exec.Command("tmux", "-S", args[0], "capture-pane", "-p", "-t", "t").Output()
		if err != nil {
			continue
		}
		if re.Match(screen) != not {
			os.Stdout.Write(screen)
			return 0
		}
	}
	fmt.Fprintf(os.Stderr, "waitscreen: after a minute the screen %s %q:\n%s", map[bool]string{false: "does not match", true: "still matches"}[not], args[1], screen)
	return 1
}

// browserCheck runs `browsercheck REPORT SCREENSHOT`: it opens the HTML report in headless
// Chromium, takes a screenshot of it and reads its DOM, then checks that the page names every
// attempt of the run (`mulligan show -o json`) and holds every changed line of each one's diff
// (`mulligan diff`), and that the file loads nothing from anywhere.
func browserCheck(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: browsercheck REPORT SCREENSHOT")
		return 2
	}
	page, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if m := regexp.MustCompile(`(?i)<(script|link|img|iframe|object|embed)\b|url\(|@import`).Find(page); m != nil {
		fmt.Fprintf(os.Stderr, "browsercheck: the report loads or runs something: %s\n", m)
		return 1
	}
	url := "file://" + must(filepath.Abs(args[0]))
	if _, err := chromium("--screenshot="+must(filepath.Abs(args[1])), "--window-size=1200,1600", url); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if png, err := os.ReadFile(args[1]); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		fmt.Fprintf(os.Stderr, "browsercheck: no screenshot was taken (%v)\n", err)
		return 1
	}
	dom, err := chromium("--dump-dom", url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	text := html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(string(dom), ""))

	out, err := exec.Command("mulligan", "show", "-o", "json").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mulligan show:", err)
		return 1
	}
	var run struct {
		ID    string `json:"id"`
		Tasks []struct {
			ID       string `json:"id"`
			Attempts []struct {
				N    int     `json:"n"`
				Tree *string `json:"tree"`
			} `json:"attempts"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(out, &run); err != nil {
		fmt.Fprintln(os.Stderr, "mulligan show:", err)
		return 1
	}
	attempts, lines := 0, 0
	for _, t := range run.Tasks {
		for _, a := range t.Attempts {
			addr := fmt.Sprintf("%s/%s@%d", run.ID, t.ID, a.N)
			if !strings.Contains(text, addr) {
				fmt.Fprintf(os.Stderr, "browsercheck: the page does not name %s\n", addr)
				return 1
			}
			attempts++
			if a.Tree == nil {
				continue
			}
			diff, err := exec.Command("mulligan", "diff", addr).Output()
			if err != nil {
				fmt.Fprintf(os.Stderr, "mulligan diff %s: %v\n", addr, err)
				return 1
			}
			for _, l := range strings.Split(string(diff), "\n") {
				if (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-")) && !strings.Contains(text, l) {
					fmt.Fprintf(os.Stderr, "browsercheck: the page lacks the line %q of %s's diff\n", l, addr)
					return 1
				}
				lines++
			}
		}
	}
	fmt.Printf("browsercheck: %d attempts and %d diff lines on the page\n", attempts, lines)
	return 0
}

// chromium runs headless Chromium on a fresh profile, with nothing that reaches the network.
func chromium(args ...string) ([]byte, error) {
	profile, err := os.MkdirTemp("", "chromium-profile-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(profile)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "chromium", append([]string{"--headless", "--no-sandbox", "--disable-gpu",
		"--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--user-data-dir=" + profile}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}
