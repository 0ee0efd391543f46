package cmd

import (
	"bytes"
	"io"
	"os"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"
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
