package auditdb

import (
	"context"
	"database/sql"
	"maps"
	"slices"
	"time"

	"github.com/webcodex/webcodex/internal/retention"
)

// qExpiredEvents and qCountExpired find the events that ended before a
// cutoff through idx_action_events_ended (migration 0007), oldest first in
// the index's order.
const (
	qExpiredEvents = `SELECT seq FROM action_events WHERE ended_at < ? ORDER BY ended_at, seq LIMIT ?`
	qCountExpired  = `SELECT COUNT(DISTINCT session_id), COUNT(*) FROM action_events WHERE ended_at < ?`
)

// PurgeEventsBefore implements audit.EventPurger in one writer
// transaction: the oldest events (by ended_at, then seq: the order of the
// index that finds them) that ended before cutoff, and
// the held counts of their sessions.
func (s *Store) PurgeEventsBefore(ctx context.Context, cutoff time.Time, batch int) (retention.Count, error) {
	var per map[string]int64
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		per = map[string]int64{}
		rows, err := tx.QueryContext(ctx, `DELETE FROM action_events WHERE seq IN (`+qExpiredEvents+`) RETURNING session_id`, cutoff.Unix(), batch)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			per[id]++
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for _, id := range slices.Sorted(maps.Keys(per)) {
			if _, err := tx.ExecContext(ctx, `UPDATE action_sessions SET retained_events = max(retained_events - ?, 0) WHERE session_id = ?`, per[id], id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return retention.Count{}, wrapWrite(err)
	}
	s.held.drop(slices.Collect(maps.Keys(per)))
	out := retention.Count{Owners: int64(len(per))}
	for _, n := range per {
		out.Items += n
	}
	return out, nil
}

// CountEventsBefore implements audit.EventPurger.
func (s *Store) CountEventsBefore(ctx context.Context, cutoff time.Time) (retention.Count, error) {
	var out retention.Count
	err := s.db.QueryRow(ctx, qCountExpired, cutoff.Unix()).Scan(&out.Owners, &out.Items)
	return out, wrapRead(err)
}
