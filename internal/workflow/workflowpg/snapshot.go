package workflowpg

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// SessionSnapshot implements workflow.SnapshotReader: the header's
// events_observed (decoded from workflow.sessions.header_json), the
// board's observation revision and its open counts, all from one
// REPEATABLE READ snapshot taken after the behind board writes this Board
// queued for the session have ended.
func (b *Board) SessionSnapshot(ctx context.Context, id string) (workflow.SessionSnapshot, error) {
	var out workflow.SessionSnapshot
	if err := b.behind.wait(ctx, id); err != nil {
		return out, boardErr(err)
	}
	err := b.snapshot(ctx, func(tx pgx.Tx) error {
		var hdr string
		var rev *int64
		err := tx.QueryRow(ctx, `SELECT s.header_json, m.observation_revision FROM workflow.sessions s
			LEFT JOIN workflow.message_boards m ON m.session_id = s.session_id WHERE s.session_id = $1`, id).Scan(&hdr, &rev)
		if errors.Is(err, pgx.ErrNoRows) {
			return failure.New(failure.UnknownSessionID, "no Workflow Session %s exists", id)
		}
		if err != nil {
			return err
		}
		sess, err := workflowrow.DecodeHeader([]byte(hdr))
		if err != nil {
			return fmt.Errorf("session %s: %v", id, err)
		}
		out.Fence.EventsObserved = sess.EventsObserved
		if rev != nil {
			out.Fence.MessageObservationRevision = *rev
		}
		c := &out.Collaboration
		return tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind = 'guidance'), count(*) FILTER (WHERE kind = 'question'),
			count(*) FILTER (WHERE kind = 'risk'), count(*) FILTER (WHERE kind = 'todo'), count(*) FILTER (WHERE requires_ack)
			FROM workflow.messages WHERE session_id = $1 AND status = 'open'`, id).
			Scan(&c.OpenGuidance, &c.OpenQuestions, &c.OpenRisks, &c.OpenTodos, &c.UnresolvedAckRequired)
	})
	return out, boardErr(err)
}
