package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/compensate"
	"github.com/mulligan-dev/mulligan/store"
)

// hooksCommand is `mulligan hooks [RUN]`: the hook outbox of a run, and redelivery of the
// deliveries that failed.
func hooksCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "hooks",
		Usage:     "list a run's hook deliveries and their states; --redeliver runs the failed ones again",
		ArgsUsage: "[RUN]",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "redeliver", Usage: "deliver the failed hooks again, with the same MULLIGAN_DELIVERY_ID"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("e.g. mulligan hooks k3f9", "hooks takes one run")
			}
			if c.Bool("redeliver") {
				st, id, err := openRun(c.Context, g, c.Args().First())
				if err != nil {
					return err
				}
				defer st.Close()
				return redeliverHooks(c.Context, g, st, id)
			}
			id, ds, err := readRunList(c, g, (*store.Tx).HookDeliveries)
			if err != nil || g.json() {
				return err
			}
			if len(ds) == 0 {
				fmt.Fprintf(g.io.Out, "run %s fired no hooks\n", id)
				return nil
			}
			tw := tabwriter.NewWriter(g.io.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tFOR\tHOOK\tSTATE\tTRIES\tDELIVERY ID\tCOMMAND\tERROR")
			for _, d := range ds {
				what := "run"
				if d.TaskID != "" {
					what = d.TaskID
					if d.Attempt != 0 {
						what += fmt.Sprintf("@%d", d.Attempt)
					}
				}
				errText := "-"
				if d.Error != "" {
					errText, _, _ = strings.Cut(d.Error, "\n")
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", d.ID, what, d.Hook, d.State, d.Tries,
					d.DeliveryID, quoteArgv(d.Command), errText)
			}
			return tw.Flush()
		},
	}
}

func redeliverHooks(ctx context.Context, g *globals, st *state, id string) error {
	var n int
	if err := st.db.Update(ctx, func(tx *store.Tx) error {
		var err error
		n, err = tx.RedeliverHooks(id)
		return err
	}); err != nil {
		return err
	}
	if n == 0 {
		fmt.Fprintf(g.io.Out, "run %s has no failed hook delivery\n", id)
		return nil
	}
	results, err := st.hooks().DeliverRun(ctx, id)
	if err != nil {
		return err
	}
	failed := 0
	for _, r := range results {
		if r.Err != nil {
			failed++
			fmt.Fprintf(g.io.ErrOut, "mulligan: hook %s failed again: %s\n", r.Delivery, r.Err)
		}
	}
	fmt.Fprintf(g.io.Out, "%d of %d hook deliveries done\n", len(results)-failed, len(results))
	if failed > 0 {
		fmt.Fprintf(g.io.ErrOut, "hint: `mulligan hooks %s` shows their output and errors\n", id)
		return exitError{ExitFailed}
	}
	return nil
}

// hooks is the deliverer of this repository's hook outbox.
func (s *state) hooks() *compensate.Hooks { return attempt.NewHooks(s.db, nil) }

// deliverOrphanHooks delivers the hooks a process that stopped (crashed, killed, or a command
// that changed a run's state without running it) left pending: "at least once" means the next
// mulligan process delivers them. Runs that a live process owns are left to it.
func (s *state) deliverOrphanHooks(ctx context.Context, errOut io.Writer) {
	results, err := s.hooks().DeliverOrphans(context.WithoutCancel(ctx))
	for _, r := range results {
		if r.Err != nil {
			fmt.Fprintf(errOut, "mulligan: hook %s failed: %s\n", r.Delivery, r.Err)
		}
	}
	if err != nil {
		fmt.Fprintf(errOut, "mulligan: delivering pending hooks: %s\n", err)
	}
}
