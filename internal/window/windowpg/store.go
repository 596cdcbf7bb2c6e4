// Package windowpg is the PostgreSQL implementation of [window.Store]:
// window activity and peer messages in the schema windows of a shared
// database, which shares nothing with any other schema (decision 0032).
//
// Activity, projection and awareness facts are written behind the caller,
// as window.db writes them on its lazy path: one writer goroutine per
// Store takes them from a queue of QueueCapacity in order, each in its own
// transaction, and Flush waits for what was queued before it. A peer
// message is one transaction, durable when PostMessage returns. Reads go
// to the database every time: there is no read cache in this increment.
package windowpg

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/window"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Schema is the store's PostgreSQL schema (WINDOW is a reserved word).
const Schema = "windows"

// QueueCapacity bounds the writes queued behind callers; past it Touch,
// Delivered and SetAwareness wait for room until their context ends.
const QueueCapacity = 1024

const storeName = "window store"

type job struct {
	write func(ctx context.Context, tx pgx.Tx) error
	then  func(error)
	flush chan struct{} // closed when every job before it is done
}

// Store is a window.Store on PostgreSQL.
type Store struct {
	db     *pgdb.DB
	queue  chan job
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.RWMutex // held shared while queueing, exclusively by Close
	closed bool
}

var _ window.Store = (*Store)(nil)

// Open migrates the schema windows of db and starts the store's writer;
// the pool stays the caller's, Close stops the writer. Errors: those of
// pgdb.DB.Migrate.
func Open(ctx context.Context, db *pgdb.DB) (*Store, error) {
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.Background())
	s := &Store{db: db, queue: make(chan job, QueueCapacity), ctx: wctx, cancel: cancel, done: make(chan struct{})}
	go s.writer()
	return s, nil
}

// Close stops the writer after the writes already queued; a write queued
// after Close fails with failure.Unavailable.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	<-s.done
	return nil
}

func (s *Store) writer() {
	defer close(s.done)
	for {
		select {
		case j := <-s.queue:
			s.run(j)
		case <-s.ctx.Done():
			for {
				select {
				case j := <-s.queue:
					s.run(j)
				default:
					return
				}
			}
		}
	}
}

func (s *Store) run(j job) {
	if j.flush != nil {
		close(j.flush)
		return
	}
	err := pgdb.StoreError(s.db.Tx(context.WithoutCancel(s.ctx), j.write), storeName)
	if j.then != nil {
		j.then(err)
	}
}

// enqueue queues j, waiting for room until ctx ends.
func (s *Store) enqueue(ctx context.Context, j job) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return failure.New(failure.Unavailable, "the window store is closed")
	}
	select {
	case s.queue <- j:
		return nil
	case <-ctx.Done():
		return failure.Wrap(failure.Unavailable, ctx.Err(), "the window store's write queue is full")
	}
}

// Flush implements window.Store: it waits until every write queued before
// it has been written or has failed.
func (s *Store) Flush(ctx context.Context) error {
	ch := make(chan struct{})
	if err := s.enqueue(ctx, job{flush: ch}); err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return failure.Wrap(failure.Unavailable, ctx.Err(), "waiting for the window store's writes")
	}
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// lockPrincipal serializes, across processes, the transactions that count
// principal's activity rows against Prune.MaxRows.
func lockPrincipal(ctx context.Context, tx pgx.Tx, principal string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('webcodex.windows.activity'), hashtext($1))`, principal)
	return err
}

// Touch implements window.Store. The bound of p.MaxRows is counted over
// many rows, so the transaction first takes principal's advisory lock.
func (s *Store) Touch(ctx context.Context, t window.Touch, p window.Prune, then func(error)) error {
	return s.enqueue(ctx, job{then: then, write: func(ctx context.Context, tx pgx.Tx) error {
		if err := lockPrincipal(ctx, tx, t.Principal); err != nil {
			return err
		}
		var aff *string
		var affAt *int64
		if t.Affinity != "" {
			at := ms(t.At)
			aff, affAt = &t.Affinity, &at
		}
		if _, err := tx.Exec(ctx, `INSERT INTO windows.window_activity AS a
			(principal, win, project, peer_id, first_at_ms, last_at_ms, calls, affinity_session, affinity_at_ms)
			VALUES ($1, $2, $3, $4, $5, $5, 1, $6, $7)
			ON CONFLICT (principal, win, project) DO UPDATE SET
			last_at_ms = greatest(a.last_at_ms, excluded.last_at_ms), calls = a.calls + 1,
			affinity_session = CASE WHEN excluded.affinity_at_ms >= coalesce(a.affinity_at_ms, 0)
				THEN excluded.affinity_session ELSE a.affinity_session END,
			affinity_at_ms = greatest(coalesce(a.affinity_at_ms, 0), coalesce(excluded.affinity_at_ms, 0))`,
			t.Principal, t.Window, t.Project, t.PeerID, ms(t.At), aff, affAt); err != nil {
			return fmt.Errorf("window activity: %w", err)
		}
		return pruneActivity(ctx, tx, t.Principal, p)
	}})
}

// pruneActivity removes activity older than the retention and, for
// principal, the rows beyond the newest MaxRows.
func pruneActivity(ctx context.Context, tx pgx.Tx, principal string, p window.Prune) error {
	if _, err := tx.Exec(ctx, `DELETE FROM windows.window_activity WHERE last_at_ms < $1`, ms(p.ActivityBefore)); err != nil {
		return fmt.Errorf("window activity retention: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM windows.window_activity WHERE principal = $1 AND (win, project) IN
		(SELECT win, project FROM windows.window_activity WHERE principal = $1
		 ORDER BY last_at_ms DESC, win, project OFFSET $2)`, principal, p.MaxRows); err != nil {
		return fmt.Errorf("window activity retention: %w", err)
	}
	return nil
}

