package jobspg

import (
	"context"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// TestOutputScanUsesItsIndex: the job output purge reads its pages
// through jobs_output_kept (migration 0002) from the cursor, in the
// index's order with no sort.
func TestOutputScanUsesItsIndex(t *testing.T) {
	db := pgtest.Open(t)
	if _, err := Open(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	plan := pgtest.Plan(t, db, qOutputExpired, 10, 1, "wc_job_x", 500)
	if !strings.Contains(plan, "jobs_output_kept") || strings.Contains(plan, "Sort") {
		t.Errorf("output scan: plan %q, want jobs_output_kept and no sort", plan)
	}
}
