package sqlitedb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/sqlitedb"
)

func open(t *testing.T) *sqlitedb.DB {
	t.Helper()
	db, err := sqlitedb.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), fstest.MapFS{
		"0001_init.sql": {Data: []byte(`CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL);`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func count(t *testing.T, db *sqlitedb.DB) int {
	t.Helper()
	var n int
	if err := db.Read.QueryRow(`SELECT COUNT(*) FROM kv`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPragmas(t *testing.T) {
	db := open(t)
	var mode string
	var sync int
	db.Read.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
	db.Read.QueryRow(`PRAGMA synchronous`).Scan(&sync)
	if mode != "wal" || sync != 2 { // 2 = FULL
		t.Fatalf("journal_mode=%s synchronous=%d, want wal and 2 (FULL)", mode, sync)
	}
}

func TestGroupCommitIsolatesFailures(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 100)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, `INSERT INTO kv VALUES (?, ?)`, string(rune('a'+i%26))+string(rune('A'+i/26)), i); err != nil {
					return err
				}
				if i%10 == 0 {
					return errors.New("reject") // rolls back only this insert
				}
				return nil
			})
		}()
	}
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if (i%10 == 0) != (err != nil) {
			t.Fatalf("job %d: err=%v", i, err)
		}
		if err != nil {
			failed++
		}
	}
	if n := count(t, db); n != 100-failed {
		t.Fatalf("%d rows, want %d", n, 100-failed)
	}
	commits, jobs := db.Writer.Stats()
	if jobs != 100 || commits > jobs {
		t.Fatalf("commits=%d jobs=%d", commits, jobs)
	}
	// Counters is one consistent snapshot: its batch size classes hold
	// every commit, and nothing is queued once every Do returned.
	c := db.Writer.Counters()
	var classes int64
	for _, n := range c.Batches {
		classes += n
	}
	if c.Commits != commits || c.Jobs != jobs || classes != c.Commits || c.Queued != 0 || c.Durable > c.Commits {
		t.Fatalf("Counters() = %+v, Stats() = %d commits, %d jobs", c, commits, jobs)
	}
}

// TestBatchBounds pins the batch size classes of Counters: powers of two
// up to MaxBatch, and a batch of n in the first class at least n.
func TestBatchBounds(t *testing.T) {
	if last := sqlitedb.BatchBounds[len(sqlitedb.BatchBounds)-1]; last != sqlitedb.MaxBatch {
		t.Fatalf("last bound %d, want MaxBatch %d", last, sqlitedb.MaxBatch)
	}
	for _, c := range []struct{ n, class int }{{1, 0}, {2, 1}, {3, 2}, {128, 7}, {129, 8}, {sqlitedb.MaxBatch, 8}} {
		if got := sqlitedb.BatchBucket(c.n); got != c.class {
			t.Errorf("class of %d = %d, want %d", c.n, got, c.class)
		}
	}
}

