package sqlitedb

import (
	"context"
	"database/sql/driver"
	"fmt"
	"sync"
)

// versionConn is the connection DataVersion asks: SQLite's data_version is
// per connection, so it must be one that is kept open. It is a driver
// connection of its own, used only under mu, so its one statement runs
// without database/sql's pool, rows and scanning around it.
type versionConn struct {
	mu   sync.Mutex
	conn driver.Conn // opened on first use; nil until then
	stmt driver.Stmt
	row  [1]driver.Value
}

// DataVersion returns SQLite's data_version of the database as seen by a
// connection kept open for it: the value changes whenever any other
// connection (this process's writer, or another process on the same file)
// has committed to the database since the previous read, and only then.
// Two equal values therefore mean that no commit happened between them.
//
// The pragma is not interrupted by ctx's cancellation (it is a read of a
// counter): with a cancellable context the driver would arm a watcher
// goroutine and a progress handler for it, which costs as much as the read.
func (db *DB) DataVersion(ctx context.Context) (int64, error) {
	ctx = context.WithoutCancel(ctx)
	vc := &db.version
	vc.mu.Lock()
	defer vc.mu.Unlock()
	if vc.conn == nil {
		c, err := db.Read.Driver().Open(dsn(db.path, false)) // the registered driver, on a connection of its own
		if err != nil {
			return 0, fmt.Errorf("sqlitedb: data_version: %w", err)
		}
		st, err := c.(driver.ConnPrepareContext).PrepareContext(ctx, `PRAGMA data_version`)
		if err != nil {
			c.Close()
			return 0, fmt.Errorf("sqlitedb: data_version: %w", err)
		}
		vc.conn, vc.stmt = c, st
	}
	rows, err := vc.stmt.(driver.StmtQueryContext).QueryContext(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("sqlitedb: data_version: %w", err)
	}
	err = rows.Next(vc.row[:])
	rows.Close()
	v, ok := vc.row[0].(int64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("sqlitedb: data_version: %w", err)
	case !ok:
		return 0, fmt.Errorf("sqlitedb: data_version: got %T", vc.row[0])
	}
	return v, nil
}

func (vc *versionConn) close() error {
	vc.mu.Lock()
	defer vc.mu.Unlock()
	if vc.conn == nil {
		return nil
	}
	vc.stmt.Close()
	err := vc.conn.Close()
	vc.conn, vc.stmt = nil, nil
	return err
}

// ReadCacheSize bounds a ReadCache: when full, it starts over empty.
const ReadCacheSize = 1024

// A ReadCache keeps rows read from one database by key while nothing has
// committed to that database: every Get first reads [DB.DataVersion]
// (a few microseconds, cheaper than a query and its decoding) and drops
// every entry when the database changed, whoever changed it. So a Get
// returns what a fresh read would have returned at the moment it was
// called. Only successful loads are kept. The zero value is not usable;
// use NewReadCache. Values are shared between callers: they must not be
// mutated.
type ReadCache[V any] struct {
	db      *DB
	mu      sync.Mutex
	version int64
	valid   bool
	entries map[string]V
}

// NewReadCache returns an empty cache of rows of db.
func NewReadCache[V any](db *DB) *ReadCache[V] {
	return &ReadCache[V]{db: db, entries: map[string]V{}}
}

// Get returns the cached value of key, or load's result (kept when load
// succeeds and the database did not change meanwhile). When the version
// cannot be read, Get reads through load and keeps nothing.
func (c *ReadCache[V]) Get(ctx context.Context, key string, load func(context.Context) (V, error)) (V, error) {
	v, err := c.db.DataVersion(ctx)
	if err != nil {
		return load(ctx)
	}
	c.mu.Lock()
	if !c.valid || v != c.version {
		clear(c.entries)
		c.version, c.valid = v, true
	}
	if e, ok := c.entries[key]; ok {
		c.mu.Unlock()
		return e, nil
	}
	c.mu.Unlock()
	val, err := load(ctx)
	if err != nil {
		return val, err
	}
	c.mu.Lock()
	// Kept only under the version read before the load: a commit since
	// then changed the version, and the next Get drops this entry.
	if c.valid && c.version == v {
		if len(c.entries) >= ReadCacheSize {
			clear(c.entries)
		}
		c.entries[key] = val
	}
	c.mu.Unlock()
	return val, nil
}
