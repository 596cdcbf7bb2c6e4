// Package readsetdb is the SQLite implementation of [readset.Store]: read
// sets and their notices in their own database file (readsets.db), which
// shares nothing with any other store. Writes run on the database's one
// writer and commit with synchronous=NORMAL (sqlitedb.Writer.DoLazy): the
// read set is advisory, so a power loss may lose the newest observations
// or deliver a notice again, never anything a call depends on.
package readsetdb

import (
	"context"
	"database/sql"
	"embed"

	"github.com/webcodex/webcodex/internal/readset"
	"github.com/webcodex/webcodex/internal/readset/readrow"
	"github.com/webcodex/webcodex/internal/sqlitedb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// FileName is the database's name inside the data directory.
const FileName = "readsets.db"

const storeName = "read set store"

// Store is a readset.Store backed by one SQLite database file.
type Store struct {
	*readrow.Store
	db *sqlitedb.DB
}

var _ readset.Store = (*Store)(nil)

// Open opens (creating and migrating if needed) the database at path.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Migrations(migrations, "migrations"))
	if err != nil {
		return nil, err
	}
	return &Store{db: db, Store: &readrow.Store{
		Read:       querier{db.Read},
		StoreError: storeError,
		Write: func(ctx context.Context, fn func(q readrow.Querier) error) error {
			return storeError(db.Writer.DoLazy(ctx, func(ctx context.Context, tx *sql.Tx) error { return fn(querier{tx}) }))
		},
	}}, nil
}

// Close waits for queued writes and closes the database.
func (s *Store) Close() error { return s.db.Close() }

// conn is what *sql.Tx and *sql.DB share.
type conn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// querier is a readrow.Querier over a transaction or the read pool.
type querier struct{ c conn }

func (q querier) Exec(ctx context.Context, query string, args ...any) error {
	_, err := q.c.ExecContext(ctx, query, args...)
	return err
}

func (q querier) Query(ctx context.Context, query string, args []any, each func(readrow.Row) error) error {
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

func storeError(err error) error { return sqlitedb.StoreError(err, storeName) }
