// Package memorypg is the PostgreSQL implementation of [memory.Store]:
// Project Memory in the schema memory of a shared database, which shares
// nothing with any other store's schema (decision 0035). Every mutation
// is one READ COMMITTED transaction, durable when it returns.
//
// Compare-and-swap holds across replicas: Apply takes a transaction-level
// advisory lock on the scope before it reads the current entry and the
// scope's entry count, so of two writers of one scope (on any replica)
// the second reads only after the first committed — what memorydb's single
// writer gives. Search is PostgreSQL full-text search (a generated
// tsvector with a GIN index) over the newest MaxRankedCandidates matches,
// ranked by ts_rank; queries take memorydb's FTS5 syntax (query.go).
//
// There is no read cache (memorydb's is keyed by SQLite's data_version);
// every read goes to the database.
package memorypg

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/memory"
	"github.com/webcodex/webcodex/internal/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Schema is the store's PostgreSQL schema.
const Schema = "memory"

const storeName = "memory store"

// MaxRankedCandidates bounds the matches a search ranks: the newest ones
// by updated time, so that a common word in a full scope ranks a bounded
// set (reference postgres-2026.md §7 measured this cap: 66 buffers
// instead of a heap scan over every match). An older match beyond it is
// not found by that search.
const MaxRankedCandidates = 500

// Store is a memory.Store on PostgreSQL.
type Store struct{ db *pgdb.DB }

var _ memory.Store = (*Store)(nil)

// Open migrates the schema memory of db and returns its store; the pool
// stays the caller's. Errors: those of pgdb.DB.Migrate.
func Open(ctx context.Context, db *pgdb.DB) (*Store, error) {
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

const entryCols = `memory_key, memory_id, generation, revision, definition_hash, body, tags, written_by, created_at_ms, updated_at_ms`

func scanEntry(r pgx.Row) (memory.Entry, error) {
	var (
		e        memory.Entry
		tags     string
		cAt, uAt int64
	)
	if err := r.Scan(&e.MemoryKey, &e.MemoryID, &e.Generation, &e.Revision, &e.DefinitionHash, &e.Body, &tags, &e.WrittenBy, &cAt, &uAt); err != nil {
		return memory.Entry{}, err
	}
	var err error
	if e.Tags, err = memory.ParseTagsRecord(tags); err != nil {
		return memory.Entry{}, err
	}
	e.CreatedAt, e.UpdatedAt = fromMS(cAt), fromMS(uAt)
	return e, nil
}

// lockScope takes the scope's transaction-level advisory lock: every
// Apply and Purge of one scope runs one at a time, across replicas.
func lockScope(ctx context.Context, tx pgx.Tx, scopeID string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "memory:"+scopeID); err != nil {
		return fmt.Errorf("memory scope lock: %w", err)
	}
	return nil
}

