package auditdb

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/sqlitedb/sqlitetest"
)

// TestPurgeUsesItsIndex: the retention purge's batch and count find the
// expired events through idx_action_events_ended (migration 0007), the
// batch in the index's order with no sort; before it, both scanned the
// whole table.
func TestPurgeUsesItsIndex(t *testing.T) {
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	batch := sqlitetest.Plan(t, st.db.Read, qExpiredEvents, 1, 10)
	if !strings.Contains(batch, "INDEX idx_action_events_ended (ended_at<?)") || strings.Contains(batch, "TEMP B-TREE") {
		t.Errorf("purge batch: plan %q, want idx_action_events_ended and no sort", batch)
	}
	if count := sqlitetest.Plan(t, st.db.Read, qCountExpired, 1); !strings.Contains(count, "INDEX idx_action_events_ended (ended_at<?)") {
		t.Errorf("purge count: plan %q does not use idx_action_events_ended", count)
	}
}
