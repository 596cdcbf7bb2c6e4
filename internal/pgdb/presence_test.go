package pgdb_test

import (
	"context"
	"testing"

	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// TestReplicaAliveUntilItsConnectionEnds: a joined replica is alive to
// another replica's pool; it is gone once it leaves, and once its
// connection is terminated as a killed process's would be; an unknown id
// is not alive; a later join removes the rows of the gone.
func TestReplicaAliveUntilItsConnectionEnds(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	open := func() *pgdb.DB {
		db, err := pgdb.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		return db
	}
	a, b := open(), open()
	alive := func(id string) bool {
		t.Helper()
		ok, err := b.Alive(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	left, err := a.Join(ctx)
	if err != nil {
		t.Fatal(err)
	}
	killed, err := a.Join(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if left.ID() == killed.ID() || !alive(left.ID()) || !alive(killed.ID()) {
		t.Fatalf("joined replicas %s, %s not alive", left.ID(), killed.ID())
	}
	if alive("0123456789abcdef") {
		t.Fatal("an id that never joined is alive")
	}
	var pid uint32
	if err := b.Pool.QueryRow(ctx, `SELECT l.pid FROM pg_locks l JOIN replicas.members m
		ON l.locktype = 'advisory' AND l.granted AND ((l.classid::bigint << 32) | l.objid::bigint) = m.lock_key
		WHERE m.id = $1`, killed.ID()).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	if err := left.Close(); err != nil {
		t.Fatal(err)
	}
	// Both backends exit after the calls above return; taking each lock
	// (it waits for the exit) orders the checks after them.
	if _, err := b.Pool.Exec(ctx, `SELECT pg_advisory_lock(lock_key), pg_advisory_unlock(lock_key) FROM replicas.members WHERE id IN ($1, $2)`,
		left.ID(), killed.ID()); err != nil {
		t.Fatal(err)
	}
	if alive(left.ID()) || alive(killed.ID()) {
		t.Fatal("a replica that left or was killed is alive")
	}
	c, err := b.Join(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var rows int
	if err := b.Pool.QueryRow(ctx, `SELECT count(*) FROM replicas.members`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("members after a join = %d, %v; want only the live one", rows, err)
	}
}
