package auditpg

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/retention"
)

// qExpiredEvents and qCountExpired find the events that ended before a
// cutoff through action_events_ended (migration 0003), oldest first in the
// index's order.
const (
	qExpiredEvents = `SELECT seq FROM audit.action_events WHERE ended_at < $1 ORDER BY ended_at, seq LIMIT $2`
	qCountExpired  = `SELECT count(DISTINCT session_id), count(*) FROM audit.action_events WHERE ended_at < $1`
)

// PurgeEventsBefore implements audit.EventPurger in one transaction: the
// oldest events (by ended_at, then seq: the index order) that ended before
// cutoff, and the held counts of
// their sessions, decremented under the session rows' locks so that an
// append racing the purge counts from what is left.
func (s *Store) PurgeEventsBefore(ctx context.Context, cutoff time.Time, batch int) (retention.Count, error) {
	var out retention.Count
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		out = retention.Count{}
		rows, err := tx.Query(ctx, `WITH gone AS (
			DELETE FROM audit.action_events WHERE seq IN (`+qExpiredEvents+`)
			RETURNING session_id),
		per AS (SELECT session_id, count(*) AS n FROM gone GROUP BY session_id)
		UPDATE audit.action_sessions s SET retained_events = greatest(s.retained_events - per.n, 0)
			FROM per WHERE s.session_id = per.session_id RETURNING per.n`, cutoff.Unix(), batch)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n int64
			if err := rows.Scan(&n); err != nil {
				return err
			}
			out.Owners++
			out.Items += n
		}
		return rows.Err()
	})
	if err != nil {
		return retention.Count{}, storeError(err)
	}
	return out, nil
}

// CountEventsBefore implements audit.EventPurger.
func (s *Store) CountEventsBefore(ctx context.Context, cutoff time.Time) (retention.Count, error) {
	var out retention.Count
	err := s.db.Pool.QueryRow(ctx, qCountExpired, cutoff.Unix()).Scan(&out.Owners, &out.Items)
	return out, storeError(err)
}
