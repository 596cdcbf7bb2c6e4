// Package auditdb implements [audit.Store] on SQLite in its own
// database file (audit.db, never shared with workflow.db). Every mutation
// goes through the group-commit writer and is committed when it returns;
// event appends are made durable lazily (see [DurableEvery]).
package auditdb

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditrow"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/sqlitedb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// FileName is the conventional database file name.
const FileName = "audit.db"

var _ audit.Store = (*Store)(nil)

// DurableEvery bounds how long appended audit events may stay committed
// but not yet on stable storage (decision 0029). An event batch commits
// before AppendEvents returns, so it survives the process being killed;
// it is fsynced (synchronous=FULL) only when the last durable append is
// at least DurableEvery old, and otherwise committed with
// synchronous=NORMAL, which a later durable commit or a checkpoint syncs
// in order. A power loss can therefore drop the audit events of at most
// the last DurableEvery of traffic (more only if no event followed them
// before the WAL was checkpointed); the ledger and the evidence journal,
// which hold the facts of every call, are not relaxed by this.
const DurableEvery = time.Second

// Store is the SQLite audit store. It trims as auditrow.TrimSlack says.
// (Only the server appends; a session another process also appended to
// can pass the bound by what that process added until this store next
// reads its count, see heldCache.)
type Store struct {
	db    *sqlitedb.DB
	stmts struct {
		ensure, insert, counters, count, held, trim, retained *sql.Stmt
	}
	// lastDurable is the Unix nanosecond time of the last durable event
	// append (0: none yet).
	lastDurable atomic.Int64
	held        heldCache
}

// maxHeldSessions bounds the held cache (it is emptied when full).
const maxHeldSessions = 1024

// heldCache is, per session this store appended to, how many events the
// session holds as far as this store knows: its retained_events after
// the store's last append (read back once, then advanced by each append
// and trim). It only decides when an append reads the exact count to
// judge a trim: the trim itself always works from the stored count, so
// an entry that is off (another process appended to the session, or an
// append failed after advancing it) can make a trim come later or a
// look come sooner, never change what is kept. An entry is dropped when
// an append of its session fails.
type heldCache struct {
	mu sync.Mutex
	n  map[string]int64
}

func (c *heldCache) get(id string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.n[id]
	return n, ok
}

func (c *heldCache) set(id string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil || len(c.n) >= maxHeldSessions {
		c.n = map[string]int64{}
	}
	c.n[id] = n
}

func (c *heldCache) drop(ids []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		delete(c.n, id)
	}
}

const (
	sqlEnsure = `INSERT OR IGNORE INTO action_sessions (session_id, status, created_at, updated_at) VALUES (?, 'open', ?, ?)`
	sqlInsert = `INSERT INTO action_events (` + auditrow.InsertColumns + `)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`
	sqlRelation = `INSERT INTO window_session_relations
		(window_principal, client_window, session_id, kind, first_at, last_at, count) VALUES (?, ?, ?, ?, ?, ?, 1)
		ON CONFLICT (window_principal, client_window, session_id, kind) DO UPDATE SET
		last_at = max(last_at, excluded.last_at), count = count + 1`
	// sqlCount adds an append's deltas to its session's counters;
	// sqlCounters also reads back how many events the session holds.
	sqlCount = `UPDATE action_sessions SET
		total_actions = total_actions + ?,
		success_count = success_count + ?,
		failed_count = failed_count + ?,
		timeout_or_unknown_count = timeout_or_unknown_count + ?,
		warning_count = warning_count + ?,
		total_duration_ms = total_duration_ms + ?,
		changed_files_count = changed_files_count + ?,
		job_ids_count = job_ids_count + ?,
		retained_events = retained_events + ?,
		first_event_at = COALESCE(first_event_at, ?),
		last_event_at = MAX(COALESCE(last_event_at, 0), ?),
		updated_at = MAX(updated_at, ?)
		WHERE session_id = ?`
	sqlCounters = sqlCount + ` RETURNING retained_events`
	// sqlHeld reads how many events a session holds.
	sqlHeld = `SELECT retained_events FROM action_sessions WHERE session_id = ?`
	// sqlTrim deletes the oldest ? events of a session: it walks only
	// the index entries it deletes.
	sqlTrim = `DELETE FROM action_events WHERE seq IN (
		SELECT seq FROM action_events WHERE session_id = ? ORDER BY seq LIMIT ?)`
	// sqlRetained sets how many events a session holds after a trim:
	// the count it kept (first ?), or, when the trim found fewer events
	// than retained_events said, the count of what is there.
	sqlRetained = `UPDATE action_sessions SET retained_events = CASE WHEN ? THEN ?
		ELSE (SELECT COUNT(*) FROM action_events e WHERE e.session_id = action_sessions.session_id) END
		WHERE session_id = ?`
)

