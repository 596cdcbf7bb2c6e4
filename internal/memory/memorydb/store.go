// Package memorydb is the SQLite implementation of [memory.Store]: Project
// Memory in its own database file (memory.db), which shares nothing with
// workflow.db, audit.db or any other store and is never written from
// Workflow Session events (decision 0035).
//
// Every change is decided inside the database's single writer's
// transaction (sqlitedb.Writer.Do, durable when it returns), which is
// what makes compare-and-swap exact under concurrency. Search is FTS5 with
// BM25 over keys, tags and bodies (an external-content index kept by
// triggers).
package memorydb

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"modernc.org/sqlite"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/memory"
	"github.com/webcodex/webcodex/internal/sqlitedb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// FileName is the database's name inside the data directory.
const FileName = "memory.db"

// Store is a memory.Store backed by one SQLite database file.
type Store struct {
	db *sqlitedb.DB
	// The writer's hot statements, prepared once (sqlitedb.Writer.Prepare).
	stmts struct {
		current, scope, upsert, supersede, trim *sql.Stmt
	}
}

const (
	// sqlCurrent reads key's entry and the scope's kept entry count in one
	// statement. It yields one row always: the entry's columns (zero when
	// the key is absent), whether it exists, and the count.
	sqlCurrent = `SELECT coalesce(e.memory_key, ''), coalesce(e.memory_id, ''), coalesce(e.generation, 0), coalesce(e.revision, ''),
		coalesce(e.definition_hash, ''), coalesce(e.body, ''), coalesce(e.tags, '[]'), coalesce(e.written_by, ''),
		coalesce(e.created_at_ms, 0), coalesce(e.updated_at_ms, 0),
		e.id IS NOT NULL, coalesce((SELECT entries FROM memory_scopes WHERE scope_id = ?1), 0)
		FROM (SELECT 1) LEFT JOIN memory_entries e ON e.scope_id = ?1 AND e.memory_key = ?2`
	sqlCount = `SELECT coalesce((SELECT entries FROM memory_scopes WHERE scope_id = ?), 0)`
	sqlScope = `INSERT INTO memory_scopes (scope_id, project, root, created_at_ms, entries) VALUES (?, ?, ?, ?, 1)
		ON CONFLICT (scope_id) DO UPDATE SET entries = entries + 1`
	sqlUpsert = `INSERT INTO memory_entries
		(scope_id, memory_key, memory_id, generation, revision, definition_hash, body, tags, tag_text, pinned, written_by, created_at_ms, updated_at_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (scope_id, memory_key) DO UPDATE SET
		memory_id = excluded.memory_id, generation = excluded.generation, revision = excluded.revision,
		definition_hash = excluded.definition_hash, body = excluded.body, tags = excluded.tags, tag_text = excluded.tag_text,
		pinned = excluded.pinned, written_by = excluded.written_by, updated_at_ms = excluded.updated_at_ms`
	// sqlSupersede moves the revision a put replaces into the history: the
	// current revision is the entry row itself and is never copied there.
	sqlSupersede = `INSERT INTO memory_history (memory_id, generation, revision, body, tags, written_by, written_at_ms)
		SELECT memory_id, generation, revision, body, tags, written_by, updated_at_ms FROM memory_entries
		WHERE scope_id = ? AND memory_key = ?`
	sqlTrim = `DELETE FROM memory_history WHERE memory_id = ? AND generation <= ?`
)

var _ memory.Store = (*Store)(nil)

// Open opens (creating and migrating if needed) the database at path.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Migrations(migrations, "migrations"))
	if err != nil {
		return nil, err
	}
	s := &Store{db: db}
	if err := db.Writer.PrepareAll(ctx, sqlitedb.Stmt{Dst: &s.stmts.current, Query: sqlCurrent},
		sqlitedb.Stmt{Dst: &s.stmts.scope, Query: sqlScope},
		sqlitedb.Stmt{Dst: &s.stmts.upsert, Query: sqlUpsert}, sqlitedb.Stmt{Dst: &s.stmts.supersede, Query: sqlSupersede},
		sqlitedb.Stmt{Dst: &s.stmts.trim, Query: sqlTrim}); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close waits for queued writes and closes the database.
func (s *Store) Close() error { return s.db.Close() }

