package store_test

import (
	"strings"
	"testing"

	"github.com/mulligan-dev/mulligan/store"
)

// The speed of ls and show on a large history rests on these plans; a timing would be
// flaky on a shared machine, a plan is not. BenchmarkHistory has the figures.
func TestQueryPlansUseIndexes(t *testing.T) {
	db, _ := openDB(t)
	insertRun(t, db, newRun("run1"))
	view(t, db, func(tx *store.Tx) error {
		plan, err := tx.QueryPlanForTest(store.ListRunsSQLForTest, 50)
		if err != nil {
			return err
		}
		t.Logf("ListRuns plan:\n%s", strings.Join(plan, "\n"))
		text := strings.Join(plan, "\n")
		if !strings.Contains(text, "runs_by_start") || strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("ListRuns does not walk runs_by_start in order:\n%s", text)
		}
		for _, line := range plan {
			if strings.HasPrefix(line, "SCAN") && !strings.Contains(line, "INDEX runs_by_start") {
				t.Errorf("ListRuns scans a whole table: %s", line)
			}
		}
		return nil
	})
}
