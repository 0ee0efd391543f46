//go:build !linux

package snapshot

import "errors"

// watcher is inotify's on Linux; elsewhere there is none and every walk is a full one.
type watcher struct{}

var testHookNoWatch bool

func newWatcher() (*watcher, error) {
	return nil, errors.New("watching the working tree is implemented on Linux only")
}

func (w *watcher) add(dirfd int, path string) {}

func (w *watcher) watched(path string) bool { return false }

type changes struct {
	dirty map[string]struct{}
	full  string
}

func (w *watcher) take() (changes, error) { return changes{}, errors.New("no watcher") }

func (w *watcher) close() {}

func (w *watcher) count() uint64 { return 0 }

func (w *watcher) quiet() bool { return false }