// Open opens (creating if needed) the audit database at path.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Migrations(migrations, "migrations"))
	if err != nil {
		return nil, err
	}
	s := &Store{db: db}
	if err := db.Writer.PrepareAll(ctx, sqlitedb.Stmt{Dst: &s.stmts.ensure, Query: sqlEnsure}, sqlitedb.Stmt{Dst: &s.stmts.insert, Query: sqlInsert},
		sqlitedb.Stmt{Dst: &s.stmts.counters, Query: sqlCounters}, sqlitedb.Stmt{Dst: &s.stmts.trim, Query: sqlTrim},
		// The counters without RETURNING: an Exec costs less than a
		// query's rows, and the held cache says how many the session holds.
		sqlitedb.Stmt{Dst: &s.stmts.count, Query: sqlCount},
		sqlitedb.Stmt{Dst: &s.stmts.held, Query: sqlHeld},
		sqlitedb.Stmt{Dst: &s.stmts.retained, Query: sqlRetained}); err != nil {
		db.Close()
		return nil, fmt.Errorf("auditdb: prepare: %w", err)
	}
	return s, nil
}

// Close closes the database after queued writes commit.
func (s *Store) Close() error { return s.db.Close() }

// DB exposes the underlying database for tests and benchmarks.
func (s *Store) DB() *sqlitedb.DB { return s.db }

func wrapWrite(err error) error { return sqlitedb.StoreError(err, "audit store") }

// wrapRead is a read's error as failure.Unavailable; a *failure.Error
// (not found) passes through.
func wrapRead(err error) error {
	var fe *failure.Error
	if err == nil || errors.As(err, &fe) {
		return err
	}
	return failure.Wrap(failure.Unavailable, err, "audit store read failed")
}

// Resolve implements audit.Store. The common cases (a known explicit id, an
// idle-reusable session) are answered by reads; only a request that must
// create a session takes the writer, where the lookup is repeated so that
// concurrent requests create exactly one session.
func (s *Store) Resolve(ctx context.Context, req audit.ResolveRequest) (audit.Resolved, error) {
	r, found, _, err := lookup(ctx, s.db.QueryRow, req)
	if err != nil {
		return audit.Resolved{}, wrapRead(err)
	}
	if found {
		return r, nil
	}
	err = s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var found, taken bool
		var err error
		if r, found, taken, err = lookup(ctx, tx.QueryRowContext, req); err != nil || found {
			return err
		}
		// The explicit id when it is free; a fresh one for idle reuse and
		// for an id another principal's session has (remembered as the
		// id it was asked for).
		now := req.Now.Unix()
		r = audit.Resolved{ID: req.Explicit, Created: true, UpdatedAt: now}
		var requested any
		if taken {
			requested = req.Explicit
		}
		if r.ID == "" || taken {
			r.ID = req.NewID()
		}
		_, err = tx.ExecContext(ctx, sqlCreate, r.ID, req.Principal, requested, now, now)
		return err
	})
	if err != nil {
		return audit.Resolved{}, wrapWrite(err)
	}
	return r, nil
}

// queryRow is sqlitedb.DB.QueryRow or sql.Tx.QueryRowContext.
type queryRow func(ctx context.Context, query string, args ...any) *sql.Row

