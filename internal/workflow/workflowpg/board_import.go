package workflowpg

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// importBoard stores an imported session's restored board in tx, as
// workflowdb's importBoard does: its counters (with the new generation
// workflow chose) and its messages with every tracking column, through the
// board's own statements. Attention projection facts are not carried by a
// ledger and start empty. It is the ledger import's (the Store's) to call,
// in the transaction that creates the session's row.
func importBoard(ctx context.Context, tx pgx.Tx, id string, b *workflow.RestoredBoard) error {
	if b == nil {
		return nil
	}
	st := b.State
	if _, err := tx.Exec(ctx, qSetState, id, st.Generation, st.Posted, st.Retained, st.Removed,
		st.ObservationRevision, st.ObservationLowWatermark); err != nil {
		return err
	}
	for _, m := range b.Messages {
		if _, err := tx.Exec(ctx, qInsert, append([]any{id}, workflowrow.MessageArgs(m)...)...); err != nil {
			return err
		}
	}
	return nil
}
