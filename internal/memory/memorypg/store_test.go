package memorypg

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/memory"
	"github.com/webcodex/webcodex/internal/memory/storetest"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

func openStore(t *testing.T) (*Store, *pgdb.DB) {
	t.Helper()
	db := pgtest.Open(t)
	st, err := Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return st, db
}

// TestContract runs the memory.Store contract suite on PostgreSQL.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		st, db := openStore(t)
		return storetest.Backend{
			Store:    st,
			Snapshot: func(t *testing.T) string { return snapshot(t, db) },
			Fill: func(t testing.TB, scope memory.Scope, entries []memory.Entry) {
				fill(t, db, scope, entries)
			},
			KeptHistory: func(t *testing.T, memoryID, revision string) (kept, current int) {
				if err := db.Pool.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE revision = $1)
					FROM memory.history WHERE memory_id = $2`, revision, memoryID).Scan(&kept, &current); err != nil {
					t.Fatal(err)
				}
				return kept, current
			},
		}
	})
}

// snapshot is every row of every table (the generated search vectors
// included), and checks each scope's kept entry count.
func snapshot(t *testing.T, db *pgdb.DB) string {
	t.Helper()
	ctx := context.Background()
	var bad int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM memory.scopes s
		WHERE s.entries <> (SELECT count(*) FROM memory.entries e WHERE e.scope_id = s.scope_id)`).Scan(&bad); err != nil || bad != 0 {
		t.Fatalf("%d scopes keep a wrong entry count (%v)", bad, err)
	}
	var out string
	if err := db.Pool.QueryRow(ctx, `SELECT concat_ws(chr(1),
		(SELECT string_agg(s::text, chr(10) ORDER BY scope_id) FROM memory.scopes s),
		(SELECT string_agg(e::text, chr(10) ORDER BY id) FROM memory.entries e),
		(SELECT string_agg(h::text, chr(10) ORDER BY memory_id, generation) FROM memory.history h))`).Scan(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func fill(t testing.TB, db *pgdb.DB, scope memory.Scope, entries []memory.Entry) {
	t.Helper()
	err := db.Tx(context.Background(), func(ctx context.Context, tx pgx.Tx) error {
		for _, e := range entries {
			if err := put(ctx, tx, scope, e, true); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
