package workflowpg

import (
	"context"
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
