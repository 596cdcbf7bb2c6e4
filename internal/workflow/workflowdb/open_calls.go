package workflowdb

import (
	"context"
	"database/sql"
	"time"

	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// trackCalls keeps open_calls in step with appended events: a started
// event opens its call and a finished event closes it, unless both are in
// the same append (the call was never open in a durable state).
func (s *Store) trackCalls(ctx context.Context, tx *sql.Tx, id string, evs []workflow.Event) error {
	both := workflowrow.PairedCalls(evs)
	// A transaction's statement lives until it is closed or the
	// transaction ends: bind each at most once per append and close it, so
	// that a long transaction (an import) does not accumulate them.
	var open, closing *sql.Stmt
	defer func() {
		if open != nil {
			open.Close()
		}
		if closing != nil {
			closing.Close()
		}
	}()
	for _, e := range evs {
		if e.CallID == "" || both(e.CallID) {
			continue
		}
		switch e.Kind {
		case workflow.EventToolCallStarted:
			if open == nil {
				open = tx.StmtContext(ctx, s.stmts.openCall)
			}
			if _, err := open.ExecContext(ctx, id, e.CallID, e.InvocationID, e.Tool,
				string(e.Role), e.At.UnixNano(), e.Seq, s.inst.id); err != nil {
				return err
			}
		case workflow.EventToolCallFinished:
			if closing == nil {
				closing = tx.StmtContext(ctx, s.stmts.closeCall)
			}
			if _, err := closing.ExecContext(ctx, id, e.CallID); err != nil {
				return err
			}
		}
	}
	return nil
}

// OpenCalls implements workflow.Store. It reads the open_calls table only,
// and leaves out the calls of processes that still have the ledger open
// (this one included): those calls are running, not cut off.
func (s *Store) OpenCalls(ctx context.Context, limit int) ([]workflow.OpenCall, error) {
	if limit <= 0 {
		limit = workflow.RecoveryBatch
	}
	rows, err := s.db.Read.QueryContext(ctx, `SELECT o.session_id, s.project, o.call_id, o.invocation_id, o.tool, o.role, o.started_at, o.started_seq, o.instance
		FROM open_calls o JOIN sessions s ON s.session_id = o.session_id
		ORDER BY o.invocation_id, o.session_id, o.call_id`)
	if err != nil {
		return nil, storeErr(err)
	}
	defer rows.Close()
	alive := map[string]bool{}
	var out []workflow.OpenCall
	for len(out) < limit && rows.Next() {
		var c workflow.OpenCall
		var role, inst string
		var at int64
		if err := rows.Scan(&c.SessionID, &c.Project, &c.CallID, &c.InvocationID, &c.Tool, &role, &at, &c.StartedSeq, &inst); err != nil {
			return nil, storeErr(err)
		}
		live, ok := alive[inst]
		if !ok {
			live = s.inst.alive(inst)
			alive[inst] = live
		}
		if live {
			continue
		}
		c.Role, c.StartedAt = workflow.Role(role), time.Unix(0, at).UTC()
		out = append(out, c)
	}
	return out, storeErr(rows.Err())
}
