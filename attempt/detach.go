package attempt

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/mulligan-dev/mulligan/reap"
	"github.com/mulligan-dev/mulligan/store"
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
