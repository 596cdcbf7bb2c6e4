// Package auditpg implements [audit.Store] on PostgreSQL, in the schema
// audit of a shared database: Action Audit Sessions never share a table or
// a schema with Workflow Sessions (schema workflow) or any other domain.
// Every mutation is one READ COMMITTED transaction, durable when it
// returns; the values stored are those of the SQLite store (auditdb),
// through the shared row codec auditrow.
//
// Several replicas may write at once. Every fact that spans rows is
// decided under a lock the database holds: an append locks its sessions'
// rows (SELECT … FOR UPDATE) before it judges their retained count and
// trims, and a Resolve that may create a session holds a
// transaction-scoped advisory lock keyed by its principal and explicit id
// while it looks and creates. Nothing is cached in process memory.
package auditpg

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditrow"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Schema is the store's PostgreSQL schema.
const Schema = "audit"

const storeName = "audit store"

// Store is the PostgreSQL audit store.
type Store struct{ db *pgdb.DB }

var _ audit.Store = (*Store)(nil)

// Open migrates the schema audit of db and returns its store; the pool
// stays the caller's. Errors: those of pgdb.DB.Migrate (failure.Conflict
// for a database a newer WebCodex migrated).
func Open(ctx context.Context, db *pgdb.DB) (*Store, error) {
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

// Close releases nothing and returns nil: the pool belongs to the caller,
// who closes it after every store on it.
func (s *Store) Close() error { return nil }

func storeError(err error) error { return pgdb.StoreError(err, storeName) }

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

const (
	// sqlIdle selects the idle-reusable session of a principal: its most
	// recent open session active after the cutoff.
	sqlIdle = `SELECT session_id, updated_at FROM audit.action_sessions
	WHERE status = 'open' AND principal = $1 AND updated_at > $2 ORDER BY updated_at DESC, seq DESC LIMIT 1`
	// sqlExplicit reads the session an explicit id names and its owner.
	sqlExplicit = `SELECT session_id, updated_at, principal FROM audit.action_sessions WHERE session_id = $1`
	// sqlRequested selects a principal's newest session created for an
	// explicit id another principal's session has.
	sqlRequested = `SELECT session_id, updated_at FROM audit.action_sessions
	WHERE requested_id = $1 AND principal = $2 ORDER BY updated_at DESC, seq DESC LIMIT 1`
	// sqlCreate creates an open session unless its id exists.
	sqlCreate = `INSERT INTO audit.action_sessions (session_id, principal, requested_id, status, created_at, updated_at)
	VALUES ($1, $2, $3, 'open', $4, $4) ON CONFLICT (session_id) DO NOTHING`
	// sqlResolveLock serializes the Resolves of one principal and
	// explicit id ("" for idle reuse) on every replica.
	sqlResolveLock = `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`
)

// resolveLockKey is the advisory lock key of a Resolve: its principal and
// explicit id. Two keys that collide only serialize more.
func resolveLockKey(req audit.ResolveRequest) string {
	return "webcodex.audit.resolve\n" + clean(req.Principal) + "\n" + clean(req.Explicit)
}

// Resolve implements audit.Store. The common cases (a known explicit id,
// an idle-reusable session) are answered by reads; a request that must
// create a session takes the advisory lock of its principal and explicit
// id, looks again and creates, so that concurrent requests on any replica
// create exactly one session. An id created meanwhile by an append (which
// takes no such lock) is found by looking once more.
func (s *Store) Resolve(ctx context.Context, req audit.ResolveRequest) (audit.Resolved, error) {
	req.Principal, req.Explicit = clean(req.Principal), clean(req.Explicit)
	r, found, _, err := lookup(ctx, s.db.Pool, req)
	if err != nil {
		return audit.Resolved{}, storeError(err)
	}
	if found {
		return r, nil
	}
	err = s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlResolveLock, resolveLockKey(req)); err != nil {
			return err
		}
		for range 2 {
			var found, taken bool
			var err error
			if r, found, taken, err = lookup(ctx, tx, req); err != nil || found {
				return err
			}
			// The explicit id when it is free; a fresh one for idle reuse
			// and for an id another principal's session has (remembered as
			// the id it was asked for).
			now := req.Now.Unix()
			r = audit.Resolved{ID: req.Explicit, Created: true, UpdatedAt: now}
			var requested any
			if taken {
				requested = req.Explicit
			}
			if r.ID == "" || taken {
				r.ID = clean(req.NewID())
			}
			tag, err := tx.Exec(ctx, sqlCreate, r.ID, req.Principal, requested, now)
			if err != nil || tag.RowsAffected() == 1 {
				return err
			}
			// The id was created meanwhile (by an append): look again.
		}
		return failure.New(failure.Conflict, "audit session %q was created twice while it was resolved", r.ID)
	})
	if err != nil {
		return audit.Resolved{}, storeError(err)
	}
	return r, nil
}