// lookup finds the existing session req resolves to, if any. Idle reuse:
// req.Principal's most recent open session active after the idle cutoff.
// An explicit id: its session when that is req.Principal's; when it is
// another principal's (taken), req.Principal's newest session created for
// that id.
func lookup(ctx context.Context, q queryRow, req audit.ResolveRequest) (r audit.Resolved, found, taken bool, err error) {
	if req.Explicit == "" {
		err = q(ctx, sqlIdle, req.Principal, req.Now.Add(-audit.IdleReuse).Unix()).Scan(&r.ID, &r.UpdatedAt)
	} else {
		var owner string
		err = q(ctx, sqlExplicit, req.Explicit).Scan(&r.ID, &r.UpdatedAt, &owner)
		if err == nil && owner != req.Principal {
			taken = true
			err = q(ctx, sqlRequested, req.Explicit, req.Principal).Scan(&r.ID, &r.UpdatedAt)
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return audit.Resolved{}, false, taken, nil
	}
	return r, err == nil, taken, err
}

const (
	// sqlIdle selects the idle-reusable session of a principal: its most
	// recent open session active after the cutoff.
	sqlIdle = `SELECT session_id, updated_at FROM action_sessions
	WHERE status = 'open' AND principal = ? AND updated_at > ? ORDER BY updated_at DESC, rowid DESC LIMIT 1`
	// sqlExplicit reads the session an explicit id names and its owner.
	sqlExplicit = `SELECT session_id, updated_at, principal FROM action_sessions WHERE session_id = ?`
	// sqlRequested selects a principal's newest session created for an
	// explicit id another principal's session has.
	sqlRequested = `SELECT session_id, updated_at FROM action_sessions
	WHERE requested_id = ? AND principal = ? ORDER BY updated_at DESC, rowid DESC LIMIT 1`
	// sqlCreate creates an open session.
	sqlCreate = `INSERT INTO action_sessions (session_id, principal, requested_id, status, created_at, updated_at)
	VALUES (?, ?, ?, 'open', ?, ?)`
)

// AppendEvents implements audit.Store: every event of evs in one
// transaction (one fsync), each session trimmed once.
func (s *Store) AppendEvents(ctx context.Context, evs []audit.Event, maxEvents int, now time.Time) error {
	if len(evs) == 0 {
		return nil
	}
	if maxEvents <= 0 {
		maxEvents = audit.MaxEventsPerSession
	}
	rows := make([]auditrow.Row, len(evs))
	for i, ev := range evs {
		var err error
		if rows[i], err = auditrow.Encode(ev); err != nil {
			return err
		}
	}
	order, per := auditrow.Sum(rows)
	at := now.Unix()
	commit := s.db.Writer.DoLazy
	durable := now.UnixNano()-s.lastDurable.Load() >= int64(DurableEvery)
	if durable {
		commit = s.db.Writer.Do
	}
	err := commit(ctx, func(ctx context.Context, tx *sql.Tx) error {
		retained, exact, err := s.countBatch(ctx, tx, order, per, at)
		if err != nil {
			return err
		}
		if err := s.insertBatch(ctx, tx, rows, at); err != nil {
			return err
		}
		return s.trimBatch(ctx, tx, order, retained, exact, maxEvents)
	})
	if err != nil {
		s.held.drop(order)
	}
	if err == nil && durable {
		s.lastDurable.Store(now.UnixNano())
	}
	return wrapWrite(err)
}

// countBatch adds each session's deltas to its counters in tx and returns
// each one's retained count, exact[i] false when retained[i] is the held
// cache's rather than read back.
//
// The counters go first: a session that has its row (nearly every
// append) needs no INSERT OR IGNORE; one that has none is created, then
// counted. Its events are inserted after, in the same transaction, so the
// order changes nothing that is stored. A session the held cache knows is
// counted without reading its count back.
func (s *Store) countBatch(ctx context.Context, tx *sql.Tx, order []string, per map[string]*auditrow.Deltas, at int64) ([]int64, []bool, error) {
	ensure, counters := tx.StmtContext(ctx, s.stmts.ensure), tx.StmtContext(ctx, s.stmts.counters)
	retained, exact := make([]int64, len(order)), make([]bool, len(order))
	for i, id := range order {
		d := per[id]
		args := []any{d.N, d.OK, d.Failed, d.Unknown, d.Warning, d.DurationMS, d.Files, d.Jobs, d.N, d.First, d.Last, at, id}
		if held, ok := s.held.get(id); ok {
			res, err := tx.StmtContext(ctx, s.stmts.count).ExecContext(ctx, args...)
			if err != nil {
				return nil, nil, err
			}
			if n, err := res.RowsAffected(); err == nil && n == 1 {
				retained[i] = held + d.N
				s.held.set(id, retained[i])
				continue
			}
			// No row (or no answer): count it below, reading back.
		}
		count := func() error {
			return counters.QueryRowContext(ctx, args...).Scan(&retained[i])
		}
		err := count()
		if errors.Is(err, sql.ErrNoRows) {
			if _, err = ensure.ExecContext(ctx, id, at, at); err == nil {
				err = count() // ensured just now: no row is an error too
			}
		}
		if err != nil {
			return nil, nil, err
		}
		exact[i] = true
		s.held.set(id, retained[i])
	}
	return retained, exact, nil
}

// insertBatch inserts the rows' events in tx with their window relations,
// expiring relations older than audit.WindowRelationRetention when a row
// carries any.
func (s *Store) insertBatch(ctx context.Context, tx *sql.Tx, rows []auditrow.Row, at int64) error {
	insert := tx.StmtContext(ctx, s.stmts.insert)
	for _, r := range rows {
		ev := r.Event
		if _, err := insert.ExecContext(ctx, r.Args()...); err != nil {
			return err
		}
		for _, rel := range ev.Window.Relations {
			if _, err := tx.ExecContext(ctx, sqlRelation, ev.Window.Principal, ev.Window.ClientWindow,
				rel.SessionID, rel.Kind, ev.EndedAt, ev.EndedAt); err != nil {
				return err
			}
		}
		if len(ev.Window.Relations) > 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM window_session_relations WHERE last_at < ?`,
				at-int64(audit.WindowRelationRetention/time.Second)); err != nil {
				return err
			}
		}
	}
	return nil
}

// trimBatch trims in tx each session of order whose retained count
// exceeds maxEvents to its newest maxEvents-TrimSlack events, judging a
// count that is not exact by the stored one first.
func (s *Store) trimBatch(ctx context.Context, tx *sql.Tx, order []string, retained []int64, exact []bool, maxEvents int) error {
	for i, id := range order {
		if retained[i] <= int64(maxEvents) {
			continue
		}
		if !exact[i] {
			// Judge the trim by the stored count, not the cache's.
			if err := tx.StmtContext(ctx, s.stmts.held).QueryRowContext(ctx, id).Scan(&retained[i]); err != nil {
				return err
			}
			s.held.set(id, retained[i])
			if retained[i] <= int64(maxEvents) {
				continue
			}
		}
		// retained_events counts the session's events, so the oldest
		// retained-keep are exactly the ones past what is kept: the
		// session is left with its newest keep.
		keep := int64(maxEvents - auditrow.TrimSlack(maxEvents))
		excess := retained[i] - keep
		res, err := tx.StmtContext(ctx, s.stmts.trim).ExecContext(ctx, id, excess)
		if err != nil {
			return err
		}
		deleted, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if _, err := tx.StmtContext(ctx, s.stmts.retained).ExecContext(ctx, deleted == excess, keep, id); err != nil {
			return err
		}
		if deleted == excess {
			s.held.set(id, keep)
		} else {
			s.held.drop([]string{id}) // recounted in SQL: read it back next time
		}
	}
	return nil
}

// Ergonomics implements audit.Store: the newest limit model_ergonomics
// records, newest first, and how many exist.
func (s *Store) Ergonomics(ctx context.Context, limit int) ([]audit.ModelErgonomics, int64, error) {
	var available int64
	if err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM action_events
		WHERE json_extract(summary_json, '$.model_ergonomics') IS NOT NULL`).Scan(&available); err != nil {
		return nil, 0, wrapRead(err)
	}
	rows, err := s.db.Read.QueryContext(ctx, `SELECT json_extract(summary_json, '$.model_ergonomics') FROM action_events
		WHERE json_extract(summary_json, '$.model_ergonomics') IS NOT NULL ORDER BY seq DESC LIMIT ?`, limit)
	if err != nil {
		return nil, 0, wrapRead(err)
	}
	defer rows.Close()
	out, err := auditrow.Ergonomics(rows)
	if err != nil {
		return nil, 0, wrapRead(err)
	}
	return out, available, nil
}

// LoopCalls implements audit.Store.
func (s *Store) LoopCalls(ctx context.Context, limit int) ([]audit.LoopCall, int64, error) {
	var available int64
	if err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM action_events WHERE meaningful = 1`).Scan(&available); err != nil {
		return nil, 0, wrapRead(err)
	}
	rows, err := s.db.Read.QueryContext(ctx, `SELECT coalesce(client_window, ''), coalesce(window_principal, ''),
		coalesce(started_at_ms, 0), coalesce(ended_at_ms, 0) FROM action_events
		WHERE meaningful = 1 ORDER BY seq DESC LIMIT ?`, limit)
	if err != nil {
		return nil, 0, wrapRead(err)
	}
	defer rows.Close()
	out, err := auditrow.LoopCalls(rows)
	if err != nil {
		return nil, 0, wrapRead(err)
	}
	return out, available, nil
}

// WindowRelations implements audit.Store.
func (s *Store) WindowRelations(ctx context.Context, principal, window string) ([]audit.WindowRelation, error) {
	rows, err := s.db.Read.QueryContext(ctx, `SELECT kind, session_id FROM window_session_relations
		WHERE window_principal = ? AND client_window = ? ORDER BY last_at DESC, session_id, kind`, principal, window)
	if err != nil {
		return nil, wrapRead(err)
	}
	defer rows.Close()
	out, err := auditrow.Relations(rows)
	return out, wrapRead(err)
}

// CloseSession implements audit.Store.
func (s *Store) CloseSession(ctx context.Context, id string, now time.Time) (audit.Session, error) {
	at := now.Unix()
	var sess audit.Session
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE action_sessions SET status = 'closed', closed_at = ?, updated_at = MAX(updated_at, ?)
			WHERE session_id = ? AND status = 'open'`, at, at, id); err != nil {
			return err
		}
		var err error
		sess, err = auditrow.ScanSession(tx.QueryRowContext(ctx, `SELECT `+auditrow.SessionColumns+` FROM action_sessions WHERE session_id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return failure.New(failure.NotFound, "audit session %q not found", id)
		}
		return err
	})
	if err != nil {
		return audit.Session{}, wrapWrite(err)
	}
	return sess, nil
}

// ListSessions implements audit.Store.
func (s *Store) ListSessions(ctx context.Context, status audit.Status, limit int) ([]audit.Session, error) {
	q := `SELECT ` + auditrow.SessionColumns + ` FROM action_sessions`
	args := []any{}
	if status != "" {
		q += ` WHERE status = ?`
		args = append(args, string(status))
	}
	q += ` ORDER BY COALESCE(last_event_at, created_at) DESC, rowid DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.Read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wrapRead(err)
	}
	defer rows.Close()
	out, err := auditrow.Sessions(rows)
	return out, wrapRead(err)
}

// events returns the newest limit events of a session, oldest first.
func (s *Store) events(ctx context.Context, id string, limit int) ([]audit.Event, error) {
	rows, err := s.db.Read.QueryContext(ctx, `SELECT `+auditrow.EventColumns+` FROM (
		SELECT seq, `+auditrow.EventColumns+` FROM action_events WHERE session_id = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq`, id, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return auditrow.Events(rows)
}

// Session implements audit.Store.
func (s *Store) Session(ctx context.Context, id string, eventsLimit int) (audit.Session, []audit.Event, error) {
	sess, err := auditrow.ScanSession(s.db.QueryRow(ctx, `SELECT `+auditrow.SessionColumns+` FROM action_sessions WHERE session_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return audit.Session{}, nil, failure.New(failure.NotFound, "audit session %q not found", id)
	}
	if err != nil {
		return audit.Session{}, nil, wrapRead(err)
	}
	evs, err := s.events(ctx, id, eventsLimit)
	if err != nil {
		return audit.Session{}, nil, wrapRead(err)
	}
	return sess, evs, nil
}

// Stats implements audit.Store. Any read error fails the whole call.
func (s *Store) Stats(ctx context.Context, q audit.StatsQuery) (audit.Stats, error) {
	count := func(ctx context.Context, query string, args ...any) (n int64, err error) {
		err = s.db.QueryRow(ctx, query, args...).Scan(&n)
		return n, err
	}
	st, err := auditrow.Stats(ctx, auditrow.StatsSource{
		Sessions: func(ctx context.Context) (int64, error) { return count(ctx, `SELECT COUNT(*) FROM action_sessions`) },
		HasSession: func(ctx context.Context, id string) (bool, error) {
			n, err := count(ctx, `SELECT COUNT(*) FROM action_sessions WHERE session_id = ?`, id)
			return n > 0, err
		},
		Newest: func(ctx context.Context, n int) ([]string, error) {
			rows, err := s.db.Read.QueryContext(ctx, `SELECT session_id FROM action_sessions
				ORDER BY COALESCE(last_event_at, created_at) DESC, rowid DESC LIMIT ?`, n)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			var ids []string
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					return nil, err
				}
				ids = append(ids, id)
			}
			return ids, rows.Err()
		},
		Count: func(ctx context.Context, id string) (int64, error) {
			return count(ctx, `SELECT COUNT(*) FROM action_events WHERE session_id = ?`, id)
		},
		Events: s.events,
	}, q)
	return st, wrapRead(err)
}
