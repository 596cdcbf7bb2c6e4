package authdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/sqlitedb"
)

var _ auth.ConsoleStore = (*Store)(nil)

// CreateConsole inserts s and deletes the sessions expired at s.CreatedAt,
// in one durable transaction. Errors: failure.InvalidArguments when a hash
// is empty; failure.Conflict when the session hash exists.
func (s *Store) CreateConsole(ctx context.Context, c auth.ConsoleSession) error {
	if c.Hash == "" || c.TokenHash == "" {
		return failure.New(failure.InvalidArguments, "a console session needs a hash and a token hash")
	}
	return s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM console_sessions WHERE expires_at <= ?`, c.CreatedAt.UnixNano()); err != nil {
			return fmt.Errorf("console sessions: sweep: %w", err)
		}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO console_sessions (session_hash, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?)`,
			c.Hash, c.TokenHash, c.CreatedAt.UnixNano(), c.ExpiresAt.UnixNano())
		if sqlitedb.IsConstraint(err) {
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
	err := s.db.QueryRow(ctx, `SELECT session_hash, token_hash, created_at, expires_at FROM console_sessions WHERE session_hash = ?`, hash).
		Scan(&c.Hash, &c.TokenHash, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return auth.ConsoleSession{}, failure.New(failure.NotFound, "no console session has this hash")
	}
	if err != nil {
		return auth.ConsoleSession{}, fmt.Errorf("console sessions: find: %w", err)
	}
	c.CreatedAt, c.ExpiresAt = time.Unix(0, created).UTC(), time.Unix(0, expires).UTC()
	return c, nil
}

// DeleteConsole deletes the console session with hash, durably.
func (s *Store) DeleteConsole(ctx context.Context, hash string) error {
	return s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM console_sessions WHERE session_hash = ?`, hash); err != nil {
			return fmt.Errorf("console sessions: delete: %w", err)
		}
		return nil
	})
}
