// Package readsetpg is the PostgreSQL implementation of [readset.Store]:
// read sets and their notices in the schema readsets of a shared
// database, which shares nothing with any other schema. Several replicas
// share it: a notice is delivered by the DELETE … RETURNING that removes
// it, so two replicas serving one session's concurrent calls never
// deliver it twice.
package readsetpg

import (
	"context"
	"embed"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/readset"
	"github.com/webcodex/webcodex/internal/readset/readrow"
	"github.com/webcodex/webcodex/internal/sqlrow"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Schema is the store's PostgreSQL schema.
const Schema = "readsets"

const storeName = "read set store"

// Channel is the LISTEN/NOTIFY channel of new notices: a Record that
// made one notifies it in its transaction (with the empty key), so that
// every replica's Tracker forgets which sessions it knew had nothing
// pending (readset.Tracker.Changed).
const Channel = "readset_notices"

var dialect = readrow.Dialect{Prefix: Schema + ".", PathOrder: ` COLLATE "C"`, Placeholders: sqlrow.Dollar,
	Notify: `SELECT pg_notify('` + Channel + `', '')`}

// Store is a readset.Store on PostgreSQL.
type Store struct{ *readrow.Store }

var _ readset.Store = (*Store)(nil)

// Open migrates the schema readsets of db and returns its store; the pool
// stays the caller's. Errors: those of pgdb.DB.Migrate.
func Open(ctx context.Context, db *pgdb.DB) (*Store, error) {
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	return &Store{&readrow.Store{
		Dialect:    dialect,
		Read:       querier{exec: db.Pool.Exec, query: db.Pool.Query},
		StoreError: storeError,
		Write: func(ctx context.Context, fn func(q readrow.Querier) error) error {
			return storeError(db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
				return fn(querier{exec: tx.Exec, query: tx.Query})
			}))
		},
	}}, nil
}

// Migrate brings the store's schema in db up to this version without
// opening the store.
func Migrate(ctx context.Context, db *pgdb.DB) error {
	return db.Migrate(ctx, Schema, migrations, "migrations")
}

// querier is a readrow.Querier over a transaction or the pool.
type querier struct {
	exec  func(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	query func(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (q querier) Exec(ctx context.Context, query string, args ...any) error {
	_, err := q.exec(ctx, query, args...)
	return err
}

func (q querier) Query(ctx context.Context, query string, args []any, each func(readrow.Row) error) error {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return sqlrow.Each(rows, each)
}

func storeError(err error) error { return pgdb.StoreError(err, storeName) }
