// Package sqlitedb opens WebCodex's SQLite databases with the durability
// settings every store relies on, applies embedded migrations, and provides a
// group-commit [Writer] so that concurrent mutations share one fsync.
//
// # Durability
//
// Every database is opened in WAL mode with synchronous=FULL: a transaction
// whose COMMIT has returned is on stable storage and survives kill -9 or power
// loss. Callers acknowledge a mutation only after [Writer.Do] returns nil.
// A batch that carries no Do (only [Writer.DoLazy] and [Writer.Go]) commits
// with synchronous=NORMAL: it survives kill -9 and is on stable storage after
// the next durable commit of the database (decision 0025).
//
// # Group commit
//
// A [Writer] owns the single write connection of a database. Concurrent Do
// calls are queued; the writer runs every queued function inside one
// transaction, each in its own SAVEPOINT so that one function's failure rolls
// back only its own changes, and then commits once. All callers of a batch
// learn their outcome after that one COMMIT. A Do that finds the writer
// idle runs its own batch of one on the caller's goroutine instead of
// handing it to the writer's.
package sqlitedb

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/webcodex/webcodex/internal/failure"
)

// DB is an open SQLite database: a pool of read connections plus one
// group-commit writer.
type DB struct {
	// Read is a connection pool for queries. Writes through Read are a
	// programming error; use Writer.
	Read   *sql.DB
	Writer *Writer
	path   string

	stmts sync.Map // query text -> *sql.Stmt on Read

	version versionConn // the connection DataVersion reads
}

// QueryRow runs a single-row query on the read pool through a prepared
// statement cached by query text, so hot lookups do not re-compile their
// SQL on every call.
func (db *DB) QueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := db.Stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return db.Read.QueryRowContext(ctx, query, args...) // reports the error on Scan
}

// Stmt returns query prepared on the read pool, cached by its text (nil
// when it cannot be prepared: the caller then runs the text, and meets
// the error there). The statements are closed with the database. Only
// fixed query texts belong here: the cache is never trimmed.
//
// On a miss Stmt prepares on the pool, which takes a free connection: it
// must not be called while holding one (inside a read transaction), where
// [ReadConns] such callers would each wait for the others forever. Inside
// a transaction use [DB.Cached], after [DB.Prepare] outside it.
func (db *DB) Stmt(ctx context.Context, query string) *sql.Stmt {
	if st := db.Cached(query); st != nil {
		return st
	}
	st, err := db.Read.PrepareContext(context.WithoutCancel(ctx), query)
	if err != nil {
		return nil
	}
	if prev, loaded := db.stmts.LoadOrStore(query, st); loaded {
		st.Close()
		st = prev.(*sql.Stmt)
	}
	return st
}

// Prepare puts queries in the read pool's statement cache (see
// [DB.Stmt]); a query that cannot be prepared is left out, to run as
// text. It must not be called inside a read transaction.
func (db *DB) Prepare(ctx context.Context, queries ...string) {
	for _, q := range queries {
		db.Stmt(ctx, q)
	}
}

// Cached returns query's statement from the read pool's cache, or nil. It
// never prepares, so it is safe inside a read transaction, which runs it
// with tx.StmtContext (the statement compiled on the transaction's
// connection is reused).
func (db *DB) Cached(query string) *sql.Stmt {
	if st, ok := db.stmts.Load(query); ok {
		return st.(*sql.Stmt)
	}
	return nil
}

// ReadConns is the size of every database's read pool.
const ReadConns = 4

// Open opens (creating if needed) the database file at path, applies the
// migrations found in migrations (files named NNNN_name.sql, applied in
// lexical order, each once, inside a transaction) and starts the writer.
// The file is created with mode 0600.
func Open(ctx context.Context, path string, migrations fs.FS) (*DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlitedb: create directory: %w", err)
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("sqlitedb: create file: %w", err)
		}
		f.Close()
	}
	w, err := openConn(path, 1)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, w, migrations); err != nil {
		w.Close()
		return nil, err
	}
	r, err := openConn(path, ReadConns)
	if err != nil {
		w.Close()
		return nil, err
	}
	return &DB{Read: r, Writer: newWriter(w), path: path}, nil
}

// Path returns the file path of the database.
func (db *DB) Path() string { return db.path }

// Close stops the writer after the queued work finishes and closes both pools.
func (db *DB) Close() error {
	db.stmts.Range(func(_, v any) bool { v.(*sql.Stmt).Close(); return true })
	db.Writer.close()
	return errors.Join(db.Writer.db.Close(), db.Read.Close(), db.version.close())
}

func openConn(path string, maxOpen int) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		return nil, fmt.Errorf("sqlitedb: open: %w", err)
	}
	db.SetMaxOpenConns(maxOpen)
	db.SetMaxIdleConns(maxOpen)
	db.SetConnMaxLifetime(0)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlitedb: open %s: %w", filepath.Base(path), err)
	}
	return db, nil
}

// dsn is the data source name of every connection to the database at path.
func dsn(path string) string {
	q := url.Values{}
	for _, p := range []string{
		"journal_mode(WAL)",
		"synchronous(FULL)",
		"busy_timeout(10000)",
		"foreign_keys(ON)",
	} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// Migrations returns the sub-filesystem dir of an embedded FS, for Open.
func Migrations(efs embed.FS, dir string) fs.FS {
	sub, err := fs.Sub(efs, dir)
	if err != nil {
		panic(err) // the embed pattern is fixed at compile time
	}
	return sub
}

func migrate(ctx context.Context, db *sql.DB, migrations fs.FS) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("sqlitedb: migrations table: %w", err)
	}
	if migrations == nil {
		return nil
	}
	names, err := fs.Glob(migrations, "*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE name = ?`, name).Scan(&n); err != nil {
			return fmt.Errorf("sqlitedb: read migrations: %w", err)
		}
		if n > 0 {
			continue
		}
		body, err := fs.ReadFile(migrations, name)
		if err != nil {
			return err
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			tx.Rollback()
			return fmt.Errorf("sqlitedb: migration %s: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(name, applied_at) VALUES (?, strftime('%s','now'))`, name); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("sqlitedb: migration %s: %w", name, err)
		}
	}
	return nil
}

// IsConstraint reports whether err is an SQLite constraint violation.
func IsConstraint(err error) bool {
	return err != nil && strings.Contains(err.Error(), "constraint failed")
}

// StoreError maps an error from a store built on this package to a stable
// kind for its callers: a *failure.Error passes through; a cancelled or
// expired context becomes failure.Interrupted (the request went away
// before the store took it); anything else becomes failure.Unavailable.
// store names the store in the message ("session store", ...).
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

// OpenReadOnly opens the database at path without writing anything, for
// offline readers (verify, counts) that may run beside a server. When no
// WAL file exists (no process has the database open and it was closed cleanly)
// it opens the file as immutable, so SQLite creates no -wal or -shm file
// either; otherwise it joins the existing WAL read-only.
func OpenReadOnly(path string) (*sql.DB, error) {
	q := url.Values{}
	q.Set("mode", "ro")
	if _, err := os.Stat(path + "-wal"); errors.Is(err, os.ErrNotExist) {
		q.Set("immutable", "1")
	}
	q.Add("_pragma", "query_only(1)")
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
