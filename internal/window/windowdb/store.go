// Package windowdb is the SQLite implementation of [window.Store]: window
// activity and peer messages in their own database file (window.db),
// which shares nothing with workflow.db or audit.db (decision 0032).
//
// Activity is written behind the caller on the writer's lazy path (no
// fsync of its own, decision 0025): it is observational, and a lost update
// only leaves a window's activity older than it was. A peer message is
// durable when PostMessage returns.
package windowdb

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

	"github.com/webcodex/webcodex/internal/sqlitedb"
	"github.com/webcodex/webcodex/internal/window"
)

//go:embed migrations/*.sql
var migrations embed.FS

// FileName is the database's name inside the data directory.
const FileName = "window.db"

// Store is a window.Store backed by one SQLite database file.
type Store struct {
	db *sqlitedb.DB
}

var _ window.Store = (*Store)(nil)

// Open opens (creating and migrating if needed) the database at path.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Migrations(migrations, "migrations"))
	if err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

// Close waits for queued writes and closes the database.
func (s *Store) Close() error { return s.db.Close() }

func ms(t time.Time) int64 { return t.UnixMilli() }

// Touch implements window.Store.
func (s *Store) Touch(ctx context.Context, t window.Touch, p window.Prune, then func(error)) error {
	_, err := s.db.Writer.Go(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var aff, affAt any
		if t.Affinity != "" {
			aff, affAt = t.Affinity, ms(t.At)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO window_activity
			(principal, window, project, peer_id, first_at_ms, last_at_ms, calls, affinity_session, affinity_at_ms)
			VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)
			ON CONFLICT (principal, window, project) DO UPDATE SET
			last_at_ms = max(last_at_ms, excluded.last_at_ms), calls = calls + 1,
			affinity_session = CASE WHEN excluded.affinity_at_ms >= coalesce(affinity_at_ms, 0)
				THEN excluded.affinity_session ELSE affinity_session END,
			affinity_at_ms = max(coalesce(affinity_at_ms, 0), coalesce(excluded.affinity_at_ms, 0))`,
			t.Principal, t.Window, t.Project, t.PeerID, ms(t.At), ms(t.At), aff, affAt); err != nil {
			return fmt.Errorf("window activity: %w", err)
		}
		return pruneActivity(ctx, tx, t.Principal, p)
	}, then)
	return err
}

// pruneActivity removes activity older than the retention and, for
// principal, the rows beyond the newest MaxRows.
func pruneActivity(ctx context.Context, tx *sql.Tx, principal string, p window.Prune) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM window_activity WHERE last_at_ms < ?`, ms(p.ActivityBefore)); err != nil {
		return fmt.Errorf("window activity retention: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM window_activity WHERE principal = ? AND (window, project) IN
		(SELECT window, project FROM window_activity WHERE principal = ?
		 ORDER BY last_at_ms DESC, window, project LIMIT -1 OFFSET ?)`, principal, principal, p.MaxRows); err != nil {
		return fmt.Errorf("window activity retention: %w", err)
	}
	return nil
}

// Peers implements window.Store.
func (s *Store) Peers(ctx context.Context, principal, win, project string, since time.Time, limit int) ([]string, error) {
	rows, err := s.db.Read.QueryContext(ctx, `SELECT peer_id FROM window_activity
		WHERE principal = ? AND project = ? AND last_at_ms > ? AND window <> ?
		ORDER BY last_at_ms DESC, peer_id LIMIT ?`, principal, project, ms(since), win, limit)
	if err != nil {
		return nil, sqlitedb.StoreError(err, "window store")
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, sqlitedb.StoreError(err, "window store")
		}
		out = append(out, id)
	}
	return out, sqlitedb.StoreError(rows.Err(), "window store")
}

// ResolvePeer implements window.Store.
func (s *Store) ResolvePeer(ctx context.Context, principal, peerID string, since time.Time) (string, bool, error) {
	var win string
	err := s.db.QueryRow(ctx, `SELECT window FROM window_activity
		WHERE principal = ? AND peer_id = ? AND last_at_ms >= ? LIMIT 1`, principal, peerID, ms(since)).Scan(&win)
	switch {
	case err == sql.ErrNoRows:
		return "", false, nil
	case err != nil:
		return "", false, sqlitedb.StoreError(err, "window store")
	}
	return win, true, nil
}

// Activity implements window.Store.
func (s *Store) Activity(ctx context.Context, principal, win string) ([]window.ProjectActivity, error) {
	rows, err := s.db.Read.QueryContext(ctx, `SELECT project, first_at_ms, last_at_ms, calls FROM window_activity
		WHERE principal = ? AND window = ? ORDER BY last_at_ms DESC, project`, principal, win)
	if err != nil {
		return nil, sqlitedb.StoreError(err, "window store")
	}
	defer rows.Close()
	out := []window.ProjectActivity{}
	for rows.Next() {
		var a window.ProjectActivity
		var first, last int64
		if err := rows.Scan(&a.Project, &first, &last, &a.Calls); err != nil {
			return nil, sqlitedb.StoreError(err, "window store")
		}
		a.FirstAt, a.LastAt = time.UnixMilli(first).UTC(), time.UnixMilli(last).UTC()
		out = append(out, a)
	}
	return out, sqlitedb.StoreError(rows.Err(), "window store")
}

// LastActive implements window.Store.
func (s *Store) LastActive(ctx context.Context, win string) (time.Time, bool, error) {
	var last sql.NullInt64
	err := s.db.QueryRow(ctx, `SELECT max(last_at_ms) FROM window_activity WHERE window = ?`, win).Scan(&last)
	if err != nil {
		return time.Time{}, false, sqlitedb.StoreError(err, "window store")
	}
	if !last.Valid {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(last.Int64).UTC(), true, nil
}

// Affinity implements window.Store.
func (s *Store) Affinity(ctx context.Context, principal, win, project string, since time.Time) (string, bool, error) {
	var id string
	err := s.db.QueryRow(ctx, `SELECT affinity_session FROM window_activity
		WHERE principal = ? AND window = ? AND project = ? AND affinity_at_ms > ? AND affinity_session IS NOT NULL`,
		principal, win, project, ms(since)).Scan(&id)
	switch {
	case err == sql.ErrNoRows:
		return "", false, nil
	case err != nil:
		return "", false, sqlitedb.StoreError(err, "window store")
	}
	return id, true, nil
}

// PostMessage implements window.Store.
func (s *Store) PostMessage(ctx context.Context, m window.Message, p window.Prune) error {
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO peer_messages
			(id, principal, to_window, from_window, to_peer_id, from_peer_id, body, requires_ack, priority, created_at_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			m.ID, m.Principal, m.ToWindow, m.FromWindow, m.ToPeer, m.FromPeer, m.Body, m.RequiresAck, string(m.Priority), ms(m.CreatedAt)); err != nil {
			return fmt.Errorf("peer message: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM peer_messages WHERE created_at_ms < ?`, ms(p.MessagesBefore)); err != nil {
			return fmt.Errorf("peer message retention: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM peer_messages WHERE principal = ? AND to_window = ? AND id NOT IN
			(SELECT id FROM peer_messages WHERE principal = ? AND to_window = ? ORDER BY created_at_ms DESC, rowid DESC LIMIT ?)`,
			m.Principal, m.ToWindow, m.Principal, m.ToWindow, p.MaxMessagesEach); err != nil {
			return fmt.Errorf("peer message retention: %w", err)
		}
		return nil
	})
	return sqlitedb.StoreError(err, "window store")
}

// Waiting implements window.Store.
func (s *Store) Waiting(ctx context.Context, principal, win string, since time.Time, limit int) ([]window.Message, error) {
	rows, err := s.db.Read.QueryContext(ctx, `SELECT id, from_peer_id, to_peer_id, body, requires_ack, priority, created_at_ms, from_window,
		first_projected_at_ms IS NOT NULL
		FROM peer_messages WHERE principal = ? AND to_window = ? AND created_at_ms >= ?
		ORDER BY created_at_ms, rowid LIMIT ?`, principal, win, ms(since), limit)
	if err != nil {
		return nil, sqlitedb.StoreError(err, "window store")
	}
	defer rows.Close()
	out := []window.Message{}
	for rows.Next() {
		m := window.Message{Principal: principal, ToWindow: win}
		var created int64
		var prio string
		if err := rows.Scan(&m.ID, &m.FromPeer, &m.ToPeer, &m.Body, &m.RequiresAck, &prio, &created, &m.FromWindow, &m.Projected); err != nil {
			return nil, sqlitedb.StoreError(err, "window store")
		}
		m.Priority, m.CreatedAt = window.Priority(prio), time.UnixMilli(created).UTC()
		out = append(out, m)
	}
	return out, sqlitedb.StoreError(rows.Err(), "window store")
}

// Delivered implements window.Store: the projection and ACK facts go on
// the writer's lazy path, behind the caller (no fsync of their own).
func (s *Store) Delivered(ctx context.Context, principal, win string, shown, acked []string, at time.Time, then func(error)) error {
	_, err := s.db.Writer.Go(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, id := range shown {
			if _, err := tx.ExecContext(ctx, `UPDATE peer_messages SET
				first_projected_at_ms = coalesce(first_projected_at_ms, ?), last_projected_at_ms = ?,
				projection_count = projection_count + 1
				WHERE id = ? AND principal = ? AND to_window = ?`, ms(at), ms(at), id, principal, win); err != nil {
				return fmt.Errorf("peer message projection: %w", err)
			}
		}
		for _, id := range acked {
			if _, err := tx.ExecContext(ctx, `UPDATE peer_messages SET
				first_ack_observed_at_ms = coalesce(first_ack_observed_at_ms, ?)
				WHERE id = ? AND principal = ? AND to_window = ? AND requires_ack`, ms(at), id, principal, win); err != nil {
				return fmt.Errorf("peer message ack: %w", err)
			}
		}
		return nil
	}, then)
	return err
}

// Awareness implements window.Store.
func (s *Store) Awareness(ctx context.Context, principal, win, project string) (string, error) {
	var d sql.NullString
	err := s.db.QueryRow(ctx, `SELECT aware_digest FROM window_activity WHERE principal = ? AND window = ? AND project = ?`,
		principal, win, project).Scan(&d)
	if err == sql.ErrNoRows {
		return "", nil
	}
	return d.String, sqlitedb.StoreError(err, "window store")
}

// SetAwareness implements window.Store: an upsert on the lazy path that
// creates the row the call's own activity update then completes.
func (s *Store) SetAwareness(ctx context.Context, t window.Touch, digest string, then func(error)) error {
	_, err := s.db.Writer.Go(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO window_activity
			(principal, window, project, peer_id, first_at_ms, last_at_ms, calls, aware_digest)
			VALUES (?, ?, ?, ?, ?, ?, 0, ?)
			ON CONFLICT (principal, window, project) DO UPDATE SET aware_digest = excluded.aware_digest`,
			t.Principal, t.Window, t.Project, t.PeerID, ms(t.At), ms(t.At), digest); err != nil {
			return fmt.Errorf("peer awareness: %w", err)
		}
		return nil
	}, then)
	return err
}

