package workflowpg

import (
	"context"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// TestMigrateTwice: the schema applies to an empty database and a second
// migration is a no-op.
func TestMigrateTwice(t *testing.T) {
	db := pgtest.Open(t)
	ctx := context.Background()
	for range 2 {
		if err := Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT next_seq FROM workflow.outbox_head`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("outbox head = %d, %v", n, err)
	}
}

// TestPurgeUsesItsIndex: the session-event purge finds and counts its
// sessions through the partial sessions_purgeable (migration 0003), not
// through sessions_by_update, which holds every session.
func TestPurgeUsesItsIndex(t *testing.T) {
	db := pgtest.Open(t)
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`SELECT session_id, header_json, retained ` + sqlPurgeable + ` LIMIT 1 FOR UPDATE SKIP LOCKED`, `SELECT count(*), coalesce(sum(retained), 0)::bigint ` + sqlPurgeable} {
		if plan := pgtest.Plan(t, db, q, 1); !strings.Contains(plan, "sessions_purgeable") {
			t.Errorf("session-event purge: plan %q does not use sessions_purgeable", plan)
		}
	}
}
