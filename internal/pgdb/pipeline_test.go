package pgdb_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// TestAPipelineSendsItsWritesInOrderAndFailsOnARefusedOne: queued writes
// run in order when flushed, a check's error fails the flush (and so the
// transaction: nothing of it stays), and the pipeline is empty after
// either outcome.
func TestAPipelineSendsItsWritesInOrderAndFailsOnARefusedOne(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE t (n int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	var p pgdb.Pipeline
	if err := db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := p.Flush(ctx, tx); err != nil { // nothing queued: no round trip, no error
			return err
		}
		p.Exec(`INSERT INTO t VALUES (1)`)
		p.Exec(`UPDATE t SET n = 2 WHERE n = 1`) // sees the insert before it
		if p.Len() != 2 {
			t.Fatalf("queued %d writes, want 2", p.Len())
		}
		return p.Flush(ctx, tx)
	}); err != nil {
		t.Fatal(err)
	}
	missing := errors.New("no row")
	err := db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		p.Exec(`INSERT INTO t VALUES (3)`)
		p.ExecChecked(func(tag pgconn.CommandTag) error {
			if tag.RowsAffected() != 1 {
				return missing
			}
			return nil
		}, `UPDATE t SET n = 4 WHERE n = 1`)
		return p.Flush(ctx, tx)
	})
	if !errors.Is(err, missing) || p.Len() != 0 {
		t.Fatalf("a refused write: %v, %d left queued", err, p.Len())
	}
	rows, _ := db.Pool.Query(ctx, `SELECT n FROM t ORDER BY n`)
	ns, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil || len(ns) != 1 || ns[0] != 2 {
		t.Fatalf("rows %v %v, want [2]", ns, err)
	}
}