// Apply implements memory.Store: under the scope's lock it reads key's
// entry and, when it is absent, the scope's entry count, decides, and
// applies the change. A transaction that PostgreSQL retries decides again.
func (s *Store) Apply(ctx context.Context, scope memory.Scope, key string, decide memory.Decide) (memory.Change, error) {
	var ch memory.Change
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := lockScope(ctx, tx, scope.ID); err != nil {
			return err
		}
		var cur *memory.Entry
		n := 0
		e, err := scanEntry(tx.QueryRow(ctx, `SELECT `+entryCols+` FROM memory.entries WHERE scope_id = $1 AND memory_key = $2`, scope.ID, key))
		switch {
		case err == nil:
			cur = &e
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("memory entry: %w", err)
		default:
			if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT entries FROM memory.scopes WHERE scope_id = $1), 0)`, scope.ID).Scan(&n); err != nil {
				return fmt.Errorf("memory scope: %w", err)
			}
		}
		if ch, err = decide(cur, n); err != nil {
			return err
		}
		switch ch.Op {
		case memory.OpPut:
			return put(ctx, tx, scope, ch.Entry, ch.Created)
		case memory.OpDelete:
			return remove(ctx, tx, scope.ID, ch.Entry.MemoryID)
		}
		return nil
	})
	if err != nil {
		return memory.Change{}, pgdb.StoreError(err, storeName)
	}
	return ch, nil
}

// put writes e as key's current entry. created counts a new entry in the
// scope (creating the scope row on its first entry); otherwise the
// revision e replaces moves into the history first, and the history keeps
// the MaxHistoryPerKey-1 newest superseded revisions, so that with the
// current one an incarnation keeps MaxHistoryPerKey.
func put(ctx context.Context, tx pgx.Tx, scope memory.Scope, e memory.Entry, created bool) error {
	if created {
		if _, err := tx.Exec(ctx, `INSERT INTO memory.scopes (scope_id, project, root, created_at_ms, entries) VALUES ($1, $2, $3, $4, 1)
			ON CONFLICT (scope_id) DO UPDATE SET entries = memory.scopes.entries + 1`, scope.ID, scope.Project, scope.Root, ms(e.UpdatedAt)); err != nil {
			return fmt.Errorf("memory scope: %w", err)
		}
	} else if _, err := tx.Exec(ctx, `INSERT INTO memory.history (memory_id, generation, revision, body, tags, written_by, written_at_ms)
		SELECT memory_id, generation, revision, body, tags, written_by, updated_at_ms FROM memory.entries
		WHERE scope_id = $1 AND memory_key = $2`, scope.ID, e.MemoryKey); err != nil {
		return fmt.Errorf("memory history: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO memory.entries
		(scope_id, memory_key, memory_id, generation, revision, definition_hash, body, tags, tag_text, pinned, written_by, created_at_ms, updated_at_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (scope_id, memory_key) DO UPDATE SET
		memory_id = excluded.memory_id, generation = excluded.generation, revision = excluded.revision,
		definition_hash = excluded.definition_hash, body = excluded.body, tags = excluded.tags, tag_text = excluded.tag_text,
		pinned = excluded.pinned, written_by = excluded.written_by, updated_at_ms = excluded.updated_at_ms`,
		scope.ID, e.MemoryKey, e.MemoryID, e.Generation, e.Revision, e.DefinitionHash, e.Body, memory.TagsRecord(e.Tags),
		strings.Join(e.Tags, " "), e.Pinned(), e.WrittenBy, ms(e.CreatedAt), ms(e.UpdatedAt)); err != nil {
		return fmt.Errorf("memory entry: %w", err)
	}
	if e.Generation > memory.MaxHistoryPerKey {
		if _, err := tx.Exec(ctx, `DELETE FROM memory.history WHERE memory_id = $1 AND generation <= $2`,
			e.MemoryID, e.Generation-memory.MaxHistoryPerKey); err != nil {
			return fmt.Errorf("memory history retention: %w", err)
		}
	}
	return nil
}

