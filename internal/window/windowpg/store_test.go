package windowpg_test

import (
	"context"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/window/storetest"
	"github.com/webcodex/webcodex/internal/window/windowpg"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store {
		st, err := windowpg.Open(context.Background(), pgtest.Open(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// TestOpenRefusesANewerSchema: a database a newer WebCodex migrated is
// refused, naming the schema.
func TestOpenRefusesANewerSchema(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	st, err := windowpg.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO windows.schema_migrations (version, name) VALUES (999, '0999_future.sql')`); err != nil {
		t.Fatal(err)
	}
	if _, err := windowpg.Open(ctx, db); !failure.Is(err, failure.Conflict) || !strings.Contains(err.Error(), "windows") {
		t.Fatalf("Open on a newer schema: %v", err)
	}
}

// TestLastActiveCanUseAnIndex: the stale assignment diagnostic's lookup by
// window hash alone has an index to search (with sequential scans priced
// out, the plan names it), not only a scan of every principal's activity.
func TestLastActiveCanUseAnIndex(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	st, err := windowpg.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if p := pgtest.Plan(t, db, `SELECT max(last_at_ms) FROM windows.window_activity WHERE win = 'w'`); !strings.Contains(p, "window_activity_window") {
		t.Fatalf("LastActive's plan: %s", p)
	}
}
