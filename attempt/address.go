package attempt

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// Address names an attempt: [RUN/]TASK[@N]. Run "" means the newest run; N 0 the latest attempt.
type Address struct {
	Run  string
	Task string
	N    int
}

func (a Address) String() string {
	s := a.Task
	if a.Run != "" {
		s = a.Run + "/" + s
	}
	if a.N > 0 {
		s += "@" + strconv.Itoa(a.N)
	}
	return s
}

var (
	addrRunRe  = lazyre.New(`^[0-9a-z]+$`)
	addrTaskRe = lazyre.New(`^[A-Za-z0-9._-]+$`)
)

// ParseAddress reads `fix-tests`, `fix-tests@2`, `k3f9/fix-tests`, `k3f9/fix-tests@latest`.
func ParseAddress(s string) (Address, error) {
	var a Address
	rest := s
	if run, task, ok := strings.Cut(rest, "/"); ok {
		if run != "last" && !addrRunRe.MatchString(run) {
			return a, fmt.Errorf("bad address %q: the run id %q is not lowercase letters and digits", s, run)
		}
		if run != "last" {
			a.Run = run
		}
		rest = task
	}
	task, n, hasN := strings.Cut(rest, "@")
	if !addrTaskRe.MatchString(task) {
		return a, fmt.Errorf("bad address %q: want [RUN/]TASK[@N], e.g. fix-tests@2", s)
	}
	a.Task = task
	if hasN && n != "latest" {
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 {
			return a, fmt.Errorf("bad address %q: the attempt number %q is not 1, 2, 3… or latest", s, n)
		}
		a.N = v
	}
	return a, nil
}