func remove(ctx context.Context, tx pgx.Tx, scopeID, memoryID string) error {
	for _, q := range []string{
		`DELETE FROM memory.entries WHERE memory_id = $1`,
		`DELETE FROM memory.history WHERE memory_id = $1`,
	} {
		if _, err := tx.Exec(ctx, q, memoryID); err != nil {
			return fmt.Errorf("memory entry: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE memory.scopes SET entries = entries - 1 WHERE scope_id = $1`, scopeID); err != nil {
		return fmt.Errorf("memory scope: %w", err)
	}
	return nil
}

func (s *Store) one(ctx context.Context, where string, args ...any) (memory.Entry, bool, error) {
	e, err := scanEntry(s.db.Pool.QueryRow(ctx, `SELECT `+entryCols+` FROM memory.entries WHERE `+where, args...))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return memory.Entry{}, false, nil
	case err != nil:
		return memory.Entry{}, false, pgdb.StoreError(err, storeName)
	}
	return e, true, nil
}

// Get implements memory.Store.
func (s *Store) Get(ctx context.Context, scopeID, key string) (memory.Entry, bool, error) {
	return s.one(ctx, `scope_id = $1 AND memory_key = $2`, scopeID, key)
}

// ByID implements memory.Store.
func (s *Store) ByID(ctx context.Context, scopeID, memoryID string) (memory.Entry, bool, error) {
	return s.one(ctx, `scope_id = $1 AND memory_id = $2`, scopeID, memoryID)
}

// History implements memory.Store: the current revision is read from the
// entry row, the superseded ones from memory.history, in one statement
// (one snapshot).
func (s *Store) History(ctx context.Context, memoryID string) ([]memory.Revision, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT revision, body, tags, written_by, at FROM (
		SELECT generation, revision, body, tags, written_by, updated_at_ms AS at FROM memory.entries WHERE memory_id = $1
		UNION ALL
		SELECT generation, revision, body, tags, written_by, written_at_ms FROM memory.history WHERE memory_id = $1) h
		ORDER BY generation DESC LIMIT $2`, memoryID, memory.MaxHistoryPerKey)
	if err != nil {
		return nil, pgdb.StoreError(err, storeName)
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
			return nil, pgdb.StoreError(err, storeName)
		}
		var err error
		if r.Tags, err = memory.ParseTagsRecord(tags); err != nil {
			return nil, pgdb.StoreError(err, storeName)
		}
		r.WrittenAt = fromMS(at)
		out = append(out, r)
	}
	return out, pgdb.StoreError(rows.Err(), storeName)
}

// Search implements memory.Store. q.Text is translated from FTS5 syntax
// (query.go; invalid text is failure.InvalidArguments); of the scope's
// matches carrying every tag of q.Tags, the newest MaxRankedCandidates
// are ranked by ts_rank with memorydb's column weights (key 10, tags 5,
// body 1), best first, newest first among equals. The snippet is
// ts_headline's over the body, at most SnippetTokens words.
func (s *Store) Search(ctx context.Context, scopeID string, q memory.Query) ([]memory.Hit, error) {
	tq, err := tsquery(q.Text)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.Pool.Query(ctx, `WITH q AS (SELECT to_tsquery('simple', $2) AS q),
		c AS (SELECT e.id, e.memory_key, e.memory_id, e.revision, e.tags, e.updated_at_ms, e.body, e.fts
			FROM memory.entries e, q WHERE e.scope_id = $1 AND e.fts @@ q.q AND e.tags::jsonb @> $3::jsonb
			ORDER BY e.updated_at_ms DESC, e.id DESC LIMIT $4),
		r AS (SELECT c.*, ts_rank('{0.1, 0.1, 0.5, 1.0}', c.fts, q.q) AS score FROM c, q
			ORDER BY score DESC, c.updated_at_ms DESC, c.id DESC LIMIT $5)
		SELECT r.memory_key, r.memory_id, r.revision, r.tags, r.updated_at_ms,
			ts_headline('simple', regexp_replace(r.body, '[^[:alnum:]_]+', ' ', 'g'), q.q,
				'StartSel=[, StopSel=], MinWords=1, MaxWords=`+strconv.Itoa(memory.SnippetTokens)+`, MaxFragments=1, FragmentDelimiter=…'), r.score
		FROM r, q ORDER BY r.score DESC, r.updated_at_ms DESC, r.id DESC`,
		scopeID, tq, memory.TagsRecord(q.Tags), MaxRankedCandidates, q.Limit+1)
	if err != nil {
		return nil, pgdb.StoreError(err, storeName)
	}
	defer rows.Close()
	out := []memory.Hit{}
	for rows.Next() {
		var (
			h     memory.Hit
			tags  string
			at    int64
			score float32
		)
		if err := rows.Scan(&h.MemoryKey, &h.MemoryID, &h.Revision, &tags, &at, &h.Snippet, &score); err != nil {
			return nil, pgdb.StoreError(err, storeName)
		}
		var err error
		if h.Tags, err = memory.ParseTagsRecord(tags); err != nil {
			return nil, pgdb.StoreError(err, storeName)
		}
		h.Score, h.UpdatedAt = float64(score), fromMS(at)
		out = append(out, h)
	}
	return out, pgdb.StoreError(rows.Err(), storeName)
}

// Each implements memory.Store.
func (s *Store) Each(ctx context.Context, scopeID string, fn func(memory.Entry) bool) error {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+entryCols+` FROM memory.entries WHERE scope_id = $1
		ORDER BY pinned DESC, updated_at_ms DESC, id DESC`, scopeID)
	if err != nil {
		return pgdb.StoreError(err, storeName)
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return pgdb.StoreError(err, storeName)
		}
		if !fn(e) {
			return nil
		}
	}
	return pgdb.StoreError(rows.Err(), storeName)
}

// Count implements memory.Store.
func (s *Store) Count(ctx context.Context, scopeID string) (int, error) {
	var n int
	err := s.db.Pool.QueryRow(ctx, `SELECT coalesce((SELECT entries FROM memory.scopes WHERE scope_id = $1), 0)`, scopeID).Scan(&n)
	return n, pgdb.StoreError(err, storeName)
}

// Scopes implements memory.Store.
func (s *Store) Scopes(ctx context.Context, limit int) ([]memory.Scope, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT s.scope_id, s.project, s.root, s.created_at_ms,
		count(e.id), coalesce(sum(octet_length(e.body)), 0)
		FROM memory.scopes s LEFT JOIN memory.entries e ON e.scope_id = s.scope_id
		GROUP BY s.scope_id ORDER BY s.project, s.created_at_ms, s.scope_id LIMIT $1`, limit)
	if err != nil {
		return nil, pgdb.StoreError(err, storeName)
	}
	defer rows.Close()
	out := []memory.Scope{}
	for rows.Next() {
		var (
			sc memory.Scope
			at int64
		)
		if err := rows.Scan(&sc.ID, &sc.Project, &sc.Root, &at, &sc.Entries, &sc.Bytes); err != nil {
			return nil, pgdb.StoreError(err, storeName)
		}
		sc.CreatedAt = fromMS(at)
		out = append(out, sc)
	}
	return out, pgdb.StoreError(rows.Err(), storeName)
}

