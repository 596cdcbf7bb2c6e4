package pgdb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// TestTheLockCheckIntervalIsFiveSeconds pins the bound: a replica that
// lost its lock's connection takes it again within about this long.
func TestTheLockCheckIntervalIsFiveSeconds(t *testing.T) {
	if pgdb.LockCheckInterval != 5*time.Second || pgdb.RelockMin != 100*time.Millisecond || pgdb.RelockMax != 5*time.Second {
		t.Fatalf("LockCheckInterval %v, RelockMin %v, RelockMax %v", pgdb.LockCheckInterval, pgdb.RelockMin, pgdb.RelockMax)
	}
}

// joinChecked joins a replica to a new database whose Hold checks its
// connection every 20 ms.
func joinChecked(t *testing.T) (context.Context, *pgdb.DB, *pgdb.Replica) {
	t.Helper()
	t.Cleanup(pgdb.SetLockCheckEvery(20 * time.Millisecond))
	ctx := context.Background()
	db := pgtest.Open(t)
	r, err := db.Join(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return ctx, db, r
}

// cut ends the connection holding r's lock, as a network cut or a
// database restart does, and waits until its backend has exited.
func cut(t *testing.T, db *pgdb.DB, r *pgdb.Replica) uint32 {
	t.Helper()
	var pid uint32
	pgdb.HoldOf(r).Conn(func(c *pgx.Conn) error { pid = c.PgConn().PID(); return nil })
	if _, err := db.Pool.Exec(context.Background(), `SELECT pg_terminate_backend($1, 60000)`, int32(pid)); err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestAReplicaTakesItsLockAgainAfterACut: the connection holding a
// replica's lock is cut; nobody judged it gone meanwhile, so it takes the
// lock again on a new connection, its membership is intact and Alive
// reports it alive.
func TestAReplicaTakesItsLockAgainAfterACut(t *testing.T) {
	ctx, db, r := joinChecked(t)
	old := cut(t, db, r)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if time.Now().After(deadline) {
			t.Fatal("the replica did not take its lock again")
		}
		var pid uint32
		pgdb.HoldOf(r).Conn(func(c *pgx.Conn) error { pid = c.PgConn().PID(); return nil })
		var held bool
		if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = $1)`, int32(pid)).Scan(&held); err != nil {
			t.Fatal(err)
		}
		if pid != old && held {
			break
		}
		select {
		case <-r.Lost():
			t.Fatalf("lost: %v", r.LostErr())
		case <-time.After(10 * time.Millisecond): // until the watch has taken the lock again
		}
	}
	if alive, err := db.Alive(ctx, r.ID()); err != nil || !alive {
		t.Fatalf("Alive after the lock was taken again: %t %v", alive, err)
	}
	if r.LostErr() != nil {
		t.Fatal(r.LostErr())
	}
}

// TestAReplicaJudgedGoneWhileCutIsLost: while a replica's lock connection
// is cut (and its watch held back, so that it cannot take the lock again
// first), another replica asks whether it is alive (and so may act on its
// being gone): Alive says no and forgets it, and the replica, taking its
// lock again, finds itself forgotten and reports Lost with ErrForgotten.
func TestAReplicaJudgedGoneWhileCutIsLost(t *testing.T) {
	ctx, db, r := joinChecked(t)
	held, release := make(chan uint32), make(chan struct{})
	go pgdb.HoldOf(r).Conn(func(c *pgx.Conn) error { // the watch waits for this
		held <- c.PgConn().PID()
		<-release
		return nil
	})
	if _, err := db.Pool.Exec(ctx, `SELECT pg_terminate_backend($1, 60000)`, int32(<-held)); err != nil {
		t.Fatal(err)
	}
	if alive, err := db.Alive(ctx, r.ID()); err != nil || alive {
		t.Fatalf("Alive of a replica whose lock is free: %t %v", alive, err)
	}
	var rows int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM replicas.members WHERE id = $1`, r.ID()).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("the replica judged gone still has %d rows (%v)", rows, err)
	}
	close(release)
	<-r.Lost()
	if !errors.Is(r.LostErr(), pgdb.ErrForgotten) {
		t.Fatalf("lost: %v", r.LostErr())
	}
}
