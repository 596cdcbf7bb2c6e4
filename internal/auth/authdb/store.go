// Package authdb is the SQLite implementation of [auth.Store]: API
// token records (of every credential kind: API tokens, runner tokens,
// project credentials and project shares) in their own database file
// (auth.db).
//
// Only token hashes are stored. Every mutation goes through the database's
// group-commit writer and returns only after its transaction has durably
// committed.
package authdb

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/auth/authrow"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/sqlitedb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// FileName is the conventional name of the token database inside the data
// directory.
const FileName = "auth.db"

// Store is an auth.Store backed by one SQLite database file.
type Store struct {
	db *sqlitedb.DB
	// byHash keeps the tokens FindByHash read while auth.db is unchanged:
	// any commit (a revocation by `webcodex token revoke` in another
	// process, a Touch, a new token) drops them, so a revoked token is
	// refused exactly as without the cache. Every request authenticates.
	byHash *sqlitedb.ReadCache[auth.Token]
}

var _ auth.Store = (*Store)(nil)

// Open opens (creating and migrating if needed) the token database at path.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Migrations(migrations, "migrations"))
	if err != nil {
		return nil, err
	}
	return &Store{db: db, byHash: sqlitedb.NewReadCache[auth.Token](db)}, nil
}

// Close waits for queued writes and closes the database.
func (s *Store) Close() error { return s.db.Close() }

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
	return s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx,
			`INSERT INTO tokens (`+authrow.Columns+`, token_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			append(row.Args(), hash)...)
		if sqlitedb.IsConstraint(err) {
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
	rows, err := s.db.Read.QueryContext(ctx, `SELECT `+authrow.Columns+` FROM tokens ORDER BY created_at, id`)
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
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx,
			`UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, at.UnixNano(), id); err != nil {
			return fmt.Errorf("tokens: revoke %s: %w", id, err)
		}
		var err error
		t, err = authrow.Scan(tx.QueryRowContext(ctx, `SELECT `+authrow.Columns+` FROM tokens WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
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

// FindByHash returns the token with hash. Errors: failure.NotFound when no
// token has it.
func (s *Store) FindByHash(ctx context.Context, hash string) (auth.Token, error) {
	t, err := s.byHash.Get(ctx, hash, func(ctx context.Context) (auth.Token, error) { return s.findByHash(ctx, hash) })
	if err != nil {
		return auth.Token{}, err
	}
	// The cached token is shared: the caller gets its own slices.
	t.Scopes, t.Tools = slices.Clone(t.Scopes), slices.Clone(t.Tools)
	return t, nil
}

func (s *Store) findByHash(ctx context.Context, hash string) (auth.Token, error) {
	t, err := authrow.Scan(s.db.QueryRow(ctx, `SELECT `+authrow.Columns+` FROM tokens WHERE token_hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
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
	return s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var exists int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM tokens WHERE id = ?`, id).Scan(&exists)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(id)
		}
		if err != nil {
			return fmt.Errorf("tokens: touch %s: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx,
			`UPDATE tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`,
			at.UnixNano(), id, at.UnixNano()); err != nil {
			return fmt.Errorf("tokens: touch %s: %w", id, err)
		}
		return nil
	})
}

func notFound(id string) error {
	return failure.New(failure.NotFound, "token %q does not exist", id)
}

// DB returns the store's database (its writer's statistics, a readiness
// probe).
func (s *Store) DB() *sqlitedb.DB { return s.db }
