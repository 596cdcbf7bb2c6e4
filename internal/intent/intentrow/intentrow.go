// Package intentrow is the stored form of declared intents and their
// undelivered overlap notices, and the statements over it, shared by the
// SQLite store (intentdb) and the PostgreSQL store (intentpg) so that both
// keep the same rows and make the same decisions: globs and a notice's
// globs and paths as JSON text, times as Unix milliseconds (UTC).
package intentrow

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/intent"
	"github.com/webcodex/webcodex/internal/sqlrow"
)

// Querier runs statements written with ? placeholders (a Dialect
// rewrites them) on one transaction or pool; Row is one of its rows.
type (
	Querier = sqlrow.Querier
	Row     = sqlrow.Row
)

// Dialect is what differs between the drivers' SQL.
type Dialect struct {
	// Prefix qualifies table names ("intents." for the PostgreSQL schema).
	Prefix string
	// Lock, when set, is a statement taking (owner, project) that holds
	// their intents until the transaction ends (PostgreSQL; SQLite's one
	// writer already holds the database).
	Lock string
	// Dollar rewrites ? placeholders to $1, $2, ... (PostgreSQL).
	Dollar bool
	// Notify, when set, is a statement run in a Declare transaction that
	// stored a notice (a NOTIFY on PostgreSQL, so that every replica's
	// Service reads its sessions' notices again).
	Notify string
}

func (d Dialect) sql(q string) string {
	q = strings.NewReplacer("{intents}", d.Prefix+"intents", "{notices}", d.Prefix+"notices").Replace(q)
	if !d.Dollar {
		return q
	}
	return sqlrow.Dollar(q)
}

// Store is an intent.Store over a driver's statements.
type Store struct {
	Dialect Dialect
	// Read is the pool single statements read from.
	Read Querier
	// Write runs fn on one durable write transaction and returns its
	// error already mapped by StoreError.
	Write func(ctx context.Context, fn func(q Querier) error) error
	// StoreError maps a driver error to a stable kind.
	StoreError func(err error) error
}

var _ intent.Store = (*Store)(nil)

const intentColumns = `session_id, owner, project, globs, note, declared_at_ms, expires_at_ms`

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func scanIntent(r Row) (intent.Intent, error) {
	var in intent.Intent
	var globs string
	var declared, expires int64
	if err := r.Scan(&in.SessionID, &in.Owner, &in.Project, &globs, &in.Note, &declared, &expires); err != nil {
		return intent.Intent{}, err
	}
	if err := json.Unmarshal([]byte(globs), &in.Globs); err != nil {
		return intent.Intent{}, fmt.Errorf("intent of %s globs: %w", in.SessionID, err)
	}
	in.DeclaredAt, in.ExpiresAt = fromMS(declared), fromMS(expires)
	return in, nil
}

func intents(ctx context.Context, q Querier, d Dialect, where string, args ...any) ([]intent.Intent, error) {
	var out []intent.Intent
	err := q.Query(ctx, d.sql(`SELECT `+intentColumns+` FROM {intents} WHERE `+where), args, func(r Row) error {
		in, err := scanIntent(r)
		out = append(out, in)
		return err
	})
	return out, err
}

