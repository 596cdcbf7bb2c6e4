package workflowdb

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/webcodex/webcodex/internal/retention"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// sqlPurgeable selects the sessions whose events the retention policy
// removes: closed, holding events, and last updated (which is at or after
// closing) before the cutoff.
const sqlPurgeable = `FROM sessions WHERE lifecycle = 'closed' AND retained > 0 AND updated_at < ?`

// PurgeClosedEvents implements workflow.EventPurger: one session's oldest
// events (at most batch) and its header, in one writer transaction.
func (s *Store) PurgeClosedEvents(ctx context.Context, cutoff time.Time, batch int) (retention.Count, error) {
	var out retention.Count
	var id string
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		out = retention.Count{}
		var hdr string
		var retained int64
		err := tx.QueryRowContext(ctx, `SELECT session_id, header_json, retained `+sqlPurgeable+` LIMIT 1`, cutoff.UnixNano()).Scan(&id, &hdr, &retained)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM events WHERE session_id = ? AND seq IN (
			SELECT seq FROM events WHERE session_id = ? ORDER BY seq LIMIT ?)`, id, id, batch)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		hdr, left, err := workflowrow.PurgedHeader(hdr, retained, n, batch)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET retained = ?, header_json = ? WHERE session_id = ?`,
			left, hdr, id); err != nil {
			return err
		}
		out = retention.Count{Owners: 1, Items: n}
		return nil
	})
	if err != nil {
		return retention.Count{}, storeErr(err)
	}
	if out.Owners > 0 {
		s.headers.Delete(id) // the next read decodes the purged header
	}
	return out, nil
}

// CountClosedEvents implements workflow.EventPurger.
func (s *Store) CountClosedEvents(ctx context.Context, cutoff time.Time) (retention.Count, error) {
	var out retention.Count
	err := s.db.QueryRow(ctx, `SELECT COUNT(*), COALESCE(SUM(retained), 0) `+sqlPurgeable, cutoff.UnixNano()).Scan(&out.Owners, &out.Items)
	return out, storeErr(err)
}
