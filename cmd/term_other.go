//go:build !unix

package cmd

import "os"

// StderrWidth is 0 where the terminal's size cannot be read: the status line assumes 80 columns.
func (s *IOStreams) StderrWidth() int { return 0 }

// watchResize never fires where there is no SIGWINCH.
func watchResize() (<-chan os.Signal, func()) { return nil, func() {} }
