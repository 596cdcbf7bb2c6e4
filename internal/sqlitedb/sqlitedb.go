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
// lexical order, each once; those pending at an open all in one
// transaction) and starts the writer. The file is created with mode 0600.
//
// A database that does not exist yet is built complete under a temporary
// name and then linked into place (see create), so that a fresh data
// directory costs two fsyncs a database instead of one per migration.
func Open(ctx context.Context, path string, migrations fs.FS) (*DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlitedb: create directory: %w", err)
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := create(ctx, path, migrations); err != nil {
			return nil, err
		}
	}
	w, err := openConn(dsn(path, false), 1)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, w, migrations); err != nil {
		w.Close()
		return nil, err
	}
	r, err := openConn(dsn(path, false), ReadConns)
	if err != nil {
		w.Close()
		return nil, err
	}
	return &DB{Read: r, Writer: newWriter(w), path: path}, nil
}

// create builds the database at path: in a temporary file of the same
// directory, with synchronous=OFF, it applies every migration and switches
// the file to WAL mode; then it syncs the file once, links it
// to path (never replacing a file: when another process created path
// meanwhile, its database is the one opened) and syncs the directory.
// Nothing is durable before the file is complete, and the file is linked
// only once it is durable, so a crash leaves either no database or a
// whole one (and at most a stray temporary file).
func create(ctx context.Context, path string, migrations fs.FS) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".new-*")
	if err != nil {
		return fmt.Errorf("sqlitedb: create file: %w", err)
	}
	tmp := f.Name()
	f.Close()
	defer os.Remove(tmp)
	db, err := openConn(dsn(tmp, true), 1)
	if err != nil {
		return err
	}
	err = migrate(ctx, db, migrations)
	if err == nil {
		err = toWAL(ctx, db)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sqlitedb: create %s: %w", filepath.Base(path), err)
	}
	if err := syncFile(tmp); err != nil {
		return fmt.Errorf("sqlitedb: create %s: %w", filepath.Base(path), err)
	}
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, os.ErrExist) {
		// A filesystem without hard links: rename, which replaces, so
		// only while path still does not exist.
		if _, serr := os.Stat(path); !errors.Is(serr, os.ErrNotExist) {
			return fmt.Errorf("sqlitedb: create %s: %w", filepath.Base(path), err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("sqlitedb: create %s: %w", filepath.Base(path), err)
		}
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("sqlitedb: create %s: %w", filepath.Base(path), err)
	}
	return nil
}

// toWAL switches the database to WAL mode (recorded in its header, so
// every later connection finds it so).
func toWAL(ctx context.Context, db *sql.DB) error {
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode); err != nil {
		return err
	}
	if mode != "wal" {
		return fmt.Errorf("journal_mode is %s, not wal", mode)
	}
	return nil
}

// syncFile fsyncs the file or directory at path (directories through
// syncDir: see sync_unix.go and sync_windows.go).
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Path returns the file path of the database.
func (db *DB) Path() string { return db.path }

// Close stops the writer after the queued work finishes and closes both pools.
func (db *DB) Close() error {
	db.stmts.Range(func(_, v any) bool { v.(*sql.Stmt).Close(); return true })
	db.Writer.close()
	return errors.Join(db.Writer.db.Close(), db.Read.Close(), db.version.close())
}

func openConn(dsn string, maxOpen int) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlitedb: open: %w", err)
	}
	db.SetMaxOpenConns(maxOpen)
	db.SetMaxIdleConns(maxOpen)
	db.SetConnMaxLifetime(0)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlitedb: open %s: %w", dsnFile(dsn), err)
	}
	return db, nil
}

// dsn is the data source name of a connection to the database at path.
// Every connection is in WAL mode with synchronous=FULL, but the one
// create builds a new database with (building): synchronous=OFF in the
// default rollback mode, since create syncs the finished file itself and
// the driver would switch to WAL before it turned synchronous off (it runs
// the pragmas in lexical order), a switch that costs four fsyncs.
func dsn(path string, building bool) string {
	pragmas := []string{"journal_mode(WAL)", "synchronous(FULL)"}
	if building {
		pragmas = []string{"synchronous(OFF)"}
	}
	q := url.Values{}
	for _, p := range append(pragmas, "busy_timeout(10000)", "foreign_keys(ON)") {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// dsnFile is the base name of the file a dsn opens.
func dsnFile(dsn string) string {
	path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	return filepath.Base(path)
}

// Migrations returns the sub-filesystem dir of an embedded FS, for Open.
func Migrations(efs embed.FS, dir string) fs.FS {
	sub, err := fs.Sub(efs, dir)
	if err != nil {
		panic(err) // the embed pattern is fixed at compile time
	}
	return sub
}

// migrate applies the pending migrations in lexical order, all in one
// transaction, each recorded in schema_migrations: either all of them
// apply or none does.
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
	applied := map[string]bool{}
	rows, err := db.QueryContext(ctx, `SELECT name FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("sqlitedb: read migrations: %w", err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return fmt.Errorf("sqlitedb: read migrations: %w", err)
		}
		applied[name] = true
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("sqlitedb: read migrations: %w", err)
	}
	var tx *sql.Tx
	for _, name := range names {
		if applied[name] {
			continue
		}
		body, err := fs.ReadFile(migrations, name)
		if err != nil {
			if tx != nil {
				tx.Rollback()
			}
			return err
		}
		if tx == nil {
			if tx, err = db.BeginTx(ctx, nil); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			tx.Rollback()
			return fmt.Errorf("sqlitedb: migration %s: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(name, applied_at) VALUES (?, strftime('%s','now'))`, name); err != nil {
			tx.Rollback()
			return err
		}
	}
	if tx == nil {
		return nil
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlitedb: migrations: %w", err)
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
