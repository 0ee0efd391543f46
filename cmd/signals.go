package cmd

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/mulligan-dev/mulligan/attempt"
)

// interruptible is ctx cancelled when the process receives SIGINT, SIGTERM or SIGHUP (its
// terminal closed: a stop like SIGTERM), with the cause a run records (attempt.CancelCause). Every command stops through its context, and what it
// started under it (a clean or smudge filter, a hook) is ended with its process group: without
// this, the signal's default action would end mulligan and leave those running.
func interruptible(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		select {
		case s := <-sigs:
			cancel(attempt.CancelCause(s.(syscall.Signal)))
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel(nil)
	}
}

// signalled gives err, an error a command returned after a signal cancelled ctx, the exit code
// of that signal (SPEC §8: 130 for SIGINT, 5 for SIGTERM and SIGHUP) unless it already has a code of its own.
func signalled(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || exitCode(err) != ExitFailed {
		return err
	}
	code := signalCode(ctx)
	if code == 0 {
		return err
	}
	var e *Error
	if errors.As(err, &e) {
		c := *e
		c.Code = code
		return &c
	}
	return withHint(code, err)
}

// stoppedBySignal is what a command that waits until it is stopped (`logs -f`) returns once ctx
// is done: the signal's exit code, silently, or nil when ctx ended otherwise.
func stoppedBySignal(ctx context.Context) error {
	if code := signalCode(ctx); code != 0 {
		return exitError{code: code}
	}
	return nil
}

// signalCode is the exit code of the signal that cancelled ctx, 0 when none did.
func signalCode(ctx context.Context) int {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, attempt.CancelCause(syscall.SIGINT)):
		return ExitInterrupted
	case errors.Is(cause, attempt.CancelCause(syscall.SIGTERM)), errors.Is(cause, attempt.CancelCause(syscall.SIGHUP)):
		return ExitCancelled
	}
	return 0
}
