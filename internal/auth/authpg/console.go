package authpg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
)

// CreateConsole inserts c and deletes the sessions expired at c.CreatedAt,
// in one transaction that has committed when it returns. Errors:
// failure.InvalidArguments when a hash is empty; failure.Conflict when the
// session hash exists.
func (s *Store) CreateConsole(ctx context.Context, c auth.ConsoleSession) error {
	if c.Hash == "" || c.TokenHash == "" {
		return failure.New(failure.InvalidArguments, "a console session needs a hash and a token hash")
	}
	return s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM auth.console_sessions WHERE expires_at <= $1`, c.CreatedAt.UnixNano()); err != nil {
			return fmt.Errorf("console sessions: sweep: %w", err)
		}
		_, err := tx.Exec(ctx,
			`INSERT INTO auth.console_sessions (session_hash, token_hash, created_at, expires_at) VALUES ($1, $2, $3, $4)`,
			c.Hash, c.TokenHash, c.CreatedAt.UnixNano(), c.ExpiresAt.UnixNano())
		if pgdb.IsUniqueViolation(err) {
			return failure.New(failure.Conflict, "console session exists")
		}
		if err != nil {
			return fmt.Errorf("console sessions: insert: %w", err)
		}
		return nil
	})
}

// FindConsole returns the console session with hash. Errors:
// failure.NotFound when there is none.
func (s *Store) FindConsole(ctx context.Context, hash string) (auth.ConsoleSession, error) {
	var (
		c                auth.ConsoleSession
		created, expires int64
	)
	err := s.db.Pool.QueryRow(ctx,
		`SELECT session_hash, token_hash, created_at, expires_at FROM auth.console_sessions WHERE session_hash = $1`, hash).
		Scan(&c.Hash, &c.TokenHash, &created, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return auth.ConsoleSession{}, failure.New(failure.NotFound, "no console session has this hash")
	}
	if err != nil {
		return auth.ConsoleSession{}, fmt.Errorf("console sessions: find: %w", err)
	}
	c.CreatedAt, c.ExpiresAt = time.Unix(0, created).UTC(), time.Unix(0, expires).UTC()
	return c, nil
}

// DeleteConsole deletes the console session with hash (none is not an
// error), committed when it returns.
func (s *Store) DeleteConsole(ctx context.Context, hash string) error {
	return s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM auth.console_sessions WHERE session_hash = $1`, hash); err != nil {
			return fmt.Errorf("console sessions: delete: %w", err)
		}
		return nil
	})
}