const storeName = "memory store"

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

const entryCols = `memory_key, memory_id, generation, revision, definition_hash, body, tags, written_by, created_at_ms, updated_at_ms`

type scanner interface{ Scan(dest ...any) error }

func scanEntry(r scanner, extra ...any) (memory.Entry, error) {
	var (
		e        memory.Entry
		tags     string
		cAt, uAt int64
		dest     = []any{&e.MemoryKey, &e.MemoryID, &e.Generation, &e.Revision, &e.DefinitionHash, &e.Body, &tags, &e.WrittenBy, &cAt, &uAt}
		scanErr  error
	)
	scanErr = r.Scan(append(dest, extra...)...)
	if scanErr != nil {
		return memory.Entry{}, scanErr
	}
	var err error
	if e.Tags, err = memory.ParseTagsRecord(tags); err != nil {
		return memory.Entry{}, err
	}
	e.CreatedAt, e.UpdatedAt = fromMS(cAt), fromMS(uAt)
	return e, nil
}

// Apply implements memory.Store. One statement reads the current entry
// and the scope's entry count (kept in its row); the decision is given the
// count only when the key is absent, the only case it needs it.
func (s *Store) Apply(ctx context.Context, scope memory.Scope, key string, decide memory.Decide) (memory.Change, error) {
	var ch memory.Change
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var (
			cur   *memory.Entry
			found bool
			n     int
		)
		e, err := scanEntry(tx.StmtContext(ctx, s.stmts.current).QueryRowContext(ctx, scope.ID, key), &found, &n)
		if err != nil {
			return fmt.Errorf("memory entry: %w", err)
		}
		if found {
			cur, n = &e, 0
		}
		if ch, err = decide(cur, n); err != nil {
			return err
		}
		switch ch.Op {
		case memory.OpPut:
			return s.put(ctx, tx, scope, ch.Entry, ch.Created)
		case memory.OpDelete:
			return remove(ctx, tx, scope.ID, ch.Entry.MemoryID)
		}
		return nil
	})
	if err != nil {
		return memory.Change{}, sqlitedb.StoreError(err, storeName)
	}
	return ch, nil
}

// put writes e as key's current entry. created counts a new entry in the
// scope (creating the scope row on its first entry); otherwise the
// revision e replaces moves into the history first, and the history keeps
// the MaxHistoryPerKey-1 newest superseded revisions, so that with the
// current one an incarnation keeps MaxHistoryPerKey.
func (s *Store) put(ctx context.Context, tx *sql.Tx, scope memory.Scope, e memory.Entry, created bool) error {
	if created {
		if _, err := tx.StmtContext(ctx, s.stmts.scope).ExecContext(ctx, scope.ID, scope.Project, scope.Root, ms(e.UpdatedAt)); err != nil {
			return fmt.Errorf("memory scope: %w", err)
		}
	} else if _, err := tx.StmtContext(ctx, s.stmts.supersede).ExecContext(ctx, scope.ID, e.MemoryKey); err != nil {
		return fmt.Errorf("memory history: %w", err)
	}
	tags := memory.TagsRecord(e.Tags)
	pinned := 0
	if e.Pinned() {
		pinned = 1
	}
	if _, err := tx.StmtContext(ctx, s.stmts.upsert).ExecContext(ctx, scope.ID, e.MemoryKey, e.MemoryID, e.Generation, e.Revision,
		e.DefinitionHash, e.Body, tags, strings.Join(e.Tags, " "), pinned, e.WrittenBy, ms(e.CreatedAt), ms(e.UpdatedAt)); err != nil {
		return fmt.Errorf("memory entry: %w", err)
	}
	if e.Generation > memory.MaxHistoryPerKey {
		if _, err := tx.StmtContext(ctx, s.stmts.trim).ExecContext(ctx, e.MemoryID, e.Generation-memory.MaxHistoryPerKey); err != nil {
			return fmt.Errorf("memory history retention: %w", err)
		}
	}
	return nil
}

func remove(ctx context.Context, tx *sql.Tx, scopeID, memoryID string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM memory_entries WHERE memory_id = ?`, memoryID); err != nil {
		return fmt.Errorf("memory entry: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE memory_scopes SET entries = entries - 1 WHERE scope_id = ?`, scopeID); err != nil {
		return fmt.Errorf("memory scope: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM memory_history WHERE memory_id = ?`, memoryID); err != nil {
		return fmt.Errorf("memory history: %w", err)
	}
	return nil
}

