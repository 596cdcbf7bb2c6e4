// Package readrow is the stored form of read sets and their notices and
// the statements over it, shared by the SQLite store (readsetdb) and the
// PostgreSQL store (readsetpg) so that both keep exactly the same rows
// and make the same decisions. Times are Unix milliseconds (UTC). A
// driver supplies a Querier over its transaction or pool and a Dialect.
package readrow

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/readset"
	"github.com/webcodex/webcodex/internal/sqlrow"
)

// Row and Rows are package sqlrow's.
type (
	Row  = sqlrow.Row
	Rows = sqlrow.Rows
)

// Querier runs statements written with ? placeholders (a Dialect rewrites
// them) on one transaction or pool.
type Querier interface {
	Exec(ctx context.Context, query string, args ...any) error
	// Query calls each for every row.
	Query(ctx context.Context, query string, args []any, each func(Row) error) error
}

// Dialect is what differs between the drivers' SQL.
type Dialect struct {
	// Prefix qualifies table names ("readsets." for the PostgreSQL schema).
	Prefix string
	// PathOrder follows a path in ORDER BY so that both drivers order
	// paths by bytes (` COLLATE "C"` on PostgreSQL).
	PathOrder string
	// Placeholders, when set, rewrites the ? placeholders
	// (sqlrow.Dollar on PostgreSQL).
	Placeholders func(string) string
	// Notify, when set, is a statement run in a Record transaction that
	// made a notice (a NOTIFY on PostgreSQL, so that every replica's
	// Tracker knows its cache of sessions without notices is stale).
	Notify string
}

// rendered caches Dialect.sql by dialect and statement: the statements
// are a fixed set and the hot path must not rebuild them.
var rendered sync.Map // renderKey -> string

// renderKey names a rendering; a driver has one Dialect, so whether it
// rewrites placeholders stands for its function.
type renderKey struct {
	prefix, pathOrder string
	numbered          bool
	q                 string
}

// sql prepares a statement: table names qualified, placeholders rewritten.
func (d Dialect) sql(q string) string {
	if r, ok := rendered.Load(d.key(q)); ok {
		return r.(string)
	}
	r := d.render(q)
	rendered.Store(d.key(q), r)
	return r
}

func (d Dialect) key(q string) renderKey {
	return renderKey{prefix: d.Prefix, pathOrder: d.PathOrder, numbered: d.Placeholders != nil, q: q}
}

// WriteStatements returns the statements Record and Take run in their
// write transaction, as d renders them, for a driver to prepare once.
func (d Dialect) WriteStatements() []string {
	out := make([]string, 0, 12)
	for _, q := range []string{notifyOthers, upsertRead, deleteRead, deleteNotice, countReads, evictNotices, evictReads, takeNotices, forgetRead, countNotices, forgetReads, forgetNotices} {
		out = append(out, d.sql(q))
	}
	return out
}

func (d Dialect) render(q string) string {
	q = strings.NewReplacer("{reads}", d.Prefix+"reads", "{notices}", d.Prefix+"notices", "{path_order}", d.PathOrder,
		"{refresh_ms}", strconv.FormatInt(readset.ReadRefresh.Milliseconds(), 10)).Replace(q)
	if d.Placeholders == nil {
		return q
	}
	return d.Placeholders(q)
}

// Store is a readset.Store over a driver's statements.
type Store struct {
	Dialect Dialect
	// Read is the pool single statements read from.
	Read Querier
	// Write runs fn on one write transaction; it returns errors already
	// mapped by StoreError.
	Write func(ctx context.Context, fn func(q Querier) error) error
	// StoreError maps a driver error to a stable kind.
	StoreError func(err error) error
}

var _ readset.Store = (*Store)(nil)

