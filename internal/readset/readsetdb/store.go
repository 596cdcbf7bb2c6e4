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
	"github.com/webcodex/webcodex/internal/sqlrow"
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
	// The writer's statements are compiled once: parsing them would cost
	// as much as running them, on every observation.
	prepared := map[string]*sql.Stmt{}
	for _, q := range (readrow.Dialect{}).WriteStatements() {
		st, err := db.Writer.Prepare(ctx, q)
		if err != nil {
			db.Close()
			return nil, storeError(err)
		}
		prepared[q] = st
	}
	return &Store{db: db, Store: &readrow.Store{
		Read:       pool{db},
		StoreError: storeError,
		Write: func(ctx context.Context, fn func(q readrow.Querier) error) error {
			return storeError(db.Writer.DoLazy(ctx, func(ctx context.Context, tx *sql.Tx) error {
				return fn(writeTx{tx: tx, prepared: prepared})
			}))
		},
	}}, nil
}

// writeTx is a readrow.Querier over the writer's transaction that runs
// the statements prepared at Open as such.
type writeTx struct {
	tx       *sql.Tx
	prepared map[string]*sql.Stmt
}

func (w writeTx) Exec(ctx context.Context, query string, args ...any) error {
	if st := w.prepared[query]; st != nil {
		_, err := w.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
		return err
	}
	return querier{w.tx}.Exec(ctx, query, args...)
}

func (w writeTx) Query(ctx context.Context, query string, args []any, each func(readrow.Row) error) error {
	if st := w.prepared[query]; st != nil {
		return scan(w.tx.StmtContext(ctx, st).QueryContext(ctx, args...))(each)
	}
	return querier{w.tx}.Query(ctx, query, args, each)
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
	return scan(q.c.QueryContext(ctx, query, args...))(each)
}

// scan calls each for every row of a query's result.
func scan(rows *sql.Rows, err error) func(each func(readrow.Row) error) error {
	return func(each func(readrow.Row) error) error {
		if err != nil {
			return err
		}
		defer rows.Close()
		return sqlrow.Each(rows, each)
	}
}

// pool is a readrow.Querier over the read pool whose queries run as
// statements prepared once and cached by text (sqlitedb.DB.Stmt): the
// per-call pending lookup would otherwise compile its SQL every time.
type pool struct{ db *sqlitedb.DB }

func (p pool) Exec(ctx context.Context, query string, args ...any) error {
	return querier{p.db.Read}.Exec(ctx, query, args...)
}

func (p pool) Query(ctx context.Context, query string, args []any, each func(readrow.Row) error) error {
	if st := p.db.Stmt(ctx, query); st != nil {
		return scan(st.QueryContext(ctx, args...))(each)
	}
	return querier{p.db.Read}.Query(ctx, query, args, each)
}

func storeError(err error) error { return sqlitedb.StoreError(err, storeName) }

// DB returns the store's database (its writer's statistics, a readiness
// probe).
func (s *Store) DB() *sqlitedb.DB { return s.db }
