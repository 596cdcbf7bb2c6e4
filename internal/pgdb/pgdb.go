// Package pgdb is the PostgreSQL side of WebCodex's stores (issue 27): one
// connection pool per process, one schema per domain with its own embedded
// migrations, and one way to run a transaction that retries what
// PostgreSQL asks to be retried.
//
// Every domain's SQL names its tables qualified by the domain's fixed
// schema (auth.tokens, oauth.grants, …), so one pool serves every domain
// without a search_path that could change under pgx's statement cache.
// Tests isolate themselves with a database each (pgtest).
//
// Transactions run at READ COMMITTED; compare-and-swap is an explicit
// revision column, idempotency is INSERT … ON CONFLICT DO NOTHING followed
// by a read of the winner, as on SQLite. A COMMIT cut off by a cancelled
// context or a lost connection has an unknown outcome: Tx returns
// failure.OutcomeUnknown for it, never success and never a plain failure.
package pgdb

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/webcodex/webcodex/internal/failure"
)

// Bounds of a transaction's retries.
const (
	// MaxAttempts bounds how many times Tx runs a transaction that
	// PostgreSQL aborted as a serialization failure or a deadlock.
	MaxAttempts = 5
	// retryBase is the first backoff; each retry doubles it.
	retryBase = 5 * time.Millisecond
	// ConnectTimeout bounds the first connection at Open.
	ConnectTimeout = 10 * time.Second
)

// A DB is a pool of connections to one PostgreSQL database.
type DB struct {
	Pool *pgxpool.Pool
	// url is the connection URL with its password removed (Redact).
	url string
}

// Open connects to the database at rawURL (a postgres:// URL or a
// key=value DSN) and checks that it answers within ConnectTimeout.
//
// Errors: failure.InvalidArguments when the URL does not parse;
// failure.Unavailable when the database cannot be reached (the message
// names the URL without its password).
func Open(ctx context.Context, rawURL string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, failure.New(failure.InvalidArguments, "database URL %s does not parse: %s", Redact(rawURL), redactErr(err, rawURL))
	}
	cfg.ConnConfig.ConnectTimeout = ConnectTimeout
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, failure.Wrap(failure.Unavailable, err, "database %s: %s", Redact(rawURL), redactErr(err, rawURL))
	}
	pctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, failure.New(failure.Unavailable, "database %s cannot be reached: %s", Redact(rawURL), redactErr(err, rawURL))
	}
	return &DB{Pool: pool, url: Redact(rawURL)}, nil
}

// URL returns the database's URL without its password.
func (db *DB) URL() string { return db.url }

// Close closes every connection.
func (db *DB) Close() { db.Pool.Close() }

// Redact returns rawURL without its password, for logs, banners and
// status: a postgres:// URL's password becomes "xxxxx", a key=value DSN's
// password= value too; anything that does not parse is replaced whole.
func Redact(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil && u.Scheme != "" {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	cfg, err := pgconn.ParseConfig(rawURL)
	if err != nil {
		return "(an unparsable database URL)"
	}
	return fmt.Sprintf("host=%s port=%d dbname=%s user=%s", cfg.Host, cfg.Port, cfg.Database, cfg.User)
}

// redactErr is err's message with any occurrence of the password removed
// (pgx quotes the DSN in some errors).
func redactErr(err error, rawURL string) string {
	msg := err.Error()
	cfg, perr := pgconn.ParseConfig(rawURL)
	if perr != nil || cfg.Password == "" {
		return msg
	}
	return strings.ReplaceAll(msg, cfg.Password, "xxxxx")
}

// SQLSTATE codes the stores look at.
const (
	CodeSerializationFailure = "40001"
	CodeDeadlockDetected     = "40P01"
	CodeUniqueViolation      = "23505"
)

// IsCode reports whether err is a PostgreSQL error with SQLSTATE code.
func IsCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// IsUniqueViolation reports whether err is a unique constraint violation.
func IsUniqueViolation(err error) bool { return IsCode(err, CodeUniqueViolation) }

// retryable reports whether PostgreSQL aborted the transaction so that
// running it again may succeed.
func retryable(err error) bool {
	return IsCode(err, CodeSerializationFailure) || IsCode(err, CodeDeadlockDetected)
}

// Tx runs fn in one READ COMMITTED transaction and commits it. A
// transaction aborted as a serialization failure or a deadlock is run
// again, up to MaxAttempts times with a doubling backoff (fn must be safe
// to run again: everything it did was rolled back).
//
// Errors: fn's error (the transaction rolled back); failure.OutcomeUnknown
// when the COMMIT was sent and its answer never came (a cancelled context,
// a lost connection), so the change may or may not be durable; when
// retries run out, failure.Unavailable wrapping the last abort.
func (db *DB) Tx(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	wait := retryBase
	var last error
	for range MaxAttempts {
		err := db.once(ctx, fn)
		if err == nil || !retryable(err) {
			return err
		}
		last = err
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return failure.Wrap(failure.Cancelled, ctx.Err(), "the transaction was retried and then cancelled")
		case <-t.C:
		}
		wait *= 2
	}
	return failure.Wrap(failure.Unavailable, last, "the database aborted the transaction %d times (serialization or deadlock)", MaxAttempts)
}

func (db *DB) once(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	tx, err := db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return failure.Wrap(failure.Unavailable, err, "the database is unavailable")
	}
	if err := fn(ctx, tx); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		if retryable(err) {
			return err
		}
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			// The server answered: the transaction did not commit.
			return fmt.Errorf("commit: %w", err)
		}
		return failure.Wrap(failure.OutcomeUnknown, err, "the commit's answer was lost: the change may or may not be durable")
	}
	return nil
}

// StoreError maps an error of a store built on this package to a stable
// kind for its callers, as sqlitedb.StoreError does: a *failure.Error
// passes through; a cancelled or expired context becomes
// failure.Interrupted; anything else becomes failure.Unavailable. store
// names the store in the message ("goal store", ...).
func StoreError(err error, store string) error {
	if err == nil {
		return nil
	}
	var fe *failure.Error
	if errors.As(err, &fe) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return failure.Wrap(failure.Interrupted, err, "the request was cancelled before the %s accepted it", store)
	}
	return failure.Wrap(failure.Unavailable, err, "%s unavailable", store)
}