const (
	notifyOthers = `INSERT INTO {notices} AS n (session_id, project, path, read_sha256, sha256, changed_by, observed_at_ms)
	SELECT r.session_id, r.project, r.path, r.sha256, CAST(? AS text), CASE WHEN r.owner = ? AND ? <> '' THEN ? ELSE 'unknown' END,
		CAST(? AS bigint)
	FROM {reads} r WHERE r.project = ? AND r.path = ? AND r.session_id <> ? AND r.sha256 <> ?
	ON CONFLICT (session_id, project, path) DO UPDATE SET sha256 = excluded.sha256, changed_by = excluded.changed_by,
		observed_at_ms = excluded.observed_at_ms
	WHERE n.sha256 <> excluded.sha256
	RETURNING session_id`
	// A re-read of the same digest refreshes read_at only when it is
	// readset.ReadRefresh old, so that repeated reads of an unchanged file
	// write no page.
	upsertRead = `INSERT INTO {reads} AS r (session_id, project, path, owner, sha256, read_at_ms) VALUES (?, ?, ?, ?, ?, ?)
	ON CONFLICT (session_id, project, path) DO UPDATE SET owner = excluded.owner, sha256 = excluded.sha256,
		read_at_ms = excluded.read_at_ms
	WHERE r.sha256 <> excluded.sha256 OR r.owner <> excluded.owner OR r.read_at_ms <= excluded.read_at_ms - {refresh_ms}`
	deleteRead   = `DELETE FROM {reads} WHERE session_id = ? AND project = ? AND path = ?`
	deleteNotice = `DELETE FROM {notices} WHERE session_id = ? AND project = ? AND path = ?`
	countReads   = `SELECT COUNT(*) FROM {reads} WHERE session_id = ? AND project = ?`
	oldestReads  = `SELECT path FROM {reads} WHERE session_id = ? AND project = ? ORDER BY read_at_ms, path{path_order} LIMIT ?`
	evictNotices = `DELETE FROM {notices} WHERE session_id = ? AND project = ? AND path IN (` + oldestReads + `)`
	evictReads   = `DELETE FROM {reads} WHERE session_id = ? AND project = ? AND path IN (` + oldestReads + `)`
	pending      = `SELECT 1 FROM {notices} WHERE session_id = ? AND project = ? LIMIT 1`
	takeNotices  = `DELETE FROM {notices} WHERE session_id = ? AND project = ? AND path IN (
		SELECT path FROM {notices} WHERE session_id = ? AND project = ? ORDER BY observed_at_ms, path{path_order} LIMIT ?)
	RETURNING path, read_sha256, sha256, changed_by, observed_at_ms`
	forgetRead    = `DELETE FROM {reads} WHERE session_id = ? AND project = ? AND path = ? AND sha256 = ?`
	countNotices  = `SELECT COUNT(*) FROM {notices} WHERE session_id = ? AND project = ?`
	forgetReads   = `DELETE FROM {reads} WHERE session_id = ?`
	forgetNotices = `DELETE FROM {notices} WHERE session_id = ?`
	listReads     = `SELECT path, sha256, read_at_ms FROM {reads} WHERE session_id = ? AND project = ? ORDER BY read_at_ms DESC, path{path_order}`
)

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// Record implements readset.Store in one write transaction.
func (s *Store) Record(ctx context.Context, obs []readset.Observation) (bool, error) {
	for _, o := range obs {
		if err := o.Validate(); err != nil {
			return false, err
		}
	}
	notified := false
	err := s.Write(ctx, func(q Querier) (err error) {
		notified, err = record(ctx, q, s.Dialect, obs)
		return err
	})
	return notified, err
}

type scope struct{ session, project string }

// record applies obs on q and reports whether it made or changed a
// notice (running d.Notify once when it did).
func record(ctx context.Context, q Querier, d Dialect, obs []readset.Observation) (notified bool, err error) {
	var touched []scope
	made := false
	for _, o := range obs {
		var by string
		if o.Wrote {
			by = o.Session
		}
		if err := q.Query(ctx, d.sql(notifyOthers), []any{o.SHA256, o.Owner, by, by, ms(o.At), o.Project, o.Path, o.Session, o.SHA256},
			func(Row) error { made = true; return nil }); err != nil {
			return false, err
		}
		if o.Session == "" {
			continue
		}
		if o.SHA256 != "" {
			err = q.Exec(ctx, d.sql(upsertRead), o.Session, o.Project, o.Path, o.Owner, o.SHA256, ms(o.At))
		} else {
			err = q.Exec(ctx, d.sql(deleteRead), o.Session, o.Project, o.Path)
		}
		if err != nil {
			return false, err
		}
		if err := q.Exec(ctx, d.sql(deleteNotice), o.Session, o.Project, o.Path); err != nil {
			return false, err
		}
		if sc := (scope{o.Session, o.Project}); !slices.Contains(touched, sc) {
			touched = append(touched, sc)
		}
	}
	for _, sc := range touched {
		if err := evict(ctx, q, d, sc); err != nil {
			return false, err
		}
	}
	if made && d.Notify != "" {
		if err := q.Exec(ctx, d.Notify); err != nil {
			return false, err
		}
	}
	return made, nil
}

