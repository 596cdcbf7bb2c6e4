package auditpg

import (
	"context"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// TestPurgeUsesItsIndex: the retention purge's batch and count find the
// expired events through action_events_ended (migration 0003), the batch
// in the index's order with no sort.
func TestPurgeUsesItsIndex(t *testing.T) {
	db := pgtest.Open(t)
	if _, err := Open(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	batch := pgtest.Plan(t, db, qExpiredEvents, 1, 10)
	if !strings.Contains(batch, "action_events_ended") || strings.Contains(batch, "Sort") {
		t.Errorf("purge batch: plan %q, want action_events_ended and no sort", batch)
	}
	if count := pgtest.Plan(t, db, qCountExpired, 1); !strings.Contains(count, "action_events_ended") {
		t.Errorf("purge count: plan %q does not use action_events_ended", count)
	}
}
