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
type Store struct {
	*taskrow.Store
	db *sqlitedb.DB
}

var _ agenttask.Store = (*Store)(nil)

// Open opens (creating and migrating if needed) the database at path.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Migrations(migrations, "migrations"))
	if err != nil {
		return nil, err
	}
	st := &Store{db: db, Store: &taskrow.Store{
		Dialect:    dialect,
		Read:       querier{db.Read},
		StoreError: storeError,
		Write: func(ctx context.Context, fn func(q taskrow.Querier) error) error {
			return storeError(db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error { return fn(querier{tx}) }))
		},
		Snapshot: func(ctx context.Context, fn func(q taskrow.Querier) error) error {
			tx, err := db.Read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			if err != nil {
				return storeError(err)
			}
			defer tx.Rollback()
			return storeError(fn(querier{tx}))
		},
	}}
	if err := st.LoadEventKey(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return st, nil
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
	return taskrow.Each(rows, each)
}

func storeError(err error) error { return sqlitedb.StoreError(err, storeName) }

// DB returns the store's database (its writer's statistics, a readiness
// probe).
func (s *Store) DB() *sqlitedb.DB { return s.db }