func TestConstraintErrorAndPanicAreIsolated(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	ins := func(k string) error {
		return db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO kv VALUES (?, 1)`, k)
			return err
		})
	}
	if err := ins("x"); err != nil {
		t.Fatal(err)
	}
	if err := ins("x"); !sqlitedb.IsConstraint(err) {
		t.Fatalf("duplicate key: got %v", err)
	}
	err := db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		tx.ExecContext(ctx, `INSERT INTO kv VALUES ('y', 1)`)
		panic("boom")
	})
	if err == nil || count(t, db) != 1 {
		t.Fatalf("panic: err=%v rows=%d", err, count(t, db))
	}
}

func TestCancelledBeforeRunDoesNothing(t *testing.T) {
	db := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	err := db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error { ran = true; return nil })
	if !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("err=%v ran=%v", err, ran)
	}
}

func TestClosed(t *testing.T) {
	db, err := sqlitedb.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := db.Writer.Do(context.Background(), func(context.Context, *sql.Tx) error { return nil }); !errors.Is(err, sqlitedb.ErrClosed) {
		t.Fatalf("got %v", err)
	}
}

func TestMigrationsApplyOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	fs := fstest.MapFS{"0001_a.sql": {Data: []byte(`CREATE TABLE a (x INTEGER);`)}}
	for i := 0; i < 2; i++ {
		db, err := sqlitedb.Open(context.Background(), path, fs)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		db.Close()
	}
	fs["0002_b.sql"] = &fstest.MapFile{Data: []byte(`CREATE TABLE b (y INTEGER);`)}
	db, err := sqlitedb.Open(context.Background(), path, fs)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	db.Read.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&n)
	if n != 2 {
		t.Fatalf("%d migrations recorded, want 2", n)
	}
}

func TestStoreError(t *testing.T) {
	own := failure.New(failure.NotFound, "x")
	for _, c := range []struct {
		in   error
		want failure.Kind
	}{
		{nil, ""},
		{own, failure.NotFound},
		{fmt.Errorf("wrapped: %w", context.Canceled), failure.Interrupted},
		{context.DeadlineExceeded, failure.Interrupted},
		{errors.New("disk I/O error"), failure.Unavailable},
	} {
		got := sqlitedb.StoreError(c.in, "test store")
		if failure.KindOf(got) != c.want || (c.in == own && got != own) {
			t.Errorf("StoreError(%v) = %v, want kind %q", c.in, got, c.want)
		}
	}
	if msg := failure.MessageOf(sqlitedb.StoreError(errors.New("boom"), "test store")); msg != "test store unavailable" {
		t.Errorf("message %q", msg)
	}
}

func TestGoRunsInQueueOrderAndWaitSeesIt(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	var mu sync.Mutex
	var outcomes []error
	var last uint64
	for i := range 50 {
		tk, err := db.Writer.Go(ctx, func(ctx context.Context, tx *sql.Tx) error {
			// Each function sees exactly the rows of the functions queued
			// before it: queue order is commit order.
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM kv`).Scan(&n); err != nil {
				return err
			}
			if n != i {
				return fmt.Errorf("function %d saw %d rows", i, n)
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO kv VALUES (?, ?)`, fmt.Sprint(i), i)
			return err
		}, func(err error) { mu.Lock(); outcomes = append(outcomes, err); mu.Unlock() })
		if err != nil {
			t.Fatal(err)
		}
		if tk <= last {
			t.Fatalf("ticket %d after %d", tk, last)
		}
		last = tk
	}
	if q := db.Writer.Queued(); q != last {
		t.Fatalf("Queued = %d, want %d", q, last)
	}
	if err := db.Writer.Wait(ctx, last); err != nil {
		t.Fatal(err)
	}
	if got := count(t, db); got != 50 {
		t.Fatalf("rows after Wait = %d, want 50", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(outcomes) != 50 {
		t.Fatalf("%d outcomes, want 50", len(outcomes))
	}
	for i, err := range outcomes {
		if err != nil {
			t.Fatalf("outcome %d: %v", i, err)
		}
	}
}

func TestLazyBatchesCommitWithNormalAndDurableOnesWithFull(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	insert := func(k string) sqlitedb.TxFunc {
		return func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO kv VALUES (?, 1)`, k)
			return err
		}
	}
	if err := db.Writer.DoLazy(ctx, insert("a")); err != nil {
		t.Fatal(err)
	}
	if n := db.Writer.LazyCommits(); n != 1 {
		t.Fatalf("lazy commits after DoLazy = %d, want 1", n)
	}
	if err := db.Writer.Do(ctx, insert("b")); err != nil {
		t.Fatal(err)
	}
	if n := db.Writer.LazyCommits(); n != 1 {
		t.Fatalf("lazy commits after Do = %d, want still 1", n)
	}
	// The connection is back at FULL after a durable batch: read it on
	// the writer's own connection.
	var level int
	if err := db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&level)
	}); err != nil {
		t.Fatal(err)
	}
	if level != 2 {
		t.Fatalf("synchronous on the writer after a durable batch = %d, want 2 (FULL)", level)
	}
	if got := count(t, db); got != 2 {
		t.Fatalf("rows = %d, want 2", got)
	}
}