// lookup finds the existing session req resolves to, if any. Idle reuse:
// req.Principal's most recent open session active after the idle cutoff.
// An explicit id: its session when that is req.Principal's; when it is
// another principal's (taken), req.Principal's newest session created for
// that id.
func lookup(ctx context.Context, q querier, req audit.ResolveRequest) (r audit.Resolved, found, taken bool, err error) {
	if req.Explicit == "" {
		err = q.QueryRow(ctx, sqlIdle, req.Principal, req.Now.Add(-audit.IdleReuse).Unix()).Scan(&r.ID, &r.UpdatedAt)
	} else {
		var owner string
		err = q.QueryRow(ctx, sqlExplicit, req.Explicit).Scan(&r.ID, &r.UpdatedAt, &owner)
		if err == nil && owner != req.Principal {
			taken = true
			err = q.QueryRow(ctx, sqlRequested, req.Explicit, req.Principal).Scan(&r.ID, &r.UpdatedAt)
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return audit.Resolved{}, false, taken, nil
	}
	return r, err == nil, taken, err
}

// clean is s as PostgreSQL text can hold it: a NUL byte and each invalid
// UTF-8 sequence become U+FFFD (SQLite stores them as given; PostgreSQL
// refuses the whole statement).
func clean(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// cleanEvent is ev with every plain text field cleaned (the JSON columns
// need none: encoding/json escapes NUL and replaces invalid UTF-8).
func cleanEvent(ev audit.Event) audit.Event {
	for _, f := range []*string{&ev.EventID, &ev.SessionID, &ev.Endpoint, &ev.Operation, &ev.ActionName, &ev.Project,
		&ev.Status, &ev.ErrorSummary, &ev.WarningSummary, &ev.Attribution.PrincipalKind, &ev.Attribution.PrincipalUserID,
		&ev.Attribution.OAuthClientID, &ev.Window.ClientWindow, &ev.Window.Principal} {
		*f = clean(*f)
	}
	if len(ev.Window.Relations) > 0 {
		rels := slices.Clone(ev.Window.Relations)
		for i := range rels {
			rels[i].Kind, rels[i].SessionID = clean(rels[i].Kind), clean(rels[i].SessionID)
		}
		ev.Window.Relations = rels
	}
	return ev
}

const (
	// sqlEnsure creates the sessions of a batch that have no row yet, in
	// the order the batch names them.
	sqlEnsure = `INSERT INTO audit.action_sessions (session_id, status, created_at, updated_at)
	SELECT id, 'open', $2, $2 FROM unnest($1::text[]) WITH ORDINALITY AS u(id, n) ORDER BY n
	ON CONFLICT (session_id) DO NOTHING`
	// sqlLockSessions locks the batch's sessions' rows, in one order
	// (so that two batches never wait on each other in a cycle), and
	// reads how many events each holds: every writer of a session's
	// events holds this lock until it commits.
	sqlLockSessions = `SELECT session_id, retained_events FROM audit.action_sessions
	WHERE session_id = ANY($1::text[]) ORDER BY session_id COLLATE "C" FOR UPDATE`
	sqlRelation = `INSERT INTO audit.window_session_relations AS r
	(window_principal, client_window, session_id, kind, first_at, last_at, count) VALUES ($1, $2, $3, $4, $5, $6, 1)
	ON CONFLICT (window_principal, client_window, session_id, kind) DO UPDATE SET
	last_at = greatest(r.last_at, excluded.last_at), count = r.count + 1`
	sqlExpireRelations = `DELETE FROM audit.window_session_relations WHERE last_at < $1`
	// sqlTrim deletes the oldest $2 events of a session.
	sqlTrim = `DELETE FROM audit.action_events WHERE seq IN (
	SELECT seq FROM audit.action_events WHERE session_id = $1 ORDER BY seq LIMIT $2)`
	// sqlCount adds an append's deltas to its session's counters and
	// sets how many events it holds (judged under the row's lock).
	sqlCount = `UPDATE audit.action_sessions SET
	total_actions = total_actions + $1,
	success_count = success_count + $2,
	failed_count = failed_count + $3,
	timeout_or_unknown_count = timeout_or_unknown_count + $4,
	warning_count = warning_count + $5,
	total_duration_ms = total_duration_ms + $6,
	changed_files_count = changed_files_count + $7,
	job_ids_count = job_ids_count + $8,
	retained_events = $9,
	first_event_at = coalesce(first_event_at, $10),
	last_event_at = greatest(coalesce(last_event_at, 0), $11),
	updated_at = greatest(updated_at, $12)
	WHERE session_id = $13`
	// sqlRecount sets a session's retained count from its rows, when a
	// trim found fewer events than the count said.
	sqlRecount = `UPDATE audit.action_sessions SET retained_events =
	(SELECT count(*) FROM audit.action_events e WHERE e.session_id = $1) WHERE session_id = $1`
)

// insertTypes are the PostgreSQL types of auditrow.InsertColumns, in
// order.
var insertTypes = []string{"text", "text", "bigint", "bigint", "bigint", "text", "text", "text", "text", "text", "bigint",
	"text", "text", "text", "text", "text", "bigint", "bigint", "text", "text", "text", "text", "text", "bigint", "bigint", "bigint", "text"}

// sqlInsert inserts a batch's events with one statement, one array per
// column, in the batch's order (so seq orders them as the batch does).
var sqlInsert = func() string {
	arrays, names := make([]string, len(insertTypes)), make([]string, len(insertTypes))
	for i, typ := range insertTypes {
		arrays[i] = fmt.Sprintf("$%d::%s[]", i+1, typ)
		names[i] = fmt.Sprintf("c%d", i+1)
	}
	return `INSERT INTO audit.action_events (` + auditrow.InsertColumns + `) SELECT ` + strings.Join(names, ", ") +
		` FROM unnest(` + strings.Join(arrays, ", ") + `) WITH ORDINALITY AS u(` + strings.Join(names, ", ") + `, n) ORDER BY n`
}()

// columns are rows' insert values as one array per column.
func columns(rows []auditrow.Row) []any {
	cols := make([][]any, len(insertTypes))
	for i := range cols {
		cols[i] = make([]any, len(rows))
	}
	for r, row := range rows {
		for i, v := range row.Args() {
			cols[i][r] = v
		}
	}
	out := make([]any, len(cols))
	for i, c := range cols {
		out[i] = c
	}
	return out
}

// AppendEvents implements audit.Store: every event of evs in one
// transaction, each session locked, counted and trimmed once. The
// transaction takes two round trips besides BEGIN and COMMIT: the
// sessions are created and locked in one, and the events (one INSERT of
// one array per column), relations, trims and counter updates are sent
// in the other.
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
		if rows[i], err = auditrow.Encode(cleanEvent(ev)); err != nil {
			return err
		}
	}
	order, per := auditrow.Sum(rows)
	at := now.Unix()
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		held, err := lockSessions(ctx, tx, order, at)
		if err != nil {
			return err
		}
		return writeBatch(ctx, tx, rows, order, per, held, maxEvents, at)
	})
	return storeError(err)
}

