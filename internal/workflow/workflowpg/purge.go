package workflowpg

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/retention"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// sqlPurgeable selects the sessions whose events the retention policy
// removes: closed, holding events, and last updated (which is at or after
// closing) before the cutoff.
const sqlPurgeable = `FROM workflow.sessions WHERE lifecycle = 'closed' AND retained > 0 AND updated_at < $1`

// PurgeClosedEvents implements workflow.EventPurger: one session's oldest
// events (at most batch) and its header, in one transaction holding the
// session row's lock (another replica's purge skips the row).
func (s *Store) PurgeClosedEvents(ctx context.Context, cutoff time.Time, batch int) (retention.Count, error) {
	var out retention.Count
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		out = retention.Count{}
		var id, hdr string
		var retained int64
		err := tx.QueryRow(ctx, `SELECT session_id, header_json, retained `+sqlPurgeable+` LIMIT 1 FOR UPDATE SKIP LOCKED`, cutoff.UnixNano()).Scan(&id, &hdr, &retained)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM workflow.events WHERE session_id = $1 AND seq IN (
			SELECT seq FROM workflow.events WHERE session_id = $1 ORDER BY seq LIMIT $2)`, id, batch)
		if err != nil {
			return err
		}
		n := tag.RowsAffected()
		hdr, left, err := workflowrow.PurgedHeader(hdr, retained, n, batch)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE workflow.sessions SET retained = $1, header_json = $2 WHERE session_id = $3`,
			left, hdr, id); err != nil {
			return err
		}
		out = retention.Count{Owners: 1, Items: n}
		return nil
	})
	if err != nil {
		return retention.Count{}, storeErr(err)
	}
	return out, nil
}

// CountClosedEvents implements workflow.EventPurger.
func (s *Store) CountClosedEvents(ctx context.Context, cutoff time.Time) (retention.Count, error) {
	var out retention.Count
	err := s.db.Pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(retained), 0)::bigint `+sqlPurgeable, cutoff.UnixNano()).Scan(&out.Owners, &out.Items)
	return out, storeErr(err)
}