// Peers implements window.Store.
func (s *Store) Peers(ctx context.Context, principal, win, project string, since time.Time, limit int) ([]string, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT peer_id FROM windows.window_activity
		WHERE principal = $1 AND project = $2 AND last_at_ms > $3 AND win <> $4
		ORDER BY last_at_ms DESC, peer_id LIMIT $5`, principal, project, ms(since), win, limit)
	if err != nil {
		return nil, pgdb.StoreError(err, storeName)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return out, pgdb.StoreError(err, storeName)
}

// one runs a single-row query; found is false when it returned no row.
func (s *Store) one(ctx context.Context, q string, args []any, dest ...any) (found bool, err error) {
	err = s.db.Pool.QueryRow(ctx, q, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, pgdb.StoreError(err, storeName)
}

// ResolvePeer implements window.Store.
func (s *Store) ResolvePeer(ctx context.Context, principal, peerID string, since time.Time) (string, bool, error) {
	var win string
	ok, err := s.one(ctx, `SELECT win FROM windows.window_activity
		WHERE principal = $1 AND peer_id = $2 AND last_at_ms >= $3 LIMIT 1`, []any{principal, peerID, ms(since)}, &win)
	return win, ok, err
}

// Activity implements window.Store.
func (s *Store) Activity(ctx context.Context, principal, win string) ([]window.ProjectActivity, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT project, first_at_ms, last_at_ms, calls FROM windows.window_activity
		WHERE principal = $1 AND win = $2 ORDER BY last_at_ms DESC, project`, principal, win)
	if err != nil {
		return nil, pgdb.StoreError(err, storeName)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (window.ProjectActivity, error) {
		var a window.ProjectActivity
		var first, last int64
		err := r.Scan(&a.Project, &first, &last, &a.Calls)
		a.FirstAt, a.LastAt = time.UnixMilli(first).UTC(), time.UnixMilli(last).UTC()
		return a, err
	})
	if out == nil && err == nil {
		out = []window.ProjectActivity{}
	}
	return out, pgdb.StoreError(err, storeName)
}

// LastActive implements window.Store.
func (s *Store) LastActive(ctx context.Context, win string) (time.Time, bool, error) {
	var last *int64
	if _, err := s.one(ctx, `SELECT max(last_at_ms) FROM windows.window_activity WHERE win = $1`, []any{win}, &last); err != nil || last == nil {
		return time.Time{}, false, err
	}
	return time.UnixMilli(*last).UTC(), true, nil
}

// Affinity implements window.Store.
func (s *Store) Affinity(ctx context.Context, principal, win, project string, since time.Time) (string, bool, error) {
	var id string
	ok, err := s.one(ctx, `SELECT affinity_session FROM windows.window_activity
		WHERE principal = $1 AND win = $2 AND project = $3 AND affinity_at_ms > $4 AND affinity_session IS NOT NULL`,
		[]any{principal, win, project, ms(since)}, &id)
	return id, ok, err
}

// Migrate brings the store's schema in db up to this version (a newer one
// is refused, as Open refuses it) without opening the store: `webcodex
// migrate` creates every schema before it copies rows into them.
func Migrate(ctx context.Context, db *pgdb.DB) error {
	return db.Migrate(ctx, Schema, migrations, "migrations")
}
