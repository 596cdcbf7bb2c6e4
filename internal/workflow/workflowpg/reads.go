package workflowpg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/pgdb"

	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// Get implements workflow.Store.
func (s *Store) Get(ctx context.Context, id string) (workflow.Session, error) {
	if err := s.waitPending(ctx, id); err != nil {
		return workflow.Session{}, storeErr(err)
	}
	return s.GetCommitted(ctx, id)
}

// GetCommitted is Get without waiting for this session's behind writes:
// the header as last committed (a behind write only appends a read-only
// call's events, so the lifecycle, owner, project and mode are Get's).
func (s *Store) GetCommitted(ctx context.Context, id string) (workflow.Session, error) {
	if err := s.check(ctx, id); err != nil {
		return workflow.Session{}, storeErr(err)
	}
	var hdr string
	err := s.db.Pool.QueryRow(ctx, `SELECT header_json FROM workflow.sessions WHERE session_id = $1`, id).Scan(&hdr)
	if errors.Is(err, pgx.ErrNoRows) {
		return workflow.Session{}, unknown(id)
	}
	if err != nil {
		return workflow.Session{}, storeErr(err)
	}
	sess, err := workflowrow.DecodeHeader([]byte(hdr))
	if err != nil {
		return workflow.Session{}, storeErr(fmt.Errorf("session %s: %v", id, err))
	}
	return sess, nil
}

// List implements workflow.Store.
func (s *Store) List(ctx context.Context, f workflow.ListFilter) ([]workflow.Session, int, error) {
	where := []string{"true"}
	var args []any
	for _, c := range []struct{ col, v string }{{"project", f.Project}, {"owner_fp", f.Fingerprint}, {"lifecycle", string(f.Lifecycle)}} {
		if c.v != "" {
			args = append(args, c.v)
			where = append(where, fmt.Sprintf("%s = $%d", c.col, len(args)))
		}
	}
	cond := strings.Join(where, " AND ")
	var total int
	if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM workflow.sessions WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, storeErr(err)
	}
	q := `SELECT session_id, header_json FROM workflow.sessions WHERE ` + cond + ` ORDER BY updated_at DESC, session_id`
	if f.Limit > 0 {
		args = append(args, f.Limit)
		q += fmt.Sprintf(" LIMIT $%d", len(args))
	}
	args = append(args, max(f.Offset, 0))
	q += fmt.Sprintf(" OFFSET $%d", len(args))
	rows, err := s.db.Pool.Query(ctx, q, args...)
	if err != nil {
		return nil, 0, storeErr(err)
	}
	out, bad, err := workflowrow.ScanListed(rows)
	if err != nil {
		rows.Close()
		return nil, 0, storeErr(err)
	}
	rows.Close()
	for _, id := range bad {
		if err := s.check(ctx, id); err != nil {
			return nil, 0, storeErr(err)
		}
	}
	return out, total, nil
}

// Events implements workflow.Store.
func (s *Store) Events(ctx context.Context, id string, limit int) ([]workflow.Event, error) {
	if limit <= 0 {
		limit = workflow.TailLimit
	}
	if err := s.waitPending(ctx, id); err != nil {
		return nil, storeErr(err)
	}
	if err := s.check(ctx, id); err != nil {
		return nil, storeErr(err)
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT `+workflowrow.EventColumns+` FROM workflow.events WHERE session_id = $1 ORDER BY seq DESC LIMIT $2`, id, limit)
	if err != nil {
		return nil, storeErr(err)
	}
	defer rows.Close()
	out, err := workflowrow.ScanTail(rows)
	return out, storeErr(err)
}

// OpenCalls implements workflow.Store. It first forgets the instances that
// are gone (countUnrecorded: their advisory lock is free; their
// unrecorded reads are counted), then reads the open calls of instances
// with no row: the calls of an instance whose row is there run on a live
// replica (this one included), or on one that lost its connection and
// will stop when it finds its row gone.
func (s *Store) OpenCalls(ctx context.Context, limit int) ([]workflow.OpenCall, error) {
	if limit <= 0 {
		limit = workflow.RecoveryBatch
	}
	n, err := s.countUnrecorded(ctx)
	if err != nil {
		return nil, storeErr(err)
	}
	s.unrecorded.Add(n)
	rows, err := s.db.Pool.Query(ctx, `SELECT o.session_id, s.project, o.call_id, o.invocation_id, o.tool, o.role, o.started_at, o.started_seq
		FROM workflow.open_calls o JOIN workflow.sessions s ON s.session_id = o.session_id
		WHERE NOT EXISTS (SELECT 1 FROM workflow.instances i WHERE i.instance = o.instance)
		ORDER BY o.invocation_id COLLATE "C", o.session_id, o.call_id LIMIT $1`, limit)
	if err != nil {
		return nil, storeErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (workflow.OpenCall, error) {
		var c workflow.OpenCall
		var role string
		var at int64
		err := r.Scan(&c.SessionID, &c.Project, &c.CallID, &c.InvocationID, &c.Tool, &role, &at, &c.StartedSeq)
		c.Role, c.StartedAt = workflow.Role(role), time.Unix(0, at).UTC()
		return c, err
	})
	return out, storeErr(err)
}

// Outbox returns at most limit outbox rows with a sequence above after, in
// sequence order. Rows become visible in sequence order (endBatch), so a
// reader that has taken every row up to n never meets a row below n
// later.
func (s *Store) Outbox(ctx context.Context, after int64, limit int) ([]OutboxRow, error) {
	return ReadOutbox(ctx, s.db, after, limit)
}

// ReadOutbox returns at most limit outbox rows of db's ledger with a
// sequence above after, in order, reading only (an offline command's
// read, beside running replicas).
func ReadOutbox(ctx context.Context, db *pgdb.DB, after int64, limit int) ([]OutboxRow, error) {
	rows, err := db.Pool.Query(ctx, `SELECT seq, body FROM workflow.evidence_outbox WHERE seq > $1 ORDER BY seq LIMIT $2`, after, limit)
	if err != nil {
		return nil, storeErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (OutboxRow, error) {
		var o OutboxRow
		err := r.Scan(&o.Seq, &o.Body)
		return o, err
	})
	return out, storeErr(err)
}

// PendingOutbox counts the outbox rows with a sequence above after: the
// evidence records the journal does not hold yet (workflowdb.PendingOutbox
// for a database every replica shares).
func (s *Store) PendingOutbox(ctx context.Context, after int64) (int64, error) {
	return PendingOutbox(ctx, s.db, after)
}

// PendingOutbox is Store.PendingOutbox on db, reading only.
func PendingOutbox(ctx context.Context, db *pgdb.DB, after int64) (int64, error) {
	var n int64
	err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM workflow.evidence_outbox WHERE seq > $1`, after).Scan(&n)
	return n, storeErr(err)
}
