package workflowdb

import (
	"context"
	"database/sql"

	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// importBoard stores an imported session's restored board in tx: its
// counters (with the new generation workflow chose) and its messages with
// every tracking column, through the board's own insert statement.
// Attention projection facts are not carried by a ledger and start empty.
func importBoard(ctx context.Context, tx *sql.Tx, id string, b *workflow.RestoredBoard) error {
	if b == nil {
		return nil
	}
	st := b.State
	if _, err := tx.ExecContext(ctx, qSetState, id, st.Generation, st.Posted, st.Retained, st.Removed,
		st.ObservationRevision, st.ObservationLowWatermark); err != nil {
		return err
	}
	for _, m := range b.Messages {
		if _, err := tx.ExecContext(ctx, qInsert, append([]any{id}, workflowrow.MessageArgs(m)...)...); err != nil {
			return err
		}
	}
	return nil
}
