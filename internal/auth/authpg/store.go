// Package authpg is the PostgreSQL implementation of [auth.Store] and
// [auth.ConsoleStore] (issue 27): credential records of every kind (API
// tokens, runner tokens, project credentials and project shares) and
// Runtime Console sessions, in the schema auth of a database shared with
// the other domains.
//
// It keeps the SQLite store's contract (internal/auth/authdb) exactly:
// only token hashes are stored; times are Unix nanoseconds; every mutation
// is one transaction (pgdb.DB.Tx) and returns only after its commit. There
// is no read cache: every FindByHash reads the database, so a revocation
// committed by any process or replica is seen by the next authentication.
package authpg

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/auth/authrow"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Schema is the PostgreSQL schema that holds the auth tables.
const Schema = "auth"

// Store is an auth.Store and an auth.ConsoleStore backed by the schema
// auth of one PostgreSQL database. It is safe for concurrent use, by any
// number of processes on the same database.
type Store struct {
	db *pgdb.DB
}

var (
	_ auth.Store        = (*Store)(nil)
	_ auth.ConsoleStore = (*Store)(nil)
)

// Open migrates the schema auth of db to this binary's version and returns
// a Store on it. db stays the caller's: the Store never closes it.
//
// Errors: failure.Conflict when the database's auth schema is at a newer
// version than this binary knows (the message names the schema); the
// database's error otherwise (see pgdb.DB.Migrate).
func Open(ctx context.Context, db *pgdb.DB) (*Store, error) {
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

// Close releases nothing and returns nil: the pool belongs to the caller,
// who closes it after every store on it.
func (s *Store) Close() error { return nil }

// Create inserts t with hash. Errors: failure.InvalidArguments when the id
// or hash is empty; failure.Conflict when the id or the hash exists.
func (s *Store) Create(ctx context.Context, t auth.Token, hash string) error {
	if t.ID == "" || hash == "" {
		return failure.New(failure.InvalidArguments, "a token needs an id and a hash")
	}
	row, err := authrow.Encode(t)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx,
			`INSERT INTO auth.tokens (`+authrow.Columns+`, token_hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			append(row.Args(), hash)...)
		if pgdb.IsUniqueViolation(err) {
			return failure.New(failure.Conflict, "token %s already exists", t.ID)
		}
		if err != nil {
			return fmt.Errorf("tokens: insert %s: %w", t.ID, err)
		}
		return nil
	})
}

// List returns every token ordered by creation time, then id.
func (s *Store) List(ctx context.Context) ([]auth.Token, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+authrow.Columns+` FROM auth.tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("tokens: list: %w", err)
	}
	defer rows.Close()
	out, err := authrow.All(rows)
	if err != nil {
		return nil, fmt.Errorf("tokens: list: %w", err)
	}
	return out, nil
}

// Revoke sets revoked_at once and returns the token. Errors:
// failure.NotFound when id is unknown.
func (s *Store) Revoke(ctx context.Context, id string, at time.Time) (auth.Token, error) {
	var t auth.Token
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		// coalesce keeps the first revocation time; the row lock the
		// UPDATE takes orders concurrent revocations.
		t, err = authrow.Scan(tx.QueryRow(ctx,
			`UPDATE auth.tokens SET revoked_at = coalesce(revoked_at, $1) WHERE id = $2 RETURNING `+authrow.Columns, at.UnixNano(), id))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound(id)
		}
		if err != nil {
			return fmt.Errorf("tokens: revoke %s: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return auth.Token{}, err
	}
	return t, nil
}

// FindByHash returns the token with hash, read from the database on every
// call. Errors: failure.NotFound when no token has it.
func (s *Store) FindByHash(ctx context.Context, hash string) (auth.Token, error) {
	t, err := authrow.Scan(s.db.Pool.QueryRow(ctx, `SELECT `+authrow.Columns+` FROM auth.tokens WHERE token_hash = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return auth.Token{}, failure.New(failure.NotFound, "no token has this hash")
	}
	if err != nil {
		return auth.Token{}, fmt.Errorf("tokens: find: %w", err)
	}
	return t, nil
}

// Touch advances last_used_at to at. Errors: failure.NotFound when id is
// unknown.
func (s *Store) Touch(ctx context.Context, id string, at time.Time) error {
	return s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx,
			`UPDATE auth.tokens SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $1)`,
			at.UnixNano(), id)
		if err != nil {
			return fmt.Errorf("tokens: touch %s: %w", id, err)
		}
		if tag.RowsAffected() > 0 {
			return nil
		}
		// Nothing advanced: the token is unknown, or already used at or
		// after at.
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM auth.tokens WHERE id = $1)`, id).Scan(&exists); err != nil {
			return fmt.Errorf("tokens: touch %s: %w", id, err)
		}
		if !exists {
			return notFound(id)
		}
		return nil
	})
}

func notFound(id string) error {
	return failure.New(failure.NotFound, "token %q does not exist", id)
}

// Migrate brings the store's schema in db up to this version (a newer one
// is refused, as Open refuses it) without opening the store: `webcodex
// migrate` creates every schema before it copies rows into them.
func Migrate(ctx context.Context, db *pgdb.DB) error {
	return db.Migrate(ctx, Schema, migrations, "migrations")
}
