//go:build unix

package cmd

import (
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

// StderrWidth is the width in columns of the terminal on standard error, 0 when it is not one.
func (s *IOStreams) StderrWidth() int {
	f, ok := s.ErrOut.(*os.File)
	if !ok || !s.errTTY {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// watchResize delivers on the channel whenever the terminal is resized (SIGWINCH).
func watchResize() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, unix.SIGWINCH)
	return ch, func() { signal.Stop(ch) }
}
