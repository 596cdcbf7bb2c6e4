package workflowdb

import (
	"context"
	"database/sql"

	"github.com/webcodex/webcodex/internal/workflow"
)

var _ workflow.SnapshotReader = (*Store)(nil)

// SessionSnapshot implements workflow.SnapshotReader: the header's
// events_observed, the board's observation revision and its open counts,
// all from one read-only transaction.
func (s *Store) SessionSnapshot(ctx context.Context, id string) (workflow.SessionSnapshot, error) {
	var out workflow.SessionSnapshot
	if err := s.waitPending(ctx, id); err != nil {
		return out, storeErr(err)
	}
	if err := s.waitFor(ctx, &s.boardPending, id); err != nil {
		return out, storeErr(err)
	}
	if err := s.check(ctx, id); err != nil {
		return out, storeErr(err)
	}
	tx, err := s.db.Read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return out, storeErr(err)
	}
	defer tx.Rollback()
	sess, _, err := s.scanHeader(tx.QueryRowContext(ctx, sqlHeader, id), id)
	if err != nil {
		return out, storeErr(err)
	}
	out.Fence.EventsObserved = sess.EventsObserved
	var rev sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT observation_revision FROM message_boards WHERE session_id = ?`, id).Scan(&rev)
	if err != nil && err != sql.ErrNoRows {
		return out, storeErr(err)
	}
	out.Fence.MessageObservationRevision = rev.Int64
	c := &out.Collaboration
	err = tx.QueryRowContext(ctx, `SELECT
		COALESCE(SUM(kind = 'guidance'), 0), COALESCE(SUM(kind = 'question'), 0),
		COALESCE(SUM(kind = 'risk'), 0), COALESCE(SUM(kind = 'todo'), 0), COALESCE(SUM(requires_ack != 0), 0)
		FROM messages WHERE session_id = ? AND status = 'open'`, id).
		Scan(&c.OpenGuidance, &c.OpenQuestions, &c.OpenRisks, &c.OpenTodos, &c.UnresolvedAckRequired)
	return out, storeErr(err)
}
