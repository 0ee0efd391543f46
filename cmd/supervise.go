package cmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

func superviseCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "supervise",
		Usage: "resume runs whose process died and parked runs whose quota reset has passed, each in a detached resume",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "run", Aliases: []string{"r"}, Usage: "supervise `RUN` (repeatable)"},
			&cli.BoolFlag{Name: "all", Usage: "supervise every run of this repository"},
			&cli.DurationFlag{Name: "interval", Value: 10 * time.Second, Usage: "time between sweeps"},
			&cli.DurationFlag{Name: "stale-threshold", Value: 30 * time.Second, Usage: "a heartbeat older than this is stale (owners on other hosts)"},
			&cli.IntFlag{Name: "max-concurrent", Value: 3, Usage: "resumes running at once, at most"},
			&cli.IntFlag{Name: "max-resumes", Value: 3, Usage: "hold a run blocked (resume-exhausted) after this many resumes in a row without a finished attempt"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the decisions, change nothing"},
			&cli.BoolFlag{Name: "once", Usage: "one sweep, then exit"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError("name runs with -r RUN, or pass --all", "supervise takes no arguments")
			}
			refs := c.StringSlice("run")
			if len(refs) == 0 && !c.Bool("all") {
				return usageError("e.g. mulligan supervise --all, or mulligan supervise -r k3f9", "supervise needs -r RUN or --all")
			}
			if len(refs) > 0 && c.Bool("all") {
				return usageError("pass either -r RUN… or --all", "-r and --all together")
			}
			if c.Int("max-concurrent") < 1 {
				return usageError("e.g. --max-concurrent 3", "--max-concurrent must be at least 1")
			}
			if c.Duration("interval") <= 0 || c.Duration("stale-threshold") <= 0 {
				return usageError("e.g. --interval 10s --stale-threshold 30s", "--interval and --stale-threshold must be positive")
			}
			return runSupervise(c, g, refs)
		},
	}
}

func runSupervise(c *cli.Context, g *globals, refs []string) error {
	st, err := openState(g)
	if err != nil {
		return err
	}
	if c.Bool("dry-run") {
		st.noHooks = true // a dry run acts on nothing, hooks included
	}
	defer st.Close()
	var ids []string
	for _, ref := range refs {
		id, err := st.resolveRun(c.Context, ref)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ctx := c.Context // cancelled on SIGINT, SIGTERM and SIGHUP for every command (interruptible)

	var running atomic.Int64 // detached resumes this supervisor started that still run
	once := c.Bool("once")
	spawn := func(run *store.Run, epoch int64) (int, error) {
		// The resume claims the run from the epoch this supervisor holds.
		h := &attempt.Handoff{Kind: attempt.HandoffResume, Run: run.ID, Dir: run.Worktree, Output: "text", Mode: attempt.ResumePlain, Epoch: epoch}
		cmd, _, err := h.Start(exe, "mulligan", st.repo.CommonDir(), "supervise.log", os.Environ())
		if err != nil {
			return 0, err
		}
		pid := cmd.Process.Pid
		running.Add(1)
		exited := make(chan struct{})
		go func() { cmd.Wait(); running.Add(-1); close(exited) }()
		// Until the resume has claimed the run from this supervisor, this process is its owner:
		// exiting before would let another supervisor take the run for dead and resume it twice.
		deadline := time.After(30 * time.Second)
		for {
			select {
			case <-exited:
				return pid, nil // it died before taking over: its log says why
			case <-deadline:
				return pid, nil
			case <-time.After(20 * time.Millisecond):
			}
			if r, err := st.getRun(context.WithoutCancel(ctx), run.ID); err == nil && r.Owner != nil && r.Owner.PID == pid {
				return pid, nil
			}
		}
	}
	last := map[string]string{}
	for {
		decisions, err := attempt.Supervise(ctx, st.db, attempt.SuperviseOptions{
			Runs: ids, StaleThreshold: c.Duration("stale-threshold"), MaxResumes: c.Int("max-resumes"),
			Slots: c.Int("max-concurrent") - int(running.Load()), DryRun: c.Bool("dry-run"), Spawn: spawn,
			OpenRepo: snapshot.Open,
			MovedOn: func(run *store.Run, inFlight bool) (string, bool, error) {
				return movedOn(ctx, st, run, inFlight)
			},
		})
		for _, d := range decisions {
			// A loop repeats a decision that did not change (a healthy run, a quota not reset
			// yet) only once.
			if key := d.Action + "\x00" + d.Reason; last[d.Run] != key {
				printDecision(g, d, st.repo)
				last[d.Run] = key
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil // SIGINT/SIGTERM ended the sweep: the usual way to stop a loop
			}
			return err
		}
		if !c.Bool("dry-run") && !once {
			// hooks of runs whose process died after their last change (a finished run is not
			// resumed, so nobody else would deliver them); --once leaves it to Close
			st.deliverOrphanHooks(ctx, g.io.ErrOut)
		}
		if once {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(c.Duration("interval")):
		}
	}
}

func printDecision(g *globals, d attempt.SuperviseDecision, repo *snapshot.Repo) {
	if g.json() {
		writeJSONLine(g.io.Out, d)
		return
	}
	action := d.Action
	if d.DryRun {
		action += " (dry run)"
	}
	line := fmt.Sprintf("%s %s: %s (%s)", action, d.Run, d.Reason, d.State)
	if d.PID != 0 {
		log := filepath.Join("mulligan", "logs", d.Run, "supervise.log")
		if dir, err := attempt.LogDir(repo.CommonDir(), d.Run); err == nil {
			log = hereRelative(filepath.Join(dir, "supervise.log"), repo.Root())
		}
		line += fmt.Sprintf("; pid %d, log in %s", d.PID, log)
	}
	fmt.Fprintln(g.io.Out, line)
}

// hereRelative is path as seen from the current directory when the user stands in the working
// tree root (.git/mulligan/…, or ../.git/mulligan/… from a subdirectory), else path itself.
func hereRelative(path, root string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		wd = real
	}
	if in, err := filepath.Rel(root, wd); err != nil || in == ".." || strings.HasPrefix(in, "../") {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil {
		return rel
	}
	return path
}

// movedOn compares a run's working tree with the one it left (attempt.TreeMovedOnEnded), opening
// the run's own worktree when it is not this one.
func movedOn(ctx context.Context, st *state, run *store.Run, inFlight bool) (string, bool, error) {
	repo := st.repo
	if run.Worktree != "" && run.Worktree != repo.Root() {
		other, err := snapshot.Open(run.Worktree)
		if err != nil {
			return "", false, err
		}
		defer other.Close()
		repo = other
	}
	return attempt.TreeMovedOnEnded(ctx, repo, st.db, run, inFlight)
}
