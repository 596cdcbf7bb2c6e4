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
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/auth"
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
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx, Schema, sub); err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

// Close releases nothing and returns nil: the pool belongs to the caller,
// who closes it after every store on it.
func (s *Store) Close() error { return nil }

const columns = `id, name, owner, scopes, created_at, revoked_at, last_used_at, tools, runner, kind, project, expires_at`

// Create inserts t with hash. Errors: failure.InvalidArguments when the id
// or hash is empty; failure.Conflict when the id or the hash exists.
func (s *Store) Create(ctx context.Context, t auth.Token, hash string) error {
	if t.ID == "" || hash == "" {
		return failure.New(failure.InvalidArguments, "a token needs an id and a hash")
	}
	scopes, err := json.Marshal(t.Scopes)
	if err != nil {
		return fmt.Errorf("tokens: encode scopes: %w", err)
	}
	tools := []byte("[]")
	if t.Tools != nil {
		if tools, err = json.Marshal(t.Tools); err != nil {
			return fmt.Errorf("tokens: encode tools: %w", err)
		}
	}
	kind := t.Kind
	if kind == "" {
		kind = auth.KindAPIToken
	}
	var project any
	if t.Project != "" {
		project = t.Project
	}
	return s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx,
			`INSERT INTO auth.tokens (id, name, owner, scopes, token_hash, created_at, revoked_at, last_used_at, tools, runner, kind, project, expires_at)
			 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			t.ID, t.Name, t.Owner, string(scopes), hash, t.CreatedAt.UnixNano(), nanos(t.RevokedAt), nanos(t.LastUsedAt), string(tools), t.Runner,
			string(kind), project, nanos(t.ExpiresAt))
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
	rows, err := s.db.Pool.Query(ctx, `SELECT `+columns+` FROM auth.tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("tokens: list: %w", err)
	}
	defer rows.Close()
	out := []auth.Token{}
	for rows.Next() {
		t, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("tokens: list: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
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
		t, err = scan(tx.QueryRow(ctx,
			`UPDATE auth.tokens SET revoked_at = coalesce(revoked_at, $1) WHERE id = $2 RETURNING `+columns, at.UnixNano(), id))
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
	t, err := scan(s.db.Pool.QueryRow(ctx, `SELECT `+columns+` FROM auth.tokens WHERE token_hash = $1`, hash))
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

func scan(row pgx.Row) (auth.Token, error) {
	var (
		t                          auth.Token
		scopes, tools              string
		created                    int64
		revoked, lastUsed, expires *int64
		project                    *string
	)
	if err := row.Scan(&t.ID, &t.Name, &t.Owner, &scopes, &created, &revoked, &lastUsed, &tools, &t.Runner,
		&t.Kind, &project, &expires); err != nil {
		return auth.Token{}, err
	}
	if err := json.Unmarshal([]byte(tools), &t.Tools); err != nil {
		return auth.Token{}, fmt.Errorf("token %s: decode tools: %w", t.ID, err)
	}
	if len(t.Tools) == 0 {
		t.Tools = nil
	}
	if err := json.Unmarshal([]byte(scopes), &t.Scopes); err != nil {
		return auth.Token{}, fmt.Errorf("token %s: decode scopes: %w", t.ID, err)
	}
	t.CreatedAt = time.Unix(0, created).UTC()
	t.RevokedAt = timePtr(revoked)
	t.LastUsedAt = timePtr(lastUsed)
	t.ExpiresAt = timePtr(expires)
	if project != nil {
		t.Project = *project
	}
	return t, nil
}

// nanos is t as Unix nanoseconds, or nil (NULL) for no time.
func nanos(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixNano()
}

func timePtr(n *int64) *time.Time {
	if n == nil {
		return nil
	}
	t := time.Unix(0, *n).UTC()
	return &t
}

func notFound(id string) error {
	return failure.New(failure.NotFound, "token %q does not exist", id)
}