func (s *Store) one(ctx context.Context, where string, args ...any) (memory.Entry, bool, error) {
	e, err := scanEntry(s.db.QueryRow(ctx, `SELECT `+entryCols+` FROM memory_entries WHERE `+where, args...))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return memory.Entry{}, false, nil
	case err != nil:
		return memory.Entry{}, false, sqlitedb.StoreError(err, storeName)
	}
	return e, true, nil
}

// Get implements memory.Store.
func (s *Store) Get(ctx context.Context, scopeID, key string) (memory.Entry, bool, error) {
	return s.one(ctx, `scope_id = ? AND memory_key = ?`, scopeID, key)
}

// ByID implements memory.Store.
func (s *Store) ByID(ctx context.Context, scopeID, memoryID string) (memory.Entry, bool, error) {
	return s.one(ctx, `scope_id = ? AND memory_id = ?`, scopeID, memoryID)
}

// History implements memory.Store: the current revision is read from the
// entry row, the superseded ones from memory_history, in one statement
// (one read snapshot).
func (s *Store) History(ctx context.Context, memoryID string) ([]memory.Revision, error) {
	rows, err := s.db.Read.QueryContext(ctx, `SELECT revision, body, tags, written_by, at FROM (
		SELECT generation, revision, body, tags, written_by, updated_at_ms AS at FROM memory_entries WHERE memory_id = ?1
		UNION ALL
		SELECT generation, revision, body, tags, written_by, written_at_ms FROM memory_history WHERE memory_id = ?1)
		ORDER BY generation DESC LIMIT ?2`, memoryID, memory.MaxHistoryPerKey)
	if err != nil {
		return nil, sqlitedb.StoreError(err, storeName)
	}
	defer rows.Close()
	out := []memory.Revision{}
	for rows.Next() {
		var (
			r    memory.Revision
			tags string
			at   int64
		)
		if err := rows.Scan(&r.Revision, &r.Body, &tags, &r.WrittenBy, &at); err != nil {
			return nil, sqlitedb.StoreError(err, storeName)
		}
		var err error
		if r.Tags, err = memory.ParseTagsRecord(tags); err != nil {
			return nil, sqlitedb.StoreError(err, storeName)
		}
		r.WrittenAt = fromMS(at)
		out = append(out, r)
	}
	return out, sqlitedb.StoreError(rows.Err(), storeName)
}

// Search implements memory.Store. An FTS5 syntax error in q.Text is
// failure.InvalidArguments: it is the only error the MATCH of a query
// that prepared can raise from the caller's text.
func (s *Store) Search(ctx context.Context, scopeID string, q memory.Query) ([]memory.Hit, error) {
	// ORDER BY rank lets FTS5 yield rows best first (rank is bm25 with the
	// column weights, configured in the migration), so the join stops at
	// the limit and snippets are made only for the rows returned.
	rows, err := s.db.Read.QueryContext(ctx, `SELECT e.memory_key, e.memory_id, e.revision, e.tags, e.updated_at_ms,
		snippet(memory_fts, -1, '[', ']', '…', ?), memory_fts.rank
		FROM memory_fts JOIN memory_entries e ON e.id = memory_fts.rowid
		WHERE memory_fts MATCH ? AND e.scope_id = ?
		AND NOT EXISTS (SELECT 1 FROM json_each(?) want WHERE want.value NOT IN (SELECT value FROM json_each(e.tags)))
		ORDER BY memory_fts.rank LIMIT ?`, memory.SnippetTokens, q.Text, scopeID, memory.TagsRecord(q.Tags), q.Limit+1)
	if err != nil {
		return nil, searchError(err)
	}
	defer rows.Close()
	out := []memory.Hit{}
	for rows.Next() {
		var (
			h    memory.Hit
			tags string
			at   int64
		)
		if err := rows.Scan(&h.MemoryKey, &h.MemoryID, &h.Revision, &tags, &at, &h.Snippet, &h.Score); err != nil {
			return nil, searchError(err)
		}
		var err error
		if h.Tags, err = memory.ParseTagsRecord(tags); err != nil {
			return nil, sqlitedb.StoreError(err, storeName)
		}
		// BM25 is lower for better matches; the caller sees higher-better.
		h.Score = -h.Score
		h.UpdatedAt = fromMS(at)
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, searchError(err)
	}
	return out, nil
}