// evict cuts sc's read set to readset.MaxReadsPerSession, the least
// recently read first, with their pending notices.
func evict(ctx context.Context, q Querier, d Dialect, sc scope) error {
	var n int
	if err := q.Query(ctx, d.sql(countReads), []any{sc.session, sc.project}, func(r Row) error { return r.Scan(&n) }); err != nil {
		return err
	}
	over := n - readset.MaxReadsPerSession
	if over <= 0 {
		return nil
	}
	for _, stmt := range []string{evictNotices, evictReads} {
		if err := q.Exec(ctx, d.sql(stmt), sc.session, sc.project, sc.session, sc.project, over); err != nil {
			return err
		}
	}
	return nil
}

// Pending implements readset.Store. The read is one index probe and is
// not interrupted by ctx's cancellation: with a cancellable context the
// SQLite driver arms a watcher for it, which costs as much as the probe.
func (s *Store) Pending(ctx context.Context, session, project string) (bool, error) {
	found := false
	err := s.Read.Query(context.WithoutCancel(ctx), s.Dialect.sql(pending), []any{session, project}, func(Row) error { found = true; return nil })
	return found, s.StoreError(err)
}

// Take implements readset.Store in one write transaction.
func (s *Store) Take(ctx context.Context, session, project string, limit int) ([]readset.Notice, int, error) {
	var out []readset.Notice
	var rest int
	err := s.Write(ctx, func(q Querier) error {
		out, rest = nil, 0
		d := s.Dialect
		err := q.Query(ctx, d.sql(takeNotices), []any{session, project, session, project, limit}, func(r Row) error {
			var n readset.Notice
			var at int64
			if err := r.Scan(&n.Path, &n.ReadSHA256, &n.SHA256, &n.ChangedBy, &at); err != nil {
				return err
			}
			n.ObservedAt = fromMS(at)
			out = append(out, n)
			return nil
		})
		if err != nil {
			return err
		}
		for _, n := range out {
			if err := q.Exec(ctx, d.sql(forgetRead), session, project, n.Path, n.ReadSHA256); err != nil {
				return err
			}
		}
		return q.Query(ctx, d.sql(countNotices), []any{session, project}, func(r Row) error { return r.Scan(&rest) })
	})
	if err != nil {
		return nil, 0, err
	}
	slices.SortFunc(out, func(a, b readset.Notice) int {
		return cmp.Or(a.ObservedAt.Compare(b.ObservedAt), strings.Compare(a.Path, b.Path))
	})
	return out, len(out) + rest, nil
}

// Reads implements readset.Store.
func (s *Store) Reads(ctx context.Context, session, project string) ([]readset.Read, error) {
	var out []readset.Read
	err := s.Read.Query(ctx, s.Dialect.sql(listReads), []any{session, project}, func(r Row) error {
		var rd readset.Read
		var at int64
		if err := r.Scan(&rd.Path, &rd.SHA256, &at); err != nil {
			return err
		}
		rd.At = fromMS(at)
		out = append(out, rd)
		return nil
	})
	return out, s.StoreError(err)
}

// Forget implements readset.Store in one write transaction.
func (s *Store) Forget(ctx context.Context, sessions []string) error {
	if len(sessions) == 0 {
		return nil
	}
	return s.Write(ctx, func(q Querier) error {
		for _, id := range sessions {
			for _, stmt := range []string{forgetReads, forgetNotices} {
				if err := q.Exec(ctx, s.Dialect.sql(stmt), id); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
