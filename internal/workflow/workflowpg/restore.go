package workflowpg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/workflow/ledgerrow"
)

// check validates session id's header and retained events the first time
// this process uses the session, and moves malformed rows to
// discarded_rows before any of them could be served, as workflowdb's check
// does (the same judgement: ledgerrow). Later calls cost one map lookup.
func (s *Store) check(ctx context.Context, id string) error {
	if _, ok := s.checked.Load(id); ok {
		return nil
	}
	start := time.Now()
	bad, sessions, events, err := s.scanSession(ctx, id)
	if err != nil {
		return err
	}
	if sessions == 0 && len(bad) == 0 {
		return nil // no such session: nothing to check, nothing to remember
	}
	var moved int64
	if len(bad) > 0 {
		if moved, err = s.moveAside(ctx, bad); err != nil {
			return err
		}
	}
	s.checked.Store(id, struct{}{})
	s.report.sessions.Add(sessions)
	s.report.events.Add(events)
	s.report.discarded.Add(moved)
	s.report.nanos.Add(int64(time.Since(start)))
	return nil
}

// scanSession reads one session's rows and returns the malformed ones and
// the counts of valid headers (0 or 1) and events.
func (s *Store) scanSession(ctx context.Context, id string) (bad []ledgerrow.Discard, sessions, events int64, err error) {
	var hdr string
	err = s.db.Pool.QueryRow(ctx, `SELECT header_json FROM workflow.sessions WHERE session_id = $1`, id).Scan(&hdr)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, 0, nil
	}
	if err != nil {
		return nil, 0, 0, fmt.Errorf("check session %s: %w", id, err)
	}
	headerBad := false
	if herr := ledgerrow.CheckHeader(id, hdr); herr != nil {
		bad = append(bad, ledgerrow.HeaderDiscard(id, hdr, herr))
		headerBad = true
	} else {
		sessions = 1
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT `+ledgerrow.EventColumns+` FROM workflow.events WHERE session_id = $1`, id)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("check events of %s: %w", id, err)
	}
	defer rows.Close()
	var r ledgerrow.EventRow
	dest := r.Dest()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, 0, 0, fmt.Errorf("check events of %s: %w", id, err)
		}
		if d, ok := ledgerrow.CheckEvent(id, &r, headerBad); !ok {
			bad = append(bad, d)
			continue
		}
		events++
	}
	if err := rows.Err(); err != nil {
		return nil, 0, 0, fmt.Errorf("check events of %s: %w", id, err)
	}
	return bad, sessions, events, nil
}

// ValidateAll validates every row of the ledger in one scan and moves
// malformed ones aside exactly as the first use of a session does (an
// operator's full check).
func (s *Store) ValidateAll(ctx context.Context) (RestoreReport, error) {
	start := time.Now()
	var bad []ledgerrow.Discard
	badSession := map[string]bool{}
	var rep RestoreReport
	rows, err := s.db.Pool.Query(ctx, `SELECT session_id, header_json FROM workflow.sessions`)
	if err != nil {
		return rep, fmt.Errorf("restore sessions: %w", err)
	}
	for rows.Next() {
		var id, hdr string
		if err := rows.Scan(&id, &hdr); err != nil {
			rows.Close()
			return rep, fmt.Errorf("restore sessions: %w", err)
		}
		if err := ledgerrow.CheckHeader(id, hdr); err != nil {
			bad = append(bad, ledgerrow.HeaderDiscard(id, hdr, err))
			badSession[id] = true
			continue
		}
		rep.Sessions++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return rep, fmt.Errorf("restore sessions: %w", err)
	}
	rows, err = s.db.Pool.Query(ctx, `SELECT session_id, `+ledgerrow.EventColumns+` FROM workflow.events`)
	if err != nil {
		return rep, fmt.Errorf("restore events: %w", err)
	}
	var id string
	var r ledgerrow.EventRow
	dest := append([]any{&id}, r.Dest()...)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return rep, fmt.Errorf("restore events: %w", err)
		}
		if d, ok := ledgerrow.CheckEvent(id, &r, badSession[id]); !ok {
			bad = append(bad, d)
			continue
		}
		rep.Events++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return rep, fmt.Errorf("restore events: %w", err)
	}
	if len(bad) > 0 {
		n, err := s.moveAside(ctx, bad)
		if err != nil {
			return rep, err
		}
		rep.Discarded = n
		s.report.discarded.Add(n)
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
func (s *Store) moveAside(ctx context.Context, bad []ledgerrow.Discard) (int64, error) {
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