// searchError reports the FTS5 parser's refusal of a query as invalid
// arguments: the search statement is fixed and prepares, so a plain
// SQLITE_ERROR (code 1, "SQL logic error": a syntax error, an
// unterminated string, a column filter naming no column) from running it
// can only come from the caller's query text. Anything else (an
// interrupted or busy read) is the store's.
func searchError(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code() == sqliteError {
		return failure.Wrap(failure.InvalidArguments, err, "query is not valid FTS5 syntax (put words with special characters in double quotes)").
			WithDetail("query_syntax", "fts5")
	}
	return sqlitedb.StoreError(err, storeName)
}

// sqliteError is SQLite's generic error code (SQLITE_ERROR).
const sqliteError = 1

// Each implements memory.Store.
func (s *Store) Each(ctx context.Context, scopeID string, fn func(memory.Entry) bool) error {
	rows, err := s.db.Read.QueryContext(ctx, `SELECT `+entryCols+` FROM memory_entries WHERE scope_id = ?
		ORDER BY pinned DESC, updated_at_ms DESC, id DESC`, scopeID)
	if err != nil {
		return sqlitedb.StoreError(err, storeName)
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return sqlitedb.StoreError(err, storeName)
		}
		if !fn(e) {
			return nil
		}
	}
	return sqlitedb.StoreError(rows.Err(), storeName)
}

// Count implements memory.Store.
func (s *Store) Count(ctx context.Context, scopeID string) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, sqlCount, scopeID).Scan(&n)
	return n, sqlitedb.StoreError(err, storeName)
}

// Scopes implements memory.Store.
func (s *Store) Scopes(ctx context.Context, limit int) ([]memory.Scope, error) {
	rows, err := s.db.Read.QueryContext(ctx, `SELECT s.scope_id, s.project, s.root, s.created_at_ms,
		count(e.id), coalesce(sum(length(CAST(e.body AS BLOB))), 0)
		FROM memory_scopes s LEFT JOIN memory_entries e ON e.scope_id = s.scope_id
		GROUP BY s.scope_id ORDER BY s.project, s.created_at_ms, s.scope_id LIMIT ?`, limit)
	if err != nil {
		return nil, sqlitedb.StoreError(err, storeName)
	}
	defer rows.Close()
	out := []memory.Scope{}
	for rows.Next() {
		var (
			sc memory.Scope
			at int64
		)
		if err := rows.Scan(&sc.ID, &sc.Project, &sc.Root, &at, &sc.Entries, &sc.Bytes); err != nil {
			return nil, sqlitedb.StoreError(err, storeName)
		}
		sc.CreatedAt = fromMS(at)
		out = append(out, sc)
	}
	return out, sqlitedb.StoreError(rows.Err(), storeName)
}

// Purge implements memory.Store.
func (s *Store) Purge(ctx context.Context, scopeID string) (int, error) {
	var n int
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var exists int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM memory_scopes WHERE scope_id = ?`, scopeID).Scan(&exists); err != nil {
			return fmt.Errorf("memory scope: %w", err)
		}
		if exists == 0 {
			return failure.New(failure.UnknownMemory, "no memory scope has that scope_id")
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM memory_history WHERE memory_id IN (SELECT memory_id FROM memory_entries WHERE scope_id = ?)`, scopeID); err != nil {
			return fmt.Errorf("memory history: %w", err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM memory_entries WHERE scope_id = ?`, scopeID)
		if err != nil {
			return fmt.Errorf("memory entries: %w", err)
		}
		m, _ := res.RowsAffected()
		n = int(m)
		if _, err := tx.ExecContext(ctx, `DELETE FROM memory_scopes WHERE scope_id = ?`, scopeID); err != nil {
			return fmt.Errorf("memory scope: %w", err)
		}
		return nil
	})
	return n, sqlitedb.StoreError(err, storeName)
}

// DB returns the store's database (its writer's statistics, a readiness
// probe).
func (s *Store) DB() *sqlitedb.DB { return s.db }
