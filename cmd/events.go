package cmd

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/store"
)

func eventsCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "events",
		Usage:     "the event stream of a run (or of every run with --all)",
		ArgsUsage: "[RUN]",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing new events until interrupted"},
			&cli.BoolFlag{Name: "all", Usage: "events of every run"},
			// Scrubbing is the default now (--no-scrub turns it off); the flag stays accepted.
			&cli.BoolFlag{Name: "scrub", Hidden: true},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("e.g. mulligan events k3f9", "events takes one run")
			}
			st, err := openState(g)
			if err != nil {
				return err
			}
			defer st.Close()
			run := ""
			if !c.Bool("all") {
				if run, err = st.resolveRun(c.Context, c.Args().First()); err != nil {
					return err
				}
			}
			var after int64
			for {
				var evs []store.Event
				if err := st.db.View(c.Context, func(tx *store.Tx) error {
					var err error
					evs, err = tx.Events(run, after, 1000)
					return err
				}); err != nil {
					return err
				}
				for _, ev := range evs {
					after = ev.Seq
					if g.json() {
						if err := writeJSONLine(g.io.Out, ev); err != nil {
							return err
						}
						continue
					}
					printEvent(g, ev)
				}
				if len(evs) == 1000 {
					continue
				}
				if !c.Bool("follow") {
					return nil
				}
				select {
				case <-c.Context.Done():
					return nil
				case <-time.After(250 * time.Millisecond):
				}
			}
		},
	}
}

func printEvent(g *globals, ev store.Event) {
	where := ev.Task
	if ev.Attempt > 0 {
		where = fmt.Sprintf("%s@%d", ev.Task, ev.Attempt)
	}
	payload := strings.TrimSpace(string(g.io.Scrubber().JSON(ev.Payload)))
	if payload == "null" {
		payload = ""
	}
	fmt.Fprintf(g.io.Out, "%6d  %s  %s  %-20s %s %s\n", ev.Seq, ev.Time.Local().Format("15:04:05.000"), ev.Run, ev.Type, where, payload)
}
