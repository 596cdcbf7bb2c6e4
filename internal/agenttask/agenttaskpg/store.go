// Package agenttaskpg is the PostgreSQL implementation of
// [agenttask.Store]: Agent Tasks and their attempts in the schema tasks
// of a shared database, which shares nothing with any other schema.
// Every decision is made by the database: a mutation locks the task's row
// FOR UPDATE in one READ COMMITTED transaction while the task is judged,
// so two replicas racing for one task are served one after the other and
// the second judges what the first stored; and the partial unique index
// attempts_one_live refuses a second live attempt even so.
package agenttaskpg

import (
	"context"
	"embed"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/agenttask"
	"github.com/webcodex/webcodex/internal/agenttask/taskrow"
	"github.com/webcodex/webcodex/internal/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Schema is the store's PostgreSQL schema.
const Schema = "tasks"

const storeName = "agent task store"

var dialect = taskrow.Dialect{
	Prefix:    Schema + ".",
	ForUpdate: " FOR UPDATE",
	LockKey:   `SELECT pg_advisory_xact_lock(hashtext('webcodex.tasks.idempotency'), hashtext(?))`,
	IDOrder:   `COLLATE "C"`,
	Dollar:    true,
}

// Store is an agenttask.Store on PostgreSQL.
type Store struct{ db *pgdb.DB }

var _ agenttask.Store = (*Store)(nil)

// Open migrates the schema tasks of db and returns its store; the pool
// stays the caller's. Errors: those of pgdb.DB.Migrate.
func Open(ctx context.Context, db *pgdb.DB) (*Store, error) {
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

// Migrate brings the store's schema in db up to this version without
// opening the store.
func Migrate(ctx context.Context, db *pgdb.DB) error {
	return db.Migrate(ctx, Schema, migrations, "migrations")
}

// querier is a taskrow.Querier over a transaction or the pool.
type querier struct {
	exec     func(ctx context.Context, sql string, args ...any) error
	queryRow func(ctx context.Context, sql string, args ...any) pgx.Row
	query    func(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func over(tx pgx.Tx) querier {
	return querier{
		exec: func(ctx context.Context, sql string, args ...any) error {
			_, err := tx.Exec(ctx, sql, args...)
			return err
		},
		queryRow: tx.QueryRow, query: tx.Query,
	}
}

func (s *Store) read() querier {
	return querier{
		exec: func(ctx context.Context, sql string, args ...any) error {
			_, err := s.db.Pool.Exec(ctx, sql, args...)
			return err
		},
		queryRow: s.db.Pool.QueryRow, query: s.db.Pool.Query,
	}
}

type row struct{ r pgx.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return taskrow.ErrNoRows
	}
	return err
}

func (q querier) Exec(ctx context.Context, query string, args ...any) error {
	return q.exec(ctx, query, args...)
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) taskrow.Row {
	return row{q.queryRow(ctx, query, args...)}
}

func (q querier) Query(ctx context.Context, query string, args []any, each func(taskrow.Row) error) error {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// write runs fn in one transaction (retried whole on a serialization
// failure or deadlock, as pgdb.DB.Tx does).
func (s *Store) write(ctx context.Context, fn func(q querier) error) error {
	return pgdb.StoreError(s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		return fn(over(tx))
	}), storeName)
}

// Create implements agenttask.Store: creates with one idempotency key are
// serialized by a transaction-scoped advisory lock on its scope.
func (s *Store) Create(ctx context.Context, t agenttask.Task) (agenttask.Task, bool, error) {
	var out agenttask.Task
	var replayed bool
	err := s.write(ctx, func(q querier) (err error) {
		out, replayed, err = taskrow.Create(ctx, q, dialect, t)
		return err
	})
	return out, replayed, err
}

// Get implements agenttask.Store.
func (s *Store) Get(ctx context.Context, id string) (agenttask.Task, error) {
	t, err := taskrow.Get(ctx, s.read(), dialect, id)
	return t, pgdb.StoreError(err, storeName)
}

// List implements agenttask.Store: the page and the total are read in one
// REPEATABLE READ transaction, so they agree.
func (s *Store) List(ctx context.Context, f agenttask.ListFilter) ([]agenttask.Task, int, error) {
	tx, err := s.db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, 0, pgdb.StoreError(err, storeName)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	out, total, err := taskrow.List(ctx, over(tx), dialect, f)
	return out, total, pgdb.StoreError(err, storeName)
}

// Attempt implements agenttask.Store.
func (s *Store) Attempt(ctx context.Context, id string) (agenttask.Attempt, error) {
	a, err := taskrow.Attempt(ctx, s.read(), dialect, id)
	return a, pgdb.StoreError(err, storeName)
}

// Attempts implements agenttask.Store.
func (s *Store) Attempts(ctx context.Context, taskID string) ([]agenttask.Attempt, error) {
	as, err := taskrow.Attempts(ctx, s.read(), dialect, taskID)
	return as, pgdb.StoreError(err, storeName)
}

// Mutate implements agenttask.Store: the task's row is locked FOR UPDATE
// while fn judges it.
func (s *Store) Mutate(ctx context.Context, taskID, attemptID string, fn func(l *agenttask.Locked) (bool, error)) (agenttask.Locked, error) {
	var out agenttask.Locked
	err := s.write(ctx, func(q querier) (err error) {
		out, err = taskrow.Mutate(ctx, q, dialect, taskID, attemptID, fn)
		return err
	})
	return out, err
}

// Ready implements agenttask.Store.
func (s *Store) Ready(ctx context.Context, f agenttask.ReadyFilter) ([]string, error) {
	ids, err := taskrow.Ready(ctx, s.read(), dialect, f)
	return ids, pgdb.StoreError(err, storeName)
}

// Lapsed implements agenttask.Store.
func (s *Store) Lapsed(ctx context.Context, now time.Time, limit int) ([]string, error) {
	ids, err := taskrow.Lapsed(ctx, s.read(), dialect, now, limit)
	return ids, pgdb.StoreError(err, storeName)
}

// Raw returns a task's stored rows as text, for tests that prove nothing
// changed.
func (s *Store) Raw(ctx context.Context, id string) (string, error) {
	raw, err := taskrow.Raw(ctx, s.read(), dialect, id)
	return raw, pgdb.StoreError(err, storeName)
}
