package attempt

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/mulligan-dev/mulligan/reap"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// StartDetached starts the program at path with argv (argv[0] is the name it sees) in a session
// of its own (setsid: no terminal, its own process group, so the caller's signals and exit do
// not reach it), stdin from /dev/null and stdout and stderr appended to logPath. The caller
// must Wait for it or let it be reparented by exiting.
func StartDetached(path string, argv, env []string, dir, logPath string) (*exec.Cmd, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child holds its own descriptors
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Dir: dir, Stdin: null, Stdout: logf, Stderr: logf,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	reap.Own(cmd.Process.Pid) // meant to outlive this process: not an orphan to end
	return cmd, nil
}

// LogDir is <common>/mulligan/logs/<run>: where a run's logs live (store.LogDir).
func LogDir(commonDir, run string) (string, error) {
	return store.LogDir(commonDir, run)
}

// Kinds of work a Handoff sends to the background.
const (
	// HandoffRun starts a new run under the id the foreground process printed (run --detach).
	HandoffRun = "run"
	// HandoffResume resumes a run (resume --detach, and supervise's resumes).
	HandoffResume = "resume"
	// HandoffContinue continues a run after an operator's decision the foreground process
	// recorded (retry-task, prompt, stop, approve, reject, timetravel --resume, with --detach).
	HandoffContinue = "continue"
)

// Handoff is what a process that sends work to the background hands the process it starts: the
// work itself, parsed and checked by the foreground process, so the background one re-parses no
// command line and reads no variable from its environment. It travels as a JSON file of the
// run's log directory (mode 0600) named in the child's argv; the child reads and removes it.
type Handoff struct {
	Kind string `json:"kind"`
	Run  string `json:"run"`
	// Dir is the directory the foreground command ran in (absolute): relative paths in the
	// hand-off (File, AdHoc's prompt file) are read from there, as the foreground would have.
	Dir       string `json:"dir"`
	Output    string `json:"output"` // "text" or "json"
	NoAutopsy bool   `json:"no_autopsy"`

	// HandoffRun: the task file (as given: relative to Dir; "" for the default) and the tasks
	// asked for, or the ad-hoc run's options; the spend limit.
	File       string                 `json:"file,omitempty"`
	Tasks      []string               `json:"tasks,omitempty"`
	AdHoc      *taskfile.AdHocOptions `json:"adhoc,omitempty"`
	MaxCostUSD *float64               `json:"max_cost_usd,omitempty"`
	Isolate    bool                   `json:"isolate,omitempty"` // run --isolate

	// HandoffResume: the mode, --reload [-f FILE], and --force (resume over a tree that moved
	// on). For HandoffContinue, Force says the decision fenced a live owner that the background
	// process takes the run over from.
	Mode       string `json:"mode,omitempty"`
	Reload     bool   `json:"reload,omitempty"`
	ReloadFile string `json:"reload_file,omitempty"`
	Force      bool   `json:"force,omitempty"`
	// Epoch is the owner epoch the handing process holds (supervise claims a dead run before it
	// hands it over): the resume claims the run from that epoch. 0: none.
	Epoch int64 `json:"epoch,omitempty"`
}

// Start writes the hand-off into the run's log directory under commonDir and starts the
// program at exe on it (StartDetached: own session, output appended to logName in the same
// directory), with argv `mulligan __handoff FILE`. It returns the started process and its log.
func (h *Handoff) Start(exe, argv0, commonDir, logName string, env []string) (*exec.Cmd, string, error) {
	dir, err := LogDir(commonDir, h.Run)
	if err != nil {
		return nil, "", err
	}
	data, err := json.Marshal(h)
	if err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	f, err := os.CreateTemp(dir, "handoff-*.json")
	if err != nil {
		return nil, "", err
	}
	path := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return nil, "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return nil, "", err
	}
	logPath := filepath.Join(dir, logName)
	cmd, err := StartDetached(exe, []string{argv0, "__handoff", path}, env, h.Dir, logPath)
	if err != nil {
		os.Remove(path)
		return nil, "", err
	}
	return cmd, logPath, nil
}

// ReadHandoff reads the hand-off at path and removes the file: the work is this process's now.
func ReadHandoff(path string) (*Handoff, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the hand-off: %w", err)
	}
	os.Remove(path)
	var h Handoff
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("read the hand-off %s: %w", path, err)
	}
	switch h.Kind {
	case HandoffRun, HandoffResume, HandoffContinue:
	default:
		return nil, fmt.Errorf("read the hand-off %s: unknown kind %q", path, h.Kind)
	}
	if h.Run == "" || !filepath.IsAbs(h.Dir) {
		return nil, fmt.Errorf("read the hand-off %s: no run or no absolute directory", path)
	}
	return &h, nil
}