// Declare implements intent.Store.
func (s *Store) Declare(ctx context.Context, in intent.Intent, now time.Time, judge func(others []intent.Intent) ([]intent.StoredNotice, error)) error {
	return s.Write(ctx, func(q Querier) error {
		d := s.Dialect
		if d.Lock != "" {
			if err := q.Exec(ctx, d.Lock, in.Owner, in.Project); err != nil {
				return err
			}
		}
		if err := q.Exec(ctx, d.sql(`DELETE FROM {intents} WHERE owner = ? AND project = ? AND expires_at_ms <= ?`),
			in.Owner, in.Project, ms(now)); err != nil {
			return err
		}
		if err := q.Exec(ctx, d.sql(`DELETE FROM {notices} WHERE created_at_ms <= ?`), ms(now.Add(-intent.NoticeRetention))); err != nil {
			return err
		}
		others, err := intents(ctx, q, d, `owner = ? AND project = ? AND session_id <> ? AND expires_at_ms > ?
			ORDER BY declared_at_ms, session_id LIMIT ?`, in.Owner, in.Project, in.SessionID, ms(now), intent.MaxProjectIntents+1)
		if err != nil {
			return err
		}
		notices, err := judge(others)
		if err != nil {
			return err
		}
		globs, err := json.Marshal(in.Globs)
		if err != nil {
			return err
		}
		if err := q.Exec(ctx, d.sql(`DELETE FROM {intents} WHERE session_id = ?`), in.SessionID); err != nil {
			return err
		}
		// The replaced intent's pending notices are judged again below.
		if err := q.Exec(ctx, d.sql(`DELETE FROM {notices} WHERE recipient = ? OR other_session = ?`), in.SessionID, in.SessionID); err != nil {
			return err
		}
		if err := q.Exec(ctx, d.sql(`INSERT INTO {intents} (`+intentColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`),
			in.SessionID, in.Owner, in.Project, string(globs), in.Note, ms(in.DeclaredAt), ms(in.ExpiresAt)); err != nil {
			return err
		}
		for _, n := range notices {
			if err := putNotice(ctx, q, d, n); err != nil {
				return err
			}
		}
		if len(notices) > 0 && d.Notify != "" {
			return q.Exec(ctx, d.Notify)
		}
		return nil
	})
}

// putNotice replaces n.Recipient's pending notice about the same other
// session, unless the recipient already holds MaxPendingNotices others.
func putNotice(ctx context.Context, q Querier, d Dialect, n intent.StoredNotice) error {
	globs, err := json.Marshal(n.Overlap.Globs)
	if err != nil {
		return err
	}
	paths, err := json.Marshal(n.Overlap.Paths)
	if err != nil {
		return err
	}
	if err := q.Exec(ctx, d.sql(`DELETE FROM {notices} WHERE recipient = ? AND other_session = ?`), n.Recipient, n.Overlap.SessionID); err != nil {
		return err
	}
	return q.Exec(ctx, d.sql(`INSERT INTO {notices} (recipient, other_session, owner, project, kind, globs, paths, created_at_ms)
		SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE (SELECT count(*) FROM {notices} WHERE recipient = ?) < ?`),
		n.Recipient, n.Overlap.SessionID, n.Owner, n.Project, n.Overlap.Kind, string(globs), string(paths), ms(n.CreatedAt),
		n.Recipient, intent.MaxPendingNotices)
}

// Get implements intent.Store.
func (s *Store) Get(ctx context.Context, sessionID string) (intent.Intent, bool, error) {
	ins, err := intents(ctx, s.Read, s.Dialect, `session_id = ?`, sessionID)
	if err != nil || len(ins) == 0 {
		return intent.Intent{}, false, s.StoreError(err)
	}
	return ins[0], true, nil
}

// List implements intent.Store.
func (s *Store) List(ctx context.Context, owner, project string, now time.Time, limit int) ([]intent.Intent, error) {
	ins, err := intents(ctx, s.Read, s.Dialect, `owner = ? AND project = ? AND expires_at_ms > ?
		ORDER BY declared_at_ms, session_id LIMIT ?`, owner, project, ms(now), limit)
	return ins, s.StoreError(err)
}

// Pending implements intent.Store.
func (s *Store) Pending(ctx context.Context, recipient string) (bool, error) {
	var n int
	err := s.Read.QueryRow(ctx, s.Dialect.sql(`SELECT count(*) FROM {notices} WHERE recipient = ?`), recipient).Scan(&n)
	return n > 0, s.StoreError(err)
}

// Take implements intent.Store.
func (s *Store) Take(ctx context.Context, recipient string) ([]intent.StoredNotice, error) {
	var out []intent.StoredNotice
	err := s.Write(ctx, func(q Querier) error {
		out = nil
		return q.Query(ctx, s.Dialect.sql(`DELETE FROM {notices} WHERE recipient = ?
			RETURNING recipient, other_session, owner, project, kind, globs, paths, created_at_ms`), []any{recipient}, func(r Row) error {
			var n intent.StoredNotice
			var globs, paths string
			var created int64
			if err := r.Scan(&n.Recipient, &n.Overlap.SessionID, &n.Owner, &n.Project, &n.Overlap.Kind, &globs, &paths, &created); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(globs), &n.Overlap.Globs); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(paths), &n.Overlap.Paths); err != nil {
				return err
			}
			n.CreatedAt = fromMS(created)
			out = append(out, n)
			return nil
		})
	})
	// RETURNING has no order: oldest first, then by the other session.
	slices.SortFunc(out, func(a, b intent.StoredNotice) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.Overlap.SessionID, b.Overlap.SessionID))
	})
	return out, err
}

// Raw returns every stored row of owner on project as text, for tests
// that prove nothing changed.
func (s *Store) Raw(ctx context.Context, owner, project string) (string, error) {
	var b strings.Builder
	err := s.Read.Query(ctx, s.Dialect.sql(`SELECT `+intentColumns+` FROM {intents} WHERE owner = ? AND project = ?
		ORDER BY session_id`), []any{owner, project}, func(r Row) error {
		in, err := scanIntent(r)
		fmt.Fprintf(&b, "%+v\n", in)
		return err
	})
	if err != nil {
		return "", s.StoreError(err)
	}
	err = s.Read.Query(ctx, s.Dialect.sql(`SELECT recipient, other_session, kind, globs, paths, created_at_ms FROM {notices}
		WHERE owner = ? AND project = ? ORDER BY recipient, other_session`), []any{owner, project}, func(r Row) error {
		var rc, o, k, g, p string
		var c int64
		err := r.Scan(&rc, &o, &k, &g, &p, &c)
		fmt.Fprintln(&b, rc, o, k, g, p, c)
		return err
	})
	return b.String(), s.StoreError(err)
}
