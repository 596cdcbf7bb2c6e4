package workflowpg

import (
	"context"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// Import implements workflow.Store. next cannot be read twice, so a
// transaction PostgreSQL aborts for a retry (a deadlock) is not run again:
// the import fails with failure.Unavailable, nothing written.
func (s *Store) Import(ctx context.Context, next func() (workflow.LedgerRow, error)) (int, error) {
	var n int
	var ids []string
	attempts := 0
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if attempts++; attempts > 1 {
			return failure.New(failure.Unavailable, "the import met a conflicting transaction and was rolled back; nothing was written, run it again")
		}
		n, ids = 0, ids[:0]
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			row, err := next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if err := s.importRow(ctx, tx, row.Session, row.Events); err != nil {
				return err
			}
			if row.Restored != nil {
				if err := importBoard(ctx, tx, row.Session.ID, row.Restored); err != nil {
					return err
				}
			}
			ids = append(ids, row.Session.ID)
			n++
		}
	})
	if err != nil {
		return 0, storeErr(err)
	}
	for _, id := range ids {
		s.checks.Mark(id) // validated by importRow
	}
	return n, nil
}

// importRow checks one imported session again and inserts it in tx.
func (s *Store) importRow(ctx context.Context, tx pgx.Tx, sess workflow.Session, events []workflow.Event) error {
	if err := workflowrow.CheckImported(sess, events); err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, `INSERT INTO workflow.sessions (session_id, project, owner_fp, lifecycle, updated_at, retained, header_json)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (session_id) DO NOTHING`,
		sess.ID, sess.Project, sess.OwnerFingerprint, string(sess.Lifecycle), sess.UpdatedAt.UnixNano(), len(events), workflowrow.EncodeHeader(sess))
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return failure.New(failure.Conflict, "session %s already exists (in the store or earlier in this ledger)", sess.ID)
	}
	p := &pgdb.Pipeline{}
	insertEvents(p, sess.ID, events)
	// Calls the ledger shows started and never finished are open here
	// too: recovery at start finishes them as outcome_unknown.
	s.trackCalls(p, sess.ID, events)
	return p.Flush(ctx, tx)
}
