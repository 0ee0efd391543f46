package cmd

import (
	"bytes"
	"io"
	"os"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"

	"github.com/mulligan-dev/mulligan/scrub"
)

// IOStreams is the one place that knows where output goes, whether it is a terminal and whether
// color is on. Commands never look at os.Stdout or the environment for these themselves.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	outTTY, errTTY bool
	colorOff       bool
	getenv         func(string) string
}

// scrub routes Out and ErrOut through scrubbing writers (SPEC §7: secrets are scrubbed from
// everything mulligan prints but the raw log), and returns the function that flushes them and
// puts the streams back.
func (s *IOStreams) scrub(sc *scrub.Scrubber) func() {
	out, errOut := s.Out, s.ErrOut
	so, se := scrub.NewWriter(out, sc), scrub.NewWriter(errOut, sc)
	s.Out, s.ErrOut = so, se
	return func() {
		so.Flush()
		se.Flush()
		s.Out, s.ErrOut = out, errOut
	}
}

// noScrub turns scrubbing off (--no-scrub).
func (s *IOStreams) noScrub() {
	for _, w := range []io.Writer{s.Out, s.ErrOut} {
		if sw, ok := w.(*scrub.Writer); ok {
			sw.SetScrubber(nil)
		}
	}
}

// Scrubber is the scrubber of the output (nil with --no-scrub), for printers that scrub a value
// before it is laid out (a JSON payload inside a text line).
func (s *IOStreams) Scrubber() *scrub.Scrubber {
	if sw, ok := s.Out.(*scrub.Writer); ok {
		return sw.Scrubber()
	}
	return nil
}

// RawOut is standard output without scrubbing: only for the raw attempt log (`logs`).
func (s *IOStreams) RawOut() io.Writer {
	if sw, ok := s.Out.(*scrub.Writer); ok {
		return sw.Raw()
	}
	return s.Out
}

// System returns the streams of this process.
func System() *IOStreams {
	s := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, getenv: os.Getenv}
	s.outTTY = isTerminal(os.Stdout)
	s.errTTY = isTerminal(os.Stderr)
	return s
}

// Test returns streams backed by buffers, never a terminal, with an empty environment.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: errOut, getenv: func(string) string { return "" }}, out, errOut
}

func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// IsStderrTTY tells whether standard error is a terminal (the live status line goes there).
func (s *IOStreams) IsStderrTTY() bool { return s.errTTY }

// DisableColor turns color off for the rest of the process (--no-color).
func (s *IOStreams) DisableColor() { s.colorOff = true; color.NoColor = true }

// ColorEnabled applies the usual conventions: NO_COLOR (any value), CLICOLOR=0 and TERM=dumb turn
// color off, CLICOLOR_FORCE turns it on for non-terminals, otherwise color only on a terminal.
func (s *IOStreams) ColorEnabled() bool {
	if s.colorOff || s.getenv("NO_COLOR") != "" || s.getenv("CLICOLOR") == "0" || s.getenv("TERM") == "dumb" {
		return false
	}
	if f := s.getenv("CLICOLOR_FORCE"); f != "" && f != "0" {
		return true
	}
	return s.outTTY
}

// apply sets fatih/color's global switch from the streams' decision.
func (s *IOStreams) apply() { color.NoColor = !s.ColorEnabled() }