// lockSessions creates the sessions of order that have none, locks every
// one's row and returns how many events each holds.
func lockSessions(ctx context.Context, tx pgx.Tx, order []string, at int64) (map[string]int64, error) {
	b := &pgx.Batch{}
	b.Queue(sqlEnsure, order, at)
	b.Queue(sqlLockSessions, order)
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	held := make(map[string]int64, len(order))
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		held[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(held) != len(order) {
		return nil, fmt.Errorf("audit: %d of %d sessions locked", len(held), len(order))
	}
	return held, br.Close()
}

// writeBatch inserts the rows' events with their window relations, trims
// each session of order that goes past maxEvents to its newest
// maxEvents-TrimSlack and updates its counters, in one round trip; held
// is each session's count under its row lock.
func writeBatch(ctx context.Context, tx pgx.Tx, rows []auditrow.Row, order []string, per map[string]*auditrow.Deltas,
	held map[string]int64, maxEvents int, at int64) error {
	b := &pgx.Batch{}
	relations := false
	b.Queue(sqlInsert, columns(rows)...)
	for _, r := range rows {
		w := r.Event.Window
		for _, rel := range w.Relations {
			b.Queue(sqlRelation, w.Principal, w.ClientWindow, rel.SessionID, rel.Kind, r.Event.EndedAt, r.Event.EndedAt)
			relations = true
		}
	}
	if relations {
		b.Queue(sqlExpireRelations, at-int64(audit.WindowRelationRetention/time.Second))
	}
	keep := int64(maxEvents - auditrow.TrimSlack(maxEvents))
	type trim struct {
		id     string
		excess int64
	}
	var trims []trim
	for _, id := range order {
		d := per[id]
		retained := held[id] + d.N
		if retained > int64(maxEvents) {
			// retained counts the session's events, so the oldest
			// retained-keep are exactly the ones past what is kept.
			trims = append(trims, trim{id, retained - keep})
			b.Queue(sqlTrim, id, retained-keep)
			retained = keep
		}
		b.Queue(sqlCount, d.N, d.OK, d.Failed, d.Unknown, d.Warning, d.DurationMS, d.Files, d.Jobs, retained, d.First, d.Last, at, id)
	}
	br := tx.SendBatch(ctx, b)
	short := []string{}
	if _, err := br.Exec(); err != nil {
		br.Close()
		return err
	}
	for _, r := range rows {
		for range r.Event.Window.Relations {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return err
			}
		}
	}
	if relations {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
	}
	ti := 0
	for _, id := range order {
		if ti < len(trims) && trims[ti].id == id {
			tag, err := br.Exec()
			if err != nil {
				br.Close()
				return err
			}
			if tag.RowsAffected() != trims[ti].excess {
				short = append(short, id)
			}
			ti++
		}
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
	}
	if err := br.Close(); err != nil {
		return err
	}
	for _, id := range short {
		// The trim found fewer events than the count said: count them.
		if _, err := tx.Exec(ctx, sqlRecount, id); err != nil {
			return err
		}
	}
	return nil
}

