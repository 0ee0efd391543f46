package store

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Under joins names under dir, each as exactly one path component: a name that is empty, "." or
// "..", or holds a '/', a '\' or a NUL byte is refused. Every path mulligan builds from a name —
// a run id, a task id, an attempt's file — goes through it, so no name can lead a log, a prompt
// or an autopsy out of the directory it belongs in, whatever the name holds.
func Under(dir string, names ...string) (string, error) {
	p := dir
	for _, n := range names {
		if n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\\\x00") {
			return "", fmt.Errorf("%q cannot name a file under %s: a name must be one path component", n, dir)
		}
		p = filepath.Join(p, n)
	}
	if rel, err := filepath.Rel(dir, p); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside %s", p, dir)
	}
	return p, nil
}

// LogDir is <commonDir>/mulligan/logs/<run>: where a run's attempt logs, prompts and outputs
// live.
func LogDir(commonDir, run string) (string, error) {
	return Under(filepath.Join(commonDir, "mulligan", "logs"), run)
}