func TestGoAfterCloseIsErrClosed(t *testing.T) {
	db := open(t)
	db.Close()
	if _, err := db.Writer.Go(context.Background(), func(context.Context, *sql.Tx) error { return nil }, nil); !errors.Is(err, sqlitedb.ErrClosed) {
		t.Fatalf("Go after Close = %v, want ErrClosed", err)
	}
}

// TestStmtIsCachedAndRunsInReadTransactions checks that Stmt prepares a
// query text once, that a read transaction runs it and sees committed
// rows, and that a text that cannot be prepared gives nil.
func TestStmtIsCachedAndRunsInReadTransactions(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	if err := db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES ('a', 7)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	const q = `SELECT v FROM kv WHERE k = ?`
	st := db.Stmt(ctx, q)
	if st == nil || db.Stmt(ctx, q) != st {
		t.Fatalf("Stmt(%q) = %p then %p, want one prepared statement", q, st, db.Stmt(ctx, q))
	}
	tx, err := db.Read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.StmtContext(ctx, st).QueryRowContext(ctx, "a").Scan(&v); err != nil || v != 7 {
		t.Fatalf("v = %d, %v; want 7", v, err)
	}
	if st := db.Stmt(ctx, `SELECT nothing FROM nowhere`); st != nil {
		t.Fatal("Stmt of an invalid query is not nil")
	}
}

