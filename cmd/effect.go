package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/compensate"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// effectCommand is `mulligan effect record NAME`: an agent (or its wrapper) records a side
// effect of the attempt it runs in.
func effectCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "effect",
		Usage: "record a side effect of the running attempt (called from inside an attempt)",
		Subcommands: []*cli.Command{{
			Name:      "record",
			Usage:     "record a side effect of this attempt, with the command that undoes it",
			ArgsUsage: "NAME",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "idempotent", Usage: "doing it again is harmless: a retry gets no warning for it"},
				&cli.StringFlag{Name: "compensate", Usage: "the command that undoes it, split by shell-word rules and run without a shell, e.g. 'git push origin --delete fix/1'"},
				&cli.StringFlag{Name: "data", Usage: "a JSON value kept with the effect (what was done, ids)"},
			},
			Action: func(c *cli.Context) error { return effectRecord(c, g) },
		}},
	}
}

func effectRecord(c *cli.Context, g *globals) error {
	if c.NArg() != 1 {
		return usageError("e.g. mulligan effect record push-branch --compensate 'git push origin --delete fix/1'", "effect record takes one NAME")
	}
	name := c.Args().First()
	run, task, n := os.Getenv("MULLIGAN_RUN"), os.Getenv("MULLIGAN_TASK"), os.Getenv("MULLIGAN_ATTEMPT")
	if run == "" || task == "" || n == "" {
		return usageError("call it from the agent's command (or a script it runs) during a `mulligan run`: it finds the attempt through MULLIGAN_RUN, MULLIGAN_TASK and MULLIGAN_ATTEMPT",
			"effect record must run inside an attempt (MULLIGAN_RUN, MULLIGAN_TASK or MULLIGAN_ATTEMPT is not set)")
	}
	num, err := strconv.Atoi(n)
	if err != nil || num < 1 {
		return usageError("", "MULLIGAN_ATTEMPT=%q is not an attempt number", n)
	}
	e := store.Effect{RunID: run, TaskID: task, Attempt: num, Name: name, Idempotent: c.Bool("idempotent")}
	if c.IsSet("compensate") {
		if e.Compensate, err = compensate.Split(c.String("compensate")); err != nil {
			return usageError("quote the command as one argument: --compensate 'git push origin --delete fix/1'", "%s", err)
		}
	}
	if c.IsSet("data") {
		d := strings.TrimSpace(c.String("data"))
		if !json.Valid([]byte(d)) {
			return usageError(`e.g. --data '{"branch":"fix/1"}'`, "--data is not valid JSON")
		}
		e.Data = json.RawMessage(d)
	}
	st, err := openState(g)
	if err != nil {
		return err
	}
	st.noHooks = true // inside an attempt: hooks are the business of the run's own process
	defer st.Close()
	r, err := st.getRun(c.Context, run)
	if err != nil {
		return err
	}
	var a *store.Attempt
	for _, t := range r.Tasks {
		for i := range t.Attempts {
			if t.ID == task && t.Attempts[i].N == num {
				a = &t.Attempts[i]
			}
		}
	}
	if a == nil {
		return usageError("", "run %s has no attempt %s@%d", run, task, num)
	}
	if a.State != store.AttemptRunning {
		return usageError("effects are recorded while their attempt runs", "attempt %s@%d is %s", task, num, a.State)
	}
	if e.Compensate == nil {
		// A declared effect of the task gives the compensation by name.
		if f, err := taskfile.Parse(r.TaskFile, r.TaskFileContent); err == nil {
			if def := f.Task(task); def != nil {
				for _, d := range def.Effects {
					if d.Name == name && d.Compensate != nil {
						vars := taskfile.Vars{Run: run, Task: task, Attempt: num, IdempotencyKey: attempt.IdempotencyKey(run, task)}
						if e.Compensate, err = taskfile.Expand(d.Compensate, vars); err != nil {
							return fmt.Errorf("effect %s: compensate: %w", name, err)
						}
					}
				}
			}
		}
	}
	if err := st.db.Update(c.Context, func(tx *store.Tx) error {
		e.Compensate = append([]string(nil), e.Compensate...) // Update may re-run this function
		if err := tx.RecordEffect(&e); err != nil {
			return err
		}
		_, err := tx.AppendEvent(run, task, num, store.EventEffectRecorded, store.EffectRecordedPayload{
			Effect: e.ID, Name: e.Name, Idempotent: e.Idempotent, DeliveryID: e.DeliveryID})
		return err
	}); err != nil {
		return err
	}
	if len(e.Compensate) == 0 {
		e.Compensate = nil
	}
	if g.json() {
		return writeJSON(g.io.Out, e)
	}
	fmt.Fprintf(g.io.Out, "recorded effect %d %s of %s@%d (delivery id %s)\n", e.ID, e.Name, task, num, e.DeliveryID)
	return nil
}

// effectsCommand is `mulligan effects [RUN]`: the ledger of a run.
func effectsCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "effects",
		Usage:     "list a run's recorded side effects and their compensation states",
		ArgsUsage: "[RUN]",
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("e.g. mulligan effects k3f9", "effects takes one run")
			}
			id, es, err := readRunList(c, g, (*store.Tx).Effects)
			if err != nil || g.json() {
				return err
			}
			if len(es) == 0 {
				fmt.Fprintf(g.io.Out, "run %s recorded no side effects\n", id)
				return nil
			}
			tw := tabwriter.NewWriter(g.io.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tATTEMPT\tNAME\tIDEMPOTENT\tSTATE\tCOMPENSATE")
			for _, e := range es {
				comp := "-"
				if len(e.Compensate) > 0 {
					comp = quoteArgv(e.Compensate)
				}
				idem := "no"
				if e.Idempotent {
					idem = "yes"
				}
				fmt.Fprintf(tw, "%d\t%s@%d\t%s\t%s\t%s\t%s\n", e.ID, e.TaskID, e.Attempt, e.Name, idem, e.State, comp)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if slices.ContainsFunc(es, func(e store.Effect) bool { return e.Implicit }) {
				fmt.Fprintf(g.io.Out, "hint: an `%s` row stands for whatever that attempt did: its task is marked side_effects: non_idempotent and the attempt recorded nothing finer (`mulligan effect record` replaces it)\n", store.ImplicitEffect)
			}
			if slices.ContainsFunc(es, func(e store.Effect) bool { return e.State == store.EffectCompensating }) {
				fmt.Fprintf(g.io.Out, "hint: a revert or timetravel started compensating and has not recorded the outcome (it was killed, or is still running); `mulligan compensate %s` delivers them again, with the same delivery ids\n", id)
			}
			return nil
		},
	}
}

// quoteArgv prints argv so that shell-word splitting gives it back.
func quoteArgv(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`;&|<>()*?[]{}~#!") {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

// readRunList reads one list of RUN's history (RUN as `c`'s first argument) and, with -o json,
// prints it (an empty one as []): the caller prints the text form.
func readRunList[T any](c *cli.Context, g *globals, read func(tx *store.Tx, run string) ([]T, error)) (string, []T, error) {
	st, id, err := openRun(c.Context, g, c.Args().First())
	if err != nil {
		return "", nil, err
	}
	defer st.Close()
	var list []T
	if err := st.db.View(c.Context, func(tx *store.Tx) (err error) {
		list, err = read(tx, id)
		return err
	}); err != nil {
		return "", nil, err
	}
	if g.json() {
		if list == nil {
			list = []T{}
		}
		return id, list, writeJSON(g.io.Out, list)
	}
	return id, list, nil
}