// Ergonomics implements audit.Store: the newest limit model_ergonomics
// records, newest first, and how many exist. A summary whose
// model_ergonomics is JSON null has none, as json_extract says on SQLite.
// (The json type, not jsonb: jsonb refuses a \u0000 a summary may hold.)
func (s *Store) Ergonomics(ctx context.Context, limit int) ([]audit.ModelErgonomics, int64, error) {
	const has = `coalesce(json_typeof(summary_json::json -> 'model_ergonomics'), 'null') <> 'null'`
	var available int64
	if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit.action_events WHERE `+has).Scan(&available); err != nil {
		return nil, 0, storeError(err)
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT (summary_json::json -> 'model_ergonomics')::text FROM audit.action_events
		WHERE `+has+` ORDER BY seq DESC LIMIT $1`, limit)
	if err != nil {
		return nil, 0, storeError(err)
	}
	defer rows.Close()
	out, err := auditrow.Ergonomics(rows)
	if err != nil {
		return nil, 0, storeError(err)
	}
	return out, available, nil
}

// LoopCalls implements audit.Store.
func (s *Store) LoopCalls(ctx context.Context, limit int) ([]audit.LoopCall, int64, error) {
	var available int64
	if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit.action_events WHERE meaningful = 1`).Scan(&available); err != nil {
		return nil, 0, storeError(err)
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT coalesce(client_window, ''), coalesce(window_principal, ''),
		coalesce(started_at_ms, 0), coalesce(ended_at_ms, 0) FROM audit.action_events
		WHERE meaningful = 1 ORDER BY seq DESC LIMIT $1`, limit)
	if err != nil {
		return nil, 0, storeError(err)
	}
	defer rows.Close()
	out, err := auditrow.LoopCalls(rows)
	if err != nil {
		return nil, 0, storeError(err)
	}
	return out, available, nil
}

