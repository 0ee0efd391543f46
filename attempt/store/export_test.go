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
