package store

// Hooks for the external tests: the pragmas a connection runs with are not part of the API.

func (tx *Tx) QueryIntForTest(q string) (int64, error) {
	var v int64
	err := tx.queryRow(q).Scan(&v)
	return v, err
}

func (tx *Tx) QueryStringForTest(q string) (string, error) {
	var v string
	err := tx.queryRow(q).Scan(&v)
	return v, err
}

func (tx *Tx) ExecForTest(q string, args ...any) error {
	_, err := tx.exec(q, args...)
	return err
}

var ParseProcStatForTest = func(b []byte) (state byte, ticks uint64, err error) {
	st, err := parseProcStat(b)
	return st.state, st.startTicks, err
}

const ListRunsSQLForTest = listRunsSQL

// QueryPlanForTest returns the EXPLAIN QUERY PLAN lines of q.
func (tx *Tx) QueryPlanForTest(q string, args ...any) ([]string, error) {
	rows, err := tx.query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			return nil, err
		}
		out = append(out, detail)
	}
	return out, rows.Err()
}

func SetOnBusyRetryForTest(f func()) { onBusyRetry = f }

// SetTaskStateForTest puts a task in state without a transition (no event, no hook): the state a
// test starts a transition from.
func (tx *Tx) SetTaskStateForTest(run, task, state string) error {
	t, err := tx.GetTask(run, task)
	if err != nil {
		return err
	}
	t.State = state
	return tx.writeTask(t)
}
