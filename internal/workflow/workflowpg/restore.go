package workflowpg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// check validates session id's header and retained events the first time
// this process uses the session, and moves malformed rows to
// discarded_rows before any of them could be served, as workflowdb's
// check does (the same judgement: workflowrow).
func (s *Store) check(ctx context.Context, id string) error {
	return s.checks.Check(ctx, id, s.scanSession, s.moveAside)
}

// scanSession reads one session's rows and returns the malformed ones and
// the counts of valid headers (0 or 1) and events.
func (s *Store) scanSession(ctx context.Context, id string) (bad []workflowrow.Discard, sessions, events int64, err error) {
	var hdr string
	err = s.db.Pool.QueryRow(ctx, `SELECT header_json FROM workflow.sessions WHERE session_id = $1`, id).Scan(&hdr)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, 0, nil
	}
	if err != nil {
		return nil, 0, 0, err
	}
	herr := workflowrow.CheckHeader(id, hdr)
	if herr != nil {
		bad = append(bad, workflowrow.HeaderDiscard(id, hdr, herr))
	} else {
		sessions = 1
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT `+workflowrow.EventColumns+` FROM workflow.events WHERE session_id = $1`, id)
	if err != nil {
		return nil, 0, 0, err
	}
	defer rows.Close()
	evBad, events, err := workflowrow.ScanEvents(rows, id, func(string) bool { return herr != nil })
	return append(bad, evBad...), sessions, events, err
}

// ValidateAll validates every row of the ledger in one scan and moves
// malformed ones aside exactly as the first use of a session does (an
// operator's full check).
func (s *Store) ValidateAll(ctx context.Context) (RestoreReport, error) {
	start := time.Now()
	var rep RestoreReport
	rows, err := s.db.Pool.Query(ctx, `SELECT session_id, header_json FROM workflow.sessions`)
	if err != nil {
		return rep, fmt.Errorf("restore sessions: %w", err)
	}
	bad, badSession, valid, err := workflowrow.ScanHeaders(rows)
	rows.Close()
	if err != nil {
		return rep, fmt.Errorf("restore sessions: %w", err)
	}
	rep.Sessions = valid
	rows, err = s.db.Pool.Query(ctx, `SELECT session_id, `+workflowrow.EventColumns+` FROM workflow.events`)
	if err != nil {
		return rep, fmt.Errorf("restore events: %w", err)
	}
	evBad, valid, err := workflowrow.ScanEvents(rows, "", func(id string) bool { return badSession[id] })
	rows.Close()
	if err != nil {
		return rep, fmt.Errorf("restore events: %w", err)
	}
	rep.Events = valid
	if bad = append(bad, evBad...); len(bad) > 0 {
		n, err := s.moveAside(ctx, bad)
		if err != nil {
			return rep, err
		}
		rep.Discarded = n
		s.checks.Discarded(n)
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// moveAside moves the malformed rows bad to discarded_rows in one commit
// and returns how many it moved. It first locks the sessions concerned
// (in id order, as any two replicas do), so that an append of another
// replica does not interleave with the recount of retained. A row
// already gone (moved by a concurrent check of this or another replica)
// is skipped, so that no row is counted twice.
func (s *Store) moveAside(ctx context.Context, bad []workflowrow.Discard) (int64, error) {
	now := s.now().UnixNano()
	var ids []string
	for _, d := range bad {
		ids = append(ids, d.Session)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var moved int64
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		moved = 0
		if _, err := tx.Exec(ctx, `SELECT 1 FROM workflow.sessions WHERE session_id = ANY($1) ORDER BY session_id FOR UPDATE`, ids); err != nil {
			return err
		}
		touched := map[string]bool{}
		for _, d := range bad {
			q, args := `DELETE FROM workflow.sessions WHERE session_id = $1 AND header_json = $2`, []any{d.Session, d.Body}
			if d.Table == "events" {
				q, args = `DELETE FROM workflow.events WHERE session_id = $1 AND seq = $2`, []any{d.Session, d.Seq}
			}
			tag, err := tx.Exec(ctx, q, args...)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				continue
			}
			if _, err := tx.Exec(ctx, `INSERT INTO workflow.discarded_rows (table_name, row_key, reason, body, at) VALUES ($1, $2, $3, $4, $5)`,
				d.Table, d.Key, d.Reason, d.Body, now); err != nil {
				return err
			}
			moved++
			if d.Table == "sessions" {
				if _, err := tx.Exec(ctx, `DELETE FROM workflow.open_calls WHERE session_id = $1`, d.Session); err != nil {
					return err
				}
			} else {
				touched[d.Session] = true
			}
		}
		for id := range touched {
			if _, err := tx.Exec(ctx, `UPDATE workflow.sessions SET retained = (SELECT count(*) FROM workflow.events WHERE session_id = $1) WHERE session_id = $1`, id); err != nil {
				return err
			}
		}
		return nil
	})
	return moved, storeErr(err)
}