// insertKV is a write function adding key k.
func insertKV(k string) sqlitedb.TxFunc {
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO kv VALUES (?, 1)`, k)
		return err
	}
}

// TestGatherBehindSharesOneCommitAndWaitEndsIt: behind writes queued while
// a gathering batch waits commit together, and a Wait ends the gathering
// (an hour long here: without the kick the test would hang).
func TestGatherBehindSharesOneCommitAndWaitEndsIt(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	gathering := make(chan struct{}, 1)
	sqlitedb.SetOnGather(db.Writer, func() { gathering <- struct{}{} })
	db.Writer.GatherBehind(time.Hour)
	commits0, _ := db.Writer.Stats()
	for i := range 3 {
		if _, err := db.Writer.Go(ctx, insertKV(fmt.Sprint(i)), nil); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// The first write's batch is gathering: the others arrive
			// after the writer took it.
			<-gathering
		}
	}
	if err := db.Writer.Wait(ctx, db.Writer.Queued()); err != nil {
		t.Fatal(err)
	}
	commits, jobs := db.Writer.Stats()
	if commits-commits0 != 1 || jobs != 3 {
		t.Fatalf("commits %d, jobs %d: want the 3 behind writes in 1 commit", commits-commits0, jobs)
	}
	if got := count(t, db); got != 3 {
		t.Fatalf("rows = %d, want 3", got)
	}
	if n := db.Writer.LazyCommits(); n != 1 {
		t.Fatalf("lazy commits = %d, want 1", n)
	}
}

// TestReadIdleWhileBehindWritesGather: a gathering batch does not hold the
// writer's connection, so ReadIdle reads on it, and sees the committed
// rows only, not the gathering write.
func TestReadIdleWhileBehindWritesGather(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	if err := db.Writer.Do(ctx, insertKV("committed")); err != nil {
		t.Fatal(err)
	}
	get, err := db.Writer.Prepare(ctx, `SELECT COUNT(*) FROM kv`)
	if err != nil {
		t.Fatal(err)
	}
	gathering := make(chan struct{}, 1)
	sqlitedb.SetOnGather(db.Writer, func() { gathering <- struct{}{} })
	db.Writer.GatherBehind(time.Hour)
	if _, err := db.Writer.Go(ctx, insertKV("behind"), nil); err != nil {
		t.Fatal(err)
	}
	<-gathering
	var n int
	ran, err := db.Writer.ReadIdle(func() error { return get.QueryRowContext(ctx).Scan(&n) })
	if !ran || err != nil || n != 1 {
		t.Fatalf("while gathering: ran=%v err=%v n=%d, want true, nil, 1", ran, err, n)
	}
	if err := db.Writer.Wait(ctx, db.Writer.Queued()); err != nil {
		t.Fatal(err)
	}
	if got := count(t, db); got != 2 {
		t.Fatalf("rows = %d, want 2", got)
	}
}

// TestGatherBehindNeverDelaysDo: a Do arriving while behind writes gather
// joins their batch and commits at once, durably, with them before it.
func TestGatherBehindNeverDelaysDo(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	db.Writer.GatherBehind(time.Hour)
	behind := make(chan error, 1)
	if _, err := db.Writer.Go(ctx, insertKV("behind"), func(err error) { behind <- err }); err != nil {
		t.Fatal(err)
	}
	if err := db.Writer.Do(ctx, insertKV("durable")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-behind:
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatal("the behind write queued before the Do had not ended when Do returned")
	}
	if got := count(t, db); got != 2 {
		t.Fatalf("rows = %d, want 2", got)
	}
	if n := db.Writer.LazyCommits(); n != 0 {
		t.Fatalf("lazy commits = %d, want 0 (the batch carried a Do)", n)
	}
}

// TestGatherBehindEndsAtClose: closing the database commits a gathering
// batch.
func TestGatherBehindEndsAtClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	migrations := fstest.MapFS{"0001_init.sql": {Data: []byte(`CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL);`)}}
	db, err := sqlitedb.Open(context.Background(), path, migrations)
	if err != nil {
		t.Fatal(err)
	}
	db.Writer.GatherBehind(time.Hour)
	if _, err := db.Writer.Go(context.Background(), insertKV("a"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := sqlitedb.Open(context.Background(), path, migrations)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := count(t, again); got != 1 {
		t.Fatalf("rows after close = %d, want 1", got)
	}
}

// TestIdleAndQueuedWritesKeepTicketOrder: a Do at an idle writer runs
// its batch itself, others queue behind it; whichever way each function
// runs, a Wait on a Go's ticket returns only once that function's batch
// has ended, every outcome is delivered, and every row is committed.
func TestIdleAndQueuedWritesKeepTicketOrder(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	const workers, rounds = 4, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*2)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				if err := db.Writer.Do(ctx, insertKV(fmt.Sprintf("do_%d_%d", w, i))); err != nil {
					errs <- err
					return
				}
				var outcome error
				var delivered atomic.Bool
				k := fmt.Sprintf("go_%d_%d", w, i)
				tk, err := db.Writer.Go(ctx, insertKV(k), func(err error) { outcome = err; delivered.Store(true) })
				if err != nil {
					errs <- err
					return
				}
				if err := db.Writer.Wait(ctx, tk); err != nil {
					errs <- err
					return
				}
				if !delivered.Load() {
					errs <- fmt.Errorf("%s: Wait returned before the outcome was delivered", k)
					return
				}
				if outcome != nil {
					errs <- outcome
					return
				}
				var n int
				if err := db.Read.QueryRow(`SELECT COUNT(*) FROM kv WHERE k = ?`, k).Scan(&n); err != nil || n != 1 {
					errs <- fmt.Errorf("%s after Wait: %d rows (%v)", k, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := count(t, db); got != workers*rounds*2 {
		t.Fatalf("rows = %d, want %d", got, workers*rounds*2)
	}
}

// TestCloseWaitsForADoRunningOnItsCaller: a Do at an idle writer runs on
// its caller's goroutine; Close returns only after that batch ended, and
// its row is committed.
func TestCloseWaitsForADoRunningOnItsCaller(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	migrations := fstest.MapFS{"0001_init.sql": {Data: []byte(`CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL);`)}}
	db, err := sqlitedb.Open(context.Background(), path, migrations)
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var ended atomic.Bool
	done := make(chan error, 1)
	go func() {
		done <- db.Writer.Do(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			close(entered)
			<-release
			_, err := tx.ExecContext(ctx, `INSERT INTO kv VALUES ('a', 1)`)
			ended.Store(true)
			return err
		})
	}()
	<-entered
	closed := make(chan bool, 1)
	go func() {
		db.Close()
		closed <- ended.Load()
	}()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !<-closed {
		t.Fatal("Close returned while a Do's batch was still running")
	}
	again, err := sqlitedb.Open(context.Background(), path, migrations)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := count(t, again); got != 1 {
		t.Fatalf("rows after close = %d, want 1", got)
	}
}

// TestReadIdleRunsOnlyAtAnIdleWriter: ReadIdle reads on the writer's
// connection when no batch is running (fn's error is returned),
// and declines, without running fn, while a batch runs and after close.
func TestReadIdleRunsOnlyAtAnIdleWriter(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	if err := db.Writer.Do(ctx, insertKV("a")); err != nil {
		t.Fatal(err)
	}
	get, err := db.Writer.Prepare(ctx, `SELECT COUNT(*) FROM kv`)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	ran, err := db.Writer.ReadIdle(func() error { return get.QueryRowContext(ctx).Scan(&n) })
	if !ran || err != nil || n != 1 {
		t.Fatalf("idle: ran=%v err=%v n=%d, want true, nil, 1", ran, err, n)
	}
	boom := errors.New("boom")
	if ran, err := db.Writer.ReadIdle(func() error { return boom }); !ran || err != boom {
		t.Fatalf("fn's error: ran=%v err=%v", ran, err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	called := false
	if ran, err := db.Writer.ReadIdle(func() error { called = true; return nil }); ran || err != nil || called {
		t.Fatalf("during a batch: ran=%v err=%v called=%v, want a refusal", ran, err, called)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	db.Close()
	if ran, _ := db.Writer.ReadIdle(func() error { called = true; return nil }); ran || called {
		t.Fatal("ReadIdle ran after close")
	}
}

// TestOpenBuildsANewDatabaseWhole: a database that does not exist is
// created with every migration, in WAL mode, with mode 0600 and no
// temporary file left beside it; a migration that fails leaves no
// database at all, and the next Open builds it again.
func TestOpenBuildsANewDatabaseWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.db")
	bad := fstest.MapFS{"0001_a.sql": {Data: []byte(`CREATE TABLE a (x INTEGER);`)}, "0002_b.sql": {Data: []byte(`CREATE TABLE nonsense`)}}
	if db, err := sqlitedb.Open(context.Background(), path, bad); err == nil {
		db.Close()
		t.Fatal("a failing migration opened")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a failed creation left %v", entries)
	}
	good := fstest.MapFS{"0001_a.sql": {Data: []byte(`CREATE TABLE a (x INTEGER);`)}, "0002_b.sql": {Data: []byte(`CREATE TABLE b (y INTEGER);`)}}
	db, err := sqlitedb.Open(context.Background(), path, good)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	var n int
	db.Read.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
	db.Read.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&n)
	if mode != "wal" || n != 2 {
		t.Fatalf("journal_mode %s, %d migrations recorded; want wal, 2", mode, n)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("database file: %v %v", st, err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Fatalf("a temporary file was left: %s", e.Name())
		}
	}
}

// TestPendingMigrationsAllOrNone: migrations pending at an open apply in
// one transaction: when one fails, none of them is applied.
func TestPendingMigrationsAllOrNone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	ms := fstest.MapFS{"0001_a.sql": {Data: []byte(`CREATE TABLE a (x INTEGER);`)}}
	db, err := sqlitedb.Open(context.Background(), path, ms)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	ms["0002_b.sql"] = &fstest.MapFile{Data: []byte(`CREATE TABLE b (y INTEGER);`)}
	ms["0003_c.sql"] = &fstest.MapFile{Data: []byte(`CREATE TABLE nonsense`)}
	if db, err := sqlitedb.Open(context.Background(), path, ms); err == nil {
		db.Close()
		t.Fatal("a failing migration opened")
	}
	ms["0003_c.sql"] = &fstest.MapFile{Data: []byte(`CREATE TABLE c (z INTEGER);`)}
	check, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var tables int
	check.QueryRow(`SELECT COUNT(*) FROM sqlite_schema WHERE name = 'b'`).Scan(&tables)
	check.Close()
	if tables != 0 {
		t.Fatal("0002 was applied although 0003 failed")
	}
	db, err = sqlitedb.Open(context.Background(), path, ms)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	db.Read.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&n)
	if n != 3 {
		t.Fatalf("%d migrations recorded, want 3", n)
	}
}
