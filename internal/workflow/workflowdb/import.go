package workflowdb

import (
	"context"
	"database/sql"
	"io"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// Import implements workflow.Store.
func (s *Store) Import(ctx context.Context, next func() (workflow.LedgerRow, error)) (int, error) {
	var n int
	var ids []string
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
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
			if err := importBoard(ctx, tx, row.Session.ID, row.Restored); err != nil {
				return err
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
func (s *Store) importRow(ctx context.Context, tx *sql.Tx, sess workflow.Session, events []workflow.Event) error {
	if err := workflowrow.CheckImported(sess, events); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions WHERE session_id = ?`, sess.ID).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return failure.New(failure.Conflict, "session %s already exists (in the store or earlier in this ledger)", sess.ID)
	}
	if err := insertEvents(ctx, tx, sess.ID, events); err != nil {
		return err
	}
	// Calls the ledger shows started and never finished are open here
	// too: recovery at start finishes them as outcome_unknown.
	if err := s.trackCalls(ctx, tx, sess.ID, events); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO sessions (session_id, project, owner_fp, lifecycle, updated_at, retained, header_json) VALUES (?,?,?,?,?,?,?)`,
		sess.ID, sess.Project, sess.OwnerFingerprint, string(sess.Lifecycle), sess.UpdatedAt.UnixNano(), len(events), workflowrow.EncodeHeader(sess))
	return err
}
