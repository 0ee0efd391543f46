package cmd

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/store"
)

const (
	tasksDefaultLimit = 50
	tasksMaxLimit     = 200
)

func tasksCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "tasks",
		Usage: "the inventory across runs: tasks by state (what waits for you first: --state attention), newest first",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "state", Usage: "`STATE`: " + strings.Join(store.InventoryStates, ", ") +
				" (attention = blocked, waiting_approval, silent, or succeeded without changing a file); repeat for several; default: all of them"},
			&cli.StringFlag{Name: "run", Usage: "only the tasks of `RUN`"},
			&cli.IntFlag{Name: "limit", Value: tasksDefaultLimit, Usage: fmt.Sprintf("at most `N` rows (at most %d)", tasksMaxLimit)},
			&cli.StringFlag{Name: "cursor", Usage: "the next page: the `C` the previous page ended with"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError("e.g. mulligan tasks --state blocked", "tasks takes no arguments")
			}
			var states []string
			for _, s := range c.StringSlice("state") {
				for _, one := range strings.Split(s, ",") {
					one = strings.TrimSpace(one)
					if !slices.Contains(store.InventoryStates, one) {
						return usageError("states: "+strings.Join(store.InventoryStates, ", "), "unknown --state %q", one)
					}
					states = append(states, one)
				}
			}
			limit := c.Int("limit")
			if limit < 1 || limit > tasksMaxLimit {
				return usageError(fmt.Sprintf("e.g. --limit %d", tasksDefaultLimit), "--limit takes 1 to %d, not %d", tasksMaxLimit, limit)
			}
			st, err := openState(g)
			if err != nil {
				return err
			}
			defer st.Close()
			q := store.InventoryQuery{States: states, Limit: limit, Cursor: c.String("cursor")}
			if c.IsSet("run") {
				if q.Run, err = st.resolveRun(c.Context, c.String("run")); err != nil {
					return err
				}
			}
			var rows []store.InventoryRow
			var next string
			if err := st.db.View(c.Context, func(tx *store.Tx) error {
				rows, next, err = tx.Inventory(q)
				return err
			}); err != nil {
				if errors.Is(err, store.ErrBadCursor) {
					return usageError("pass the next_cursor of the previous page as it was printed", "%s", err)
				}
				return err
			}
			if g.json() {
				return writeJSON(g.io.Out, inventoryJSON(rows, next))
			}
			printInventory(g, rows, next)
			return nil
		},
	}
}

type inventoryTaskJSON struct {
	Run      string         `json:"run"`
	Task     string         `json:"task"`
	State    string         `json:"state"`
	Reason   *string        `json:"reason"`
	Worktree string         `json:"worktree"`
	Since    string         `json:"since"`
	ResumeAt *string        `json:"resume_at"`
	SilentAt *string        `json:"silent_at"`
	Attempts int            `json:"attempts"`
	Latest   *store.Attempt `json:"latest"`
	Next     *string        `json:"next"`
}

func inventoryJSON(rows []store.InventoryRow, next string) map[string]any {
	out := make([]inventoryTaskJSON, len(rows))
	for i, r := range rows {
		j := inventoryTaskJSON{Run: r.Run, Task: r.Task.ID, State: r.Task.State, Worktree: r.Worktree,
			Since: r.Since.UTC().Format(time.RFC3339Nano), Attempts: r.Attempts, Latest: r.Latest}
		if r.Task.Reason != "" {
			j.Reason = &r.Task.Reason
		}
		if r.Task.ResumeAt != nil {
			s := r.Task.ResumeAt.UTC().Format(time.RFC3339Nano)
			j.ResumeAt = &s
		}
		if r.Task.SilentAt != nil {
			s := r.Task.SilentAt.UTC().Format(time.RFC3339Nano)
			j.SilentAt = &s
		}
		if n := nextStep(r); n != "" {
			j.Next = &n
		}
		out[i] = j
	}
	var cursor any
	if next != "" {
		cursor = next
	}
	return map[string]any{"tasks": out, "next_cursor": cursor}
}

// nextStep is the command that moves a held task on.
func nextStep(r store.InventoryRow) string {
	addr := r.Run + "/" + r.Task.ID
	switch r.Task.State {
	case store.TaskBlocked:
		return fmt.Sprintf("mulligan prompt %s TEXT | mulligan stop %s | mulligan retry-task %s %s", addr, addr, r.Run, r.Task.ID)
	case store.TaskWaitingApproval:
		return fmt.Sprintf("mulligan approve %s | mulligan reject %s TEXT", addr, addr)
	case store.TaskWaitingQuota:
		return "mulligan supervise (after the reset), or mulligan resume " + r.Run + " --now"
	case store.TaskPaused:
		return "mulligan resume " + r.Run
	}
	if r.Task.SilentAt != nil {
		return "mulligan logs " + addr + " -f"
	}
	if r.Task.Reason == store.ReasonNothingChanged {
		return "mulligan logs " + addr + " (it succeeded without changing a file)"
	}
	return ""
}

func printInventory(g *globals, rows []store.InventoryRow, next string) {
	if len(rows) == 0 {
		fmt.Fprintln(g.io.Out, "no tasks in those states")
		return
	}
	tw := tabwriter.NewWriter(g.io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tTASK\tSTATE\tATTEMPTS\tAGE\tNEXT")
	now := time.Now()
	for _, r := range rows {
		state := r.Task.State
		if r.Task.Reason != "" {
			state += " (" + r.Task.Reason + ")"
		}
		if r.Task.SilentAt != nil {
			state += " silent"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", r.Run, r.Task.ID, state, r.Attempts, age(now.Sub(r.Since)), nextStep(r))
	}
	tw.Flush()
	if next != "" {
		fmt.Fprintf(g.io.Out, "hint: more: mulligan tasks --cursor %s (with the same --state and --run)\n", next)
	}
}
