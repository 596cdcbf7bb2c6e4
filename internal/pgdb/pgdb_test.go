package pgdb_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://wc:s3cret@db.example:5432/webcodex?sslmode=require": "postgres://wc:xxxxx@db.example:5432/webcodex?sslmode=require",
		"postgres://wc@db.example/webcodex":                             "postgres://wc@db.example/webcodex",
		"postgres:///webcodex?host=/run/pg&password=s3cret":             "postgres:///webcodex?host=%2Frun%2Fpg&password=xxxxx",
		"host=db.example user=wc password=s3cret dbname=webcodex":       "host=db.example port=5432 dbname=webcodex user=wc",
	} {
		if got := pgdb.Redact(in); got != want || strings.Contains(got, "s3cret") {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOpenRefusesWhatCannotConnect: a URL that does not parse, and one
// whose server is not there, are refused at Open with the password kept
// out of the message.
func TestOpenRefusesWhatCannotConnect(t *testing.T) {
	ctx := context.Background()
	if _, err := pgdb.Open(ctx, "postgres://wc:s3cret@[::1"); !failure.Is(err, failure.InvalidArguments) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("unparsable URL: %v", err)
	}
	dir := t.TempDir()
	_, err := pgdb.Open(ctx, "postgres://wc:s3cret@/webcodex?host="+dir+"&connect_timeout=2")
	if !failure.Is(err, failure.Unavailable) || strings.Contains(err.Error(), "s3cret") || strings.Contains(failure.MessageOf(err), "s3cret") {
		t.Fatalf("no server: %v", err)
	}
}

func migrations(files ...string) fstest.MapFS {
	m := fstest.MapFS{}
	for i := 0; i+1 < len(files); i += 2 {
		m[files[i]] = &fstest.MapFile{Data: []byte(files[i+1])}
	}
	return m
}

// TestMigrate: migrations apply once, in order, and again is a no-op; a
// later binary's migration applies on top; a database at a newer version
// is refused, named; misnamed or gapped migrations are refused.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	v1 := migrations("0001_things.sql", `CREATE TABLE demo.things (id bigint PRIMARY KEY, name text NOT NULL);`)
	for range 2 {
		if err := db.Migrate(ctx, "demo", v1, "."); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO demo.things VALUES (1, 'one')`); err != nil {
		t.Fatal(err)
	}
	v2 := migrations("0001_things.sql", `CREATE TABLE demo.things (id bigint PRIMARY KEY, name text NOT NULL);`,
		"0002_color.sql", `ALTER TABLE demo.things ADD COLUMN color text NOT NULL DEFAULT 'red';`)
	if err := db.Migrate(ctx, "demo", v2, "."); err != nil {
		t.Fatal(err)
	}
	var color string
	if err := db.Pool.QueryRow(ctx, `SELECT color FROM demo.things WHERE id = 1`).Scan(&color); err != nil || color != "red" {
		t.Fatalf("after 0002: %q %v", color, err)
	}
	err := db.Migrate(ctx, "demo", v1, ".")
	if !failure.Is(err, failure.Conflict) || !strings.Contains(err.Error(), "demo is at version 2") {
		t.Fatalf("an older binary on a newer database: %v", err)
	}
	for name, bad := range map[string]fstest.MapFS{
		"misnamed": migrations("things.sql", `SELECT 1`),
		"gap":      migrations("0001_a.sql", `SELECT 1`, "0003_c.sql", `SELECT 1`),
	} {
		if err := db.Migrate(ctx, "other", bad, "."); !failure.Is(err, failure.InvalidArguments) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := db.Migrate(ctx, "Bad-Name", v1, "."); !failure.Is(err, failure.InvalidArguments) {
		t.Errorf("bad schema name: %v", err)
	}
}

// TestMigrateConcurrently: replicas starting together apply each
// migration once.
func TestMigrateConcurrently(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	m := migrations("0001_things.sql", `CREATE TABLE race.things (id bigint PRIMARY KEY);`)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			db, err := pgdb.Open(ctx, url)
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			errs[i] = db.Migrate(ctx, "race", m, ".")
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestTxRetriesADeadlock: two transactions that lock two rows in opposite
// orders deadlock; PostgreSQL aborts one, Tx runs it again, and both
// complete.
func TestTxRetriesADeadlock(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	if err := db.Migrate(ctx, "dl", migrations("0001_rows.sql",
		`CREATE TABLE dl.rows (id int PRIMARY KEY, n int NOT NULL); INSERT INTO dl.rows VALUES (1, 0), (2, 0);`), "."); err != nil {
		t.Fatal(err)
	}
	// Each transaction holds its first row until the other holds its
	// own: then both reach for the other's, and one must be aborted.
	var held sync.WaitGroup
	held.Add(2)
	var attempts atomic.Int32
	run := func(first, second int) error {
		var once sync.Once
		return db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
			attempts.Add(1)
			if _, err := tx.Exec(ctx, `UPDATE dl.rows SET n = n + 1 WHERE id = $1`, first); err != nil {
				return err
			}
			once.Do(func() { held.Done(); held.Wait() })
			_, err := tx.Exec(ctx, `UPDATE dl.rows SET n = n + 1 WHERE id = $1`, second)
			return err
		})
	}
	var wg sync.WaitGroup
	var e1, e2 error
	wg.Go(func() { e1 = run(1, 2) })
	wg.Go(func() { e2 = run(2, 1) })
	wg.Wait()
	if e1 != nil || e2 != nil {
		t.Fatalf("deadlocked transactions: %v, %v", e1, e2)
	}
	if n := attempts.Load(); n < 3 {
		t.Fatalf("%d attempts: the deadlock was not retried", n)
	}
	var sum int
	if err := db.Pool.QueryRow(ctx, `SELECT sum(n) FROM dl.rows`).Scan(&sum); err != nil || sum != 4 {
		t.Fatalf("each transaction committed once: sum %d, %v", sum, err)
	}
}

// TestTxRollsBackOnError: fn's error is returned as is and nothing it did
// remains.
func TestTxRollsBackOnError(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	if err := db.Migrate(ctx, "rb", migrations("0001_t.sql", `CREATE TABLE rb.t (id int PRIMARY KEY);`), "."); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO rb.t VALUES (1)`); err != nil {
			return err
		}
		return boom
	})
	var n int
	db.Pool.QueryRow(ctx, `SELECT count(*) FROM rb.t`).Scan(&n)
	if !errors.Is(err, boom) || n != 0 {
		t.Fatalf("err %v, rows %d", err, n)
	}
	if err := db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO rb.t VALUES (1), (1)`)
		return err
	}); !pgdb.IsUniqueViolation(err) {
		t.Fatalf("a unique violation: %v", err)
	}
}
