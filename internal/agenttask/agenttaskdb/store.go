// Package agenttaskdb is the SQLite implementation of [agenttask.Store]:
// Agent Tasks and their attempts in their own database file (tasks.db),
// which shares nothing with any other store. Every mutation runs on the
// database's one writer, so a task is judged while no other write runs,
// and is durable (synchronous=FULL) when it returns.
package agenttaskdb

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"time"

	"github.com/webcodex/webcodex/internal/agenttask"
	"github.com/webcodex/webcodex/internal/agenttask/taskrow"
	"github.com/webcodex/webcodex/internal/sqlitedb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// FileName is the database's name inside the data directory.
const FileName = "tasks.db"

const storeName = "agent task store"

var dialect = taskrow.Dialect{}

// Store is an agenttask.Store backed by one SQLite database file.
type Store struct{ db *sqlitedb.DB }

var _ agenttask.Store = (*Store)(nil)

// Open opens (creating and migrating if needed) the database at path.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Migrations(migrations, "migrations"))
	if err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

// Close waits for queued writes and closes the database.
func (s *Store) Close() error { return s.db.Close() }

// conn is what *sql.Tx and *sql.DB share.
type conn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// querier is a taskrow.Querier over a transaction or the read pool.
type querier struct{ c conn }

type row struct{ r *sql.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return taskrow.ErrNoRows
	}
	return err
}

func (q querier) Exec(ctx context.Context, query string, args ...any) error {
	_, err := q.c.ExecContext(ctx, query, args...)
	return err
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) taskrow.Row {
	return row{q.c.QueryRowContext(ctx, query, args...)}
}

func (q querier) Query(ctx context.Context, query string, args []any, each func(taskrow.Row) error) error {
	rows, err := q.c.QueryContext(ctx, query, args...)
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

func (s *Store) read() querier { return querier{s.db.Read} }

// write runs fn in one durable write transaction.
func (s *Store) write(ctx context.Context, fn func(q querier) error) error {
	return sqlitedb.StoreError(s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return fn(querier{tx})
	}), storeName)
}

// Create implements agenttask.Store.
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
	return t, sqlitedb.StoreError(err, storeName)
}

// List implements agenttask.Store: the page and the total are read in one
// transaction, so they agree.
func (s *Store) List(ctx context.Context, f agenttask.ListFilter) ([]agenttask.Task, int, error) {
	tx, err := s.db.Read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, sqlitedb.StoreError(err, storeName)
	}
	defer tx.Rollback()
	out, total, err := taskrow.List(ctx, querier{tx}, dialect, f)
	return out, total, sqlitedb.StoreError(err, storeName)
}

// Attempt implements agenttask.Store.
func (s *Store) Attempt(ctx context.Context, id string) (agenttask.Attempt, error) {
	a, err := taskrow.Attempt(ctx, s.read(), dialect, id)
	return a, sqlitedb.StoreError(err, storeName)
}

// Attempts implements agenttask.Store.
func (s *Store) Attempts(ctx context.Context, taskID string) ([]agenttask.Attempt, error) {
	as, err := taskrow.Attempts(ctx, s.read(), dialect, taskID)
	return as, sqlitedb.StoreError(err, storeName)
}

// Mutate implements agenttask.Store on the one writer.
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
	return ids, sqlitedb.StoreError(err, storeName)
}

// Lapsed implements agenttask.Store.
func (s *Store) Lapsed(ctx context.Context, now time.Time, limit int) ([]string, error) {
	ids, err := taskrow.Lapsed(ctx, s.read(), dialect, now, limit)
	return ids, sqlitedb.StoreError(err, storeName)
}

// Raw returns a task's stored rows as text, for tests that prove nothing
// changed.
func (s *Store) Raw(ctx context.Context, id string) (string, error) {
	raw, err := taskrow.Raw(ctx, s.read(), dialect, id)
	return raw, sqlitedb.StoreError(err, storeName)
}