// WindowRelations implements audit.Store.
func (s *Store) WindowRelations(ctx context.Context, principal, window string) ([]audit.WindowRelation, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT kind, session_id FROM audit.window_session_relations
		WHERE window_principal = $1 AND client_window = $2 ORDER BY last_at DESC, session_id COLLATE "C", kind COLLATE "C"`,
		clean(principal), clean(window))
	if err != nil {
		return nil, storeError(err)
	}
	defer rows.Close()
	out, err := auditrow.Relations(rows)
	return out, storeError(err)
}

const sqlSession = `SELECT ` + auditrow.SessionColumns + ` FROM audit.action_sessions WHERE session_id = $1`

// CloseSession implements audit.Store.
func (s *Store) CloseSession(ctx context.Context, id string, now time.Time) (audit.Session, error) {
	id = clean(id)
	at := now.Unix()
	var sess audit.Session
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE audit.action_sessions SET status = 'closed', closed_at = $1, updated_at = greatest(updated_at, $1)
			WHERE session_id = $2 AND status = 'open'`, at, id); err != nil {
			return err
		}
		var err error
		sess, err = auditrow.ScanSession(tx.QueryRow(ctx, sqlSession, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return failure.New(failure.NotFound, "audit session %q not found", id)
		}
		return err
	})
	if err != nil {
		return audit.Session{}, storeError(err)
	}
	return sess, nil
}

// ListSessions implements audit.Store.
func (s *Store) ListSessions(ctx context.Context, status audit.Status, limit int) ([]audit.Session, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+auditrow.SessionColumns+` FROM audit.action_sessions
		WHERE $1 = '' OR status = $1 ORDER BY coalesce(last_event_at, created_at) DESC, seq DESC LIMIT $2`, string(status), limit)
	if err != nil {
		return nil, storeError(err)
	}
	defer rows.Close()
	out, err := auditrow.Sessions(rows)
	return out, storeError(err)
}

// events returns the newest limit events of a session, oldest first.
func (s *Store) events(ctx context.Context, id string, limit int) ([]audit.Event, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+auditrow.EventColumns+` FROM (
		SELECT seq, `+auditrow.EventColumns+` FROM audit.action_events WHERE session_id = $1 ORDER BY seq DESC LIMIT $2) e ORDER BY seq`, id, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return auditrow.Events(rows)
}

// Session implements audit.Store.
func (s *Store) Session(ctx context.Context, id string, eventsLimit int) (audit.Session, []audit.Event, error) {
	id = clean(id)
	sess, err := auditrow.ScanSession(s.db.Pool.QueryRow(ctx, sqlSession, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return audit.Session{}, nil, failure.New(failure.NotFound, "audit session %q not found", id)
	}
	if err != nil {
		return audit.Session{}, nil, storeError(err)
	}
	evs, err := s.events(ctx, id, eventsLimit)
	if err != nil {
		return audit.Session{}, nil, storeError(err)
	}
	return sess, evs, nil
}

// Stats implements audit.Store. Any read error fails the whole call.
func (s *Store) Stats(ctx context.Context, q audit.StatsQuery) (audit.Stats, error) {
	q.SessionID = clean(q.SessionID)
	count := func(ctx context.Context, query string, args ...any) (n int64, err error) {
		err = s.db.Pool.QueryRow(ctx, query, args...).Scan(&n)
		return n, err
	}
	st, err := auditrow.Stats(ctx, auditrow.StatsSource{
		Sessions: func(ctx context.Context) (int64, error) {
			return count(ctx, `SELECT count(*) FROM audit.action_sessions`)
		},
		HasSession: func(ctx context.Context, id string) (bool, error) {
			n, err := count(ctx, `SELECT count(*) FROM audit.action_sessions WHERE session_id = $1`, id)
			return n > 0, err
		},
		Newest: func(ctx context.Context, n int) ([]string, error) {
			rows, err := s.db.Pool.Query(ctx, `SELECT session_id FROM audit.action_sessions
				ORDER BY coalesce(last_event_at, created_at) DESC, seq DESC LIMIT $1`, n)
			if err != nil {
				return nil, err
			}
			return pgx.CollectRows(rows, pgx.RowTo[string])
		},
		Count: func(ctx context.Context, id string) (int64, error) {
			return count(ctx, `SELECT count(*) FROM audit.action_events WHERE session_id = $1`, id)
		},
		Events: s.events,
	}, q)
	return st, storeError(err)
}

// Migrate brings the store's schema in db up to this version (a newer one
// is refused, as Open refuses it) without opening the store: `webcodex
// migrate` creates every schema before it copies rows into them.
func Migrate(ctx context.Context, db *pgdb.DB) error {
	return db.Migrate(ctx, Schema, migrations, "migrations")
}