// Facts returns a message's analysis facts (for tests and diagnostics):
// first and last projection times (0 when never), projection count and
// first ACK observation time (0 when never).
func (s *Store) Facts(ctx context.Context, id string) (firstMS, lastMS, count, ackMS int64, err error) {
	err = s.db.QueryRow(ctx, `SELECT coalesce(first_projected_at_ms, 0), coalesce(last_projected_at_ms, 0),
		projection_count, coalesce(first_ack_observed_at_ms, 0) FROM peer_messages WHERE id = ?`, id).Scan(&firstMS, &lastMS, &count, &ackMS)
	return firstMS, lastMS, count, ackMS, sqlitedb.StoreError(err, "window store")
}

// Flush implements window.Store: it waits for the writer's queue as it is
// now (lazy commits, no fsync of their own).
func (s *Store) Flush(ctx context.Context) error {
	return sqlitedb.StoreError(s.db.Writer.Wait(ctx, s.db.Writer.Queued()), "window store")
}

// Counts returns how many activity rows and peer messages are stored.
func (s *Store) Counts(ctx context.Context) (activity, messages int64, err error) {
	err = s.db.QueryRow(ctx, `SELECT (SELECT count(*) FROM window_activity), (SELECT count(*) FROM peer_messages)`).Scan(&activity, &messages)
	return activity, messages, sqlitedb.StoreError(err, "window store")
}

// Commits reports the writer's commits and how many of them were lazy
// (synchronous=NORMAL, no fsync).
func (s *Store) Commits() (total, lazy int64) {
	total, _ = s.db.Writer.Stats()
	return total, s.db.Writer.LazyCommits()
}

// DB returns the store's database (its writer's statistics, a readiness
// probe).
func (s *Store) DB() *sqlitedb.DB { return s.db }
