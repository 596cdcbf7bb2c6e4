// Package intentpg is the PostgreSQL implementation of [intent.Store]:
// declared intents and their undelivered overlap notices in the schema
// intents of a shared database, which shares nothing with any other
// schema. A declaration takes a transaction-scoped advisory lock on its
// owner and project, so two replicas declaring overlapping intents at
// once are judged one after the other and the second sees the first.
package intentpg

import (
	"context"
	"embed"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/intent"
	"github.com/webcodex/webcodex/internal/intent/intentrow"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/sqlrow"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Schema is the store's PostgreSQL schema.
const Schema = "intents"

const storeName = "intent store"

// Channel is the LISTEN/NOTIFY channel of new overlap notices: a Declare
// that stored one notifies it in its transaction (with the empty key),
// so that every replica's intent.Service reads its sessions' notices
// again (intent.Service.WatchChanges).
const Channel = "intent_notices"

var dialect = intentrow.Dialect{
	Prefix: Schema + ".",
	Lock:   `SELECT pg_advisory_xact_lock(hashtext('webcodex.intents'), hashtext($1 || ' ' || $2))`,
	Dollar: true,
	Notify: `SELECT pg_notify('` + Channel + `', '')`,
}

// Store is an intent.Store on PostgreSQL.
type Store struct{ *intentrow.Store }

var _ intent.Store = (*Store)(nil)

// Open migrates the schema intents of db and returns its store; the pool
// stays the caller's. Errors: those of pgdb.DB.Migrate.
func Open(ctx context.Context, db *pgdb.DB) (*Store, error) {
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	return &Store{&intentrow.Store{
		Dialect:    dialect,
		Read:       sqlrow.PGX(db.Pool),
		StoreError: storeError,
		Write: func(ctx context.Context, fn func(q intentrow.Querier) error) error {
			return storeError(db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
				return fn(sqlrow.PGX(tx))
			}))
		},
	}}, nil
}

// Migrate brings the store's schema in db up to this version without
// opening the store.
func Migrate(ctx context.Context, db *pgdb.DB) error {
	return db.Migrate(ctx, Schema, migrations, "migrations")
}

func storeError(err error) error { return pgdb.StoreError(err, storeName) }