// Purge implements memory.Store, under the scope's lock.
func (s *Store) Purge(ctx context.Context, scopeID string) (int, error) {
	var n int
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := lockScope(ctx, tx, scopeID); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM memory.scopes WHERE scope_id = $1)`, scopeID).Scan(&exists); err != nil {
			return fmt.Errorf("memory scope: %w", err)
		}
		if !exists {
			return failure.New(failure.UnknownMemory, "no memory scope has that scope_id")
		}
		if _, err := tx.Exec(ctx, `DELETE FROM memory.history WHERE memory_id IN (SELECT memory_id FROM memory.entries WHERE scope_id = $1)`, scopeID); err != nil {
			return fmt.Errorf("memory history: %w", err)
		}
		res, err := tx.Exec(ctx, `DELETE FROM memory.entries WHERE scope_id = $1`, scopeID)
		if err != nil {
			return fmt.Errorf("memory entries: %w", err)
		}
		n = int(res.RowsAffected())
		if _, err := tx.Exec(ctx, `DELETE FROM memory.scopes WHERE scope_id = $1`, scopeID); err != nil {
			return fmt.Errorf("memory scope: %w", err)
		}
		return nil
	})
	return n, pgdb.StoreError(err, storeName)
}

// Migrate brings the store's schema in db up to this version (a newer one
// is refused, as Open refuses it) without opening the store: `webcodex
// migrate` creates every schema before it copies rows into them.
func Migrate(ctx context.Context, db *pgdb.DB) error {
	return db.Migrate(ctx, Schema, migrations, "migrations")
}
