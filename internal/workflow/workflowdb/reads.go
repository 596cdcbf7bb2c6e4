package workflowdb

import (
	"context"
	"strings"

	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// Get implements workflow.Store.
func (s *Store) Get(ctx context.Context, id string) (workflow.Session, error) {
	if err := s.waitPending(ctx, id); err != nil {
		return workflow.Session{}, storeErr(err)
	}
	if err := s.check(ctx, id); err != nil {
		return workflow.Session{}, storeErr(err)
	}
	sess, _, err := s.scanHeader(s.db.QueryRow(ctx, sqlHeader, id), id)
	return sess, storeErr(err)
}

// GetCommitted is Get without waiting for this session's behind writes:
// the header as last committed. A behind write only appends a read-only
// call's events (and counts them), so the lifecycle, owner, project and
// mode it returns are exactly Get's; claim checks use it.
func (s *Store) GetCommitted(ctx context.Context, id string) (workflow.Session, error) {
	if err := s.check(ctx, id); err != nil {
		return workflow.Session{}, storeErr(err)
	}
	// A primary-key read is not interrupted mid-way (with a cancellable
	// context the drivers arm two watcher goroutines per query, which
	// costs as much as the read); a cancellation is reported after it.
	// At an idle writer it reads on the writer's connection, whose cache
	// holds the header its last commit wrote.
	rctx := context.WithoutCancel(ctx)
	var sess workflow.Session
	done, err := s.db.Writer.ReadIdle(func() error {
		var err error
		sess, _, err = s.scanHeader(s.stmts.header.QueryRowContext(rctx, id), id)
		return err
	})
	if !done {
		sess, _, err = s.scanHeader(s.db.QueryRow(rctx, sqlHeader, id), id)
	}
	if err == nil {
		err = ctx.Err()
	}
	return sess, storeErr(err)
}

// Remembered returns the header this store last read or wrote for
// session id, decoded and as stored (its JSON), without reading the
// database (see workflow.Service.RememberedClaim); false when it holds
// none. Another process may have changed the row since: an AppendCall
// given the JSON as CallWrite.Claimed then fails with
// workflow.ErrClaimChanged, writing nothing.
func (s *Store) Remembered(id string) (workflow.Session, string, bool) {
	if !s.checks.Known(id) {
		return workflow.Session{}, "", false
	}
	v, ok := s.headers.Load(id)
	if !ok {
		return workflow.Session{}, "", false
	}
	d := v.(*decodedHeader)
	return copySession(d.sess), d.json, true
}

// List implements workflow.Store.
func (s *Store) List(ctx context.Context, f workflow.ListFilter) ([]workflow.Session, int, error) {
	where := []string{"1=1"}
	var args []any
	if f.Project != "" {
		where = append(where, "project = ?")
		args = append(args, f.Project)
	}
	if f.Fingerprint != "" {
		where = append(where, "owner_fp = ?")
		args = append(args, f.Fingerprint)
	}
	if f.Lifecycle != "" {
		where = append(where, "lifecycle = ?")
		args = append(args, string(f.Lifecycle))
	}
	cond := strings.Join(where, " AND ")
	var total int
	if err := s.db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, storeErr(err)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.db.Read.QueryContext(ctx, `SELECT session_id, header_json FROM sessions WHERE `+cond+` ORDER BY updated_at DESC, session_id LIMIT ? OFFSET ?`,
		append(args, limit, max(f.Offset, 0))...)
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
	rows, err := s.db.Read.QueryContext(ctx, `SELECT `+eventColumns+` FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT ?`, id, limit)
	if err != nil {
		return nil, storeErr(err)
	}
	defer rows.Close()
	out, err := workflowrow.ScanTail(rows)
	return out, storeErr(err)
}
