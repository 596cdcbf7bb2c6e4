package jobsdb

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/sqlitedb/sqlitetest"
)

// TestOutputScanUsesItsIndex: the job output purge reads its pages
// through jobs_output_kept (migration 0002) from the cursor, in the
// index's order with no sort; before it, every page scanned and sorted
// the whole table.
func TestOutputScanUsesItsIndex(t *testing.T) {
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "jobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	plan := sqlitetest.Plan(t, st.db.Read, qOutputExpired, 10, 1, 1, "wc_job_x", 500)
	if !strings.Contains(plan, "USING INDEX jobs_output_kept (created_at>? AND created_at<?)") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("output scan: plan %q, want a range of jobs_output_kept and no sort", plan)
	}
}
