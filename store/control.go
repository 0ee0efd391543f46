package store

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
)

// Operator requests to a live run (runs.control). The run's process polls the column and acts;
// it clears it when the run stops.
const (
	ControlNone        = ""
	ControlPauseDrain  = "pause-drain"  // let the attempt in flight finish, then park paused
	ControlPauseCancel = "pause-cancel" // end the attempt in flight (not counted), park paused
	ControlCancel      = "cancel"       // end the attempt in flight, the run ends cancelled
)

var controls = []string{ControlNone, ControlPauseDrain, ControlPauseCancel, ControlCancel}

// Control returns the run's pending operator request ("" when none).
func (tx *Tx) Control(run string) (string, error) {
	var c string
	err := tx.queryRow(`SELECT control FROM runs WHERE id = ?`, run).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("run %s: %w", run, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("read control of run %s: %w", run, err)
	}
	return c, nil
}

// SetControl records an operator request for the run (ControlNone clears it).
func (tx *Tx) SetControl(run, control string) error {
	if !slices.Contains(controls, control) {
		return fmt.Errorf("set control of run %s: unknown request %q", run, control)
	}
	res, err := tx.exec(`UPDATE runs SET control = ? WHERE id = ?`, control, run)
	return checkOne(res, err, "set control", "run "+run)
}
