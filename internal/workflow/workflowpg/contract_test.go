package workflowpg

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/workflow/storetest"
)

// ledger is a fresh database for the contract suite; each Open is a
// replica on it, with a pool of its own named by its application_name
// (so Crash can end every connection of one replica).
type ledger struct {
	db       *pgdb.DB // the test's own pool: Set, Discarded, Hold, Crash
	url      string
	replicas int
	names    map[storetest.Store]string
	pools    map[storetest.Store]*pgdb.DB
}

func newLedger(t *testing.T) storetest.Ledger {
	u := pgtest.URL(t)
	db, err := pgdb.Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return &ledger{db: db, url: u, names: map[storetest.Store]string{}, pools: map[storetest.Store]*pgdb.DB{}}
}

func TestContract(t *testing.T) { storetest.Run(t, newLedger) }

// open opens a store on db, closed by the test's cleanup.
func open(t *testing.T, db *pgdb.DB) *Store {
	t.Helper()
	st, err := Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// replica opens a pool of its own on the ledger's database, named name.
func replica(t *testing.T, rawURL, name string) *pgdb.DB {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	db, err := pgdb.Open(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

func (l *ledger) Open(t *testing.T) storetest.Store {
	l.replicas++
	name := fmt.Sprint("replica_", l.replicas)
	db := replica(t, l.url, name)
	st := open(t, db)
	l.names[st], l.pools[st] = name, db
	return st
}

func (l *ledger) Set(t *testing.T, table, column string, value any, id string, seq int64) {
	t.Helper()
	q, args := `UPDATE workflow.sessions SET `+column+` = $1 WHERE session_id = $2`, []any{value, id}
	if table == "events" {
		q, args = `UPDATE workflow.events SET `+column+` = $1 WHERE session_id = $2 AND seq = $3`, append(args, seq)
	}
	if _, err := l.db.Pool.Exec(context.Background(), q, args...); err != nil {
		t.Fatal(err)
	}
}

func (l *ledger) Discarded(t *testing.T, key string) (reason, body string) {
	t.Helper()
	if err := l.db.Pool.QueryRow(context.Background(), `SELECT reason, body FROM workflow.discarded_rows WHERE row_key = $1`, key).Scan(&reason, &body); err != nil {
		t.Fatalf("discarded row %s: %v", key, err)
	}
	return reason, body
}

// Hold locks session id's row (when not "") and the outbox head in a
// transaction of its own, which every write of them waits for.
func (l *ledger) Hold(t *testing.T, _ storetest.Store, id string) func() {
	ctx := context.Background()
	tx, err := l.db.Pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			tx.Rollback(ctx)
		}
	}
	t.Cleanup(release)
	if id != "" {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM workflow.sessions WHERE session_id = $1 FOR UPDATE`, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM workflow.outbox_head FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	return release
}

// Crash ends every connection of st's replica as the server does when
// the replica is killed with -9 (pg_terminate_backend, which waits until
// each backend is gone: its locks released, its transactions rolled
// back), and opens another replica on the database.
//
// The replica's writer may take a new connection after the first
// termination (its queued batch had not started yet): the backends are
// terminated again until the pool has closed, so the writer's blocked
// statement ends with its connection, as the killed process's would.
func (l *ledger) Crash(t *testing.T, st storetest.Store) storetest.Store {
	ctx := context.Background()
	closed := make(chan struct{})
	terminate := func() {
		if _, err := l.db.Pool.Exec(ctx, `SELECT pg_terminate_backend(pid, 60000) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1`, l.names[st]); err != nil {
			t.Fatal(err)
		}
	}
	terminate()
	go func() { l.pools[st].Close(); close(closed) }()
	for {
		select {
		case <-closed:
			return l.Open(t)
		default:
			terminate()
		}
	}
}

// kill ends st's instance connection alone, as the server does once it
// notices a killed replica's connection is gone, and waits until the
// backend has exited (its advisory lock released).
func kill(t *testing.T, db *pgdb.DB, st *Store) {
	t.Helper()
	var pid uint32
	st.inst.hold.Conn(func(c *pgx.Conn) error { pid = c.PgConn().PID(); return nil })
	if _, err := db.Pool.Exec(context.Background(), `SELECT pg_terminate_backend($1, 60000)`, int32(pid)); err != nil {
		t.Fatal(err)
	}
}
