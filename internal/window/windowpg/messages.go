package windowpg

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/window"
)

// lockWindow serializes, across processes, the transactions that count
// the messages of principal's window against Prune.MaxMessagesEach.
func lockWindow(ctx context.Context, tx pgx.Tx, principal, win string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('webcodex.windows.messages'), hashtext($1 || '/' || $2))`, principal, win)
	return err
}

// PostMessage implements window.Store. The bound of p.MaxMessagesEach is
// counted over the recipient window's messages, so the transaction first
// takes that window's advisory lock.
func (s *Store) PostMessage(ctx context.Context, m window.Message, p window.Prune) error {
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := lockWindow(ctx, tx, m.Principal, m.ToWindow); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO windows.peer_messages
			(id, principal, to_window, from_window, to_peer_id, from_peer_id, body, requires_ack, priority, created_at_ms)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			m.ID, m.Principal, m.ToWindow, m.FromWindow, m.ToPeer, m.FromPeer, m.Body, m.RequiresAck, string(m.Priority), ms(m.CreatedAt)); err != nil {
			return fmt.Errorf("peer message: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM windows.peer_messages WHERE created_at_ms < $1`, ms(p.MessagesBefore)); err != nil {
			return fmt.Errorf("peer message retention: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM windows.peer_messages WHERE principal = $1 AND to_window = $2 AND id NOT IN
			(SELECT id FROM windows.peer_messages WHERE principal = $1 AND to_window = $2 ORDER BY created_at_ms DESC, seq DESC LIMIT $3)`,
			m.Principal, m.ToWindow, p.MaxMessagesEach); err != nil {
			return fmt.Errorf("peer message retention: %w", err)
		}
		return nil
	})
	return pgdb.StoreError(err, storeName)
}

// Waiting implements window.Store.
func (s *Store) Waiting(ctx context.Context, principal, win string, since time.Time, limit int) ([]window.Message, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT id, from_peer_id, to_peer_id, body, requires_ack, priority, created_at_ms, from_window,
		first_projected_at_ms IS NOT NULL
		FROM windows.peer_messages WHERE principal = $1 AND to_window = $2 AND created_at_ms >= $3
		ORDER BY created_at_ms, seq LIMIT $4`, principal, win, ms(since), limit)
	if err != nil {
		return nil, pgdb.StoreError(err, storeName)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (window.Message, error) {
		m := window.Message{Principal: principal, ToWindow: win}
		var created int64
		var prio string
		err := r.Scan(&m.ID, &m.FromPeer, &m.ToPeer, &m.Body, &m.RequiresAck, &prio, &created, &m.FromWindow, &m.Projected)
		m.Priority, m.CreatedAt = window.Priority(prio), time.UnixMilli(created).UTC()
		return m, err
	})
	if out == nil && err == nil {
		out = []window.Message{}
	}
	return out, pgdb.StoreError(err, storeName)
}

// Delivered implements window.Store: the projection and ACK facts are
// written behind the caller, one statement each (an id shown twice in one
// call counts once; the service shows each message once per block).
func (s *Store) Delivered(ctx context.Context, principal, win string, shown, acked []string, at time.Time, then func(error)) error {
	return s.enqueue(ctx, job{then: then, write: func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE windows.peer_messages SET
			first_projected_at_ms = coalesce(first_projected_at_ms, $1), last_projected_at_ms = $1,
			projection_count = projection_count + 1
			WHERE id = ANY($2) AND principal = $3 AND to_window = $4`, ms(at), shown, principal, win); err != nil {
			return fmt.Errorf("peer message projection: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE windows.peer_messages SET
			first_ack_observed_at_ms = coalesce(first_ack_observed_at_ms, $1)
			WHERE id = ANY($2) AND principal = $3 AND to_window = $4 AND requires_ack`, ms(at), acked, principal, win); err != nil {
			return fmt.Errorf("peer message ack: %w", err)
		}
		return nil
	}})
}

// Awareness implements window.Store.
func (s *Store) Awareness(ctx context.Context, principal, win, project string) (string, error) {
	var d *string
	_, err := s.one(ctx, `SELECT aware_digest FROM windows.window_activity WHERE principal = $1 AND win = $2 AND project = $3`,
		[]any{principal, win, project}, &d)
	if d == nil {
		return "", err
	}
	return *d, err
}

// SetAwareness implements window.Store: an upsert behind the caller that
// creates the row the call's own activity update then completes.
func (s *Store) SetAwareness(ctx context.Context, t window.Touch, digest string, then func(error)) error {
	return s.enqueue(ctx, job{then: then, write: func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO windows.window_activity
			(principal, win, project, peer_id, first_at_ms, last_at_ms, calls, aware_digest)
			VALUES ($1, $2, $3, $4, $5, $5, 0, $6)
			ON CONFLICT (principal, win, project) DO UPDATE SET aware_digest = excluded.aware_digest`,
			t.Principal, t.Window, t.Project, t.PeerID, ms(t.At), digest); err != nil {
			return fmt.Errorf("peer awareness: %w", err)
		}
		return nil
	}})
}

// Facts returns a message's analysis facts (for tests and diagnostics):
// first and last projection times (0 when never), projection count and
// first ACK observation time (0 when never).
func (s *Store) Facts(ctx context.Context, id string) (firstMS, lastMS, count, ackMS int64, err error) {
	err = s.db.Pool.QueryRow(ctx, `SELECT coalesce(first_projected_at_ms, 0), coalesce(last_projected_at_ms, 0),
		projection_count, coalesce(first_ack_observed_at_ms, 0) FROM windows.peer_messages WHERE id = $1`, id).Scan(&firstMS, &lastMS, &count, &ackMS)
	return firstMS, lastMS, count, ackMS, pgdb.StoreError(err, storeName)
}

// Counts returns how many activity rows and peer messages are stored.
func (s *Store) Counts(ctx context.Context) (activity, messages int64, err error) {
	err = s.db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM windows.window_activity), (SELECT count(*) FROM windows.peer_messages)`).Scan(&activity, &messages)
	return activity, messages, pgdb.StoreError(err, storeName)
}
