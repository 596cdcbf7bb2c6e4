// Package intentdb is the SQLite implementation of [intent.Store]:
// declared intents and their undelivered overlap notices in their own
// database file (intents.db), which shares nothing with any other store.
// Every mutation runs on the database's one writer, so a declaration is
// judged while no other write runs, and is durable (synchronous=FULL)
// when it returns.
package intentdb

import (
	"context"
	"database/sql"
	"embed"

	"github.com/webcodex/webcodex/internal/intent"
	"github.com/webcodex/webcodex/internal/intent/intentrow"
	"github.com/webcodex/webcodex/internal/sqlitedb"
	"github.com/webcodex/webcodex/internal/sqlrow"
)

//go:embed migrations/*.sql
var migrations embed.FS

// FileName is the database's name inside the data directory.
const FileName = "intents.db"

const storeName = "intent store"

// Store is an intent.Store backed by one SQLite database file.
type Store struct {
	*intentrow.Store
	db *sqlitedb.DB
}

var _ intent.Store = (*Store)(nil)

// Open opens (creating and migrating if needed) the database at path.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Migrations(migrations, "migrations"))
	if err != nil {
		return nil, err
	}
	return &Store{db: db, Store: &intentrow.Store{
		Read:       sqlrow.SQL(db.Read),
		StoreError: storeError,
		Write: func(ctx context.Context, fn func(q intentrow.Querier) error) error {
			return storeError(db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error { return fn(sqlrow.SQL(tx)) }))
		},
	}}, nil
}

// Close waits for queued writes and closes the database.
func (s *Store) Close() error { return s.db.Close() }

func storeError(err error) error { return sqlitedb.StoreError(err, storeName) }

// DB returns the store's database (its writer's statistics, a readiness
// probe).
func (s *Store) DB() *sqlitedb.DB { return s.db }
