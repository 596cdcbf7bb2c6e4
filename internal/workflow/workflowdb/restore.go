package workflowdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// check validates session id's header and retained events the first time
// this process uses the session, and moves malformed rows to discarded_rows
// before any of them could be served. A session whose header is malformed
// is moved aside whole (its events and open calls with it), so that it
// reads as unknown afterwards. Later calls cost one map lookup.
func (s *Store) check(ctx context.Context, id string) error {
	return s.checks.Check(ctx, id, s.scanSession, s.moveAside)
}

// scanSession reads one session's rows and returns the malformed ones and
// the counts of valid headers (0 or 1) and events. A session with no row
// has nothing to check.
func (s *Store) scanSession(ctx context.Context, id string) (bad []workflowrow.Discard, sessions, events int64, err error) {
	var hdr string
	err = s.db.Read.QueryRowContext(ctx, `SELECT header_json FROM sessions WHERE session_id = ?`, id).Scan(&hdr)
	if errors.Is(err, sql.ErrNoRows) {
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
	rows, err := s.db.Read.QueryContext(ctx, `SELECT `+eventColumns+` FROM events WHERE session_id = ?`, id)
	if err != nil {
		return nil, 0, 0, err
	}
	defer rows.Close()
	evBad, events, err := workflowrow.ScanEvents(rows, id, func(string) bool { return herr != nil })
	return append(bad, evBad...), sessions, events, err
}

// ValidateAll is the full restore pass that Open made before decision
// 0021: it validates every row of the ledger in one scan and moves
// malformed ones aside exactly as the first use of a session does. Open no
// longer calls it; it serves as the baseline of BenchmarkOpenStore and for
// an operator's full check. It reads with the read pool and writes only
// when something must move.
func (s *Store) ValidateAll(ctx context.Context) (RestoreReport, error) {
	start := time.Now()
	var rep RestoreReport
	rows, err := s.db.Read.QueryContext(ctx, `SELECT session_id, header_json FROM sessions`)
	if err != nil {
		return rep, fmt.Errorf("restore sessions: %w", err)
	}
	bad, badSession, valid, err := workflowrow.ScanHeaders(rows)
	rows.Close()
	if err != nil {
		return rep, fmt.Errorf("restore sessions: %w", err)
	}
	rep.Sessions = valid
	rows, err = s.db.Read.QueryContext(ctx, `SELECT session_id, `+eventColumns+` FROM events`)
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
// and returns how many it moved. A row already gone (moved by a concurrent
// check in this or another process) is skipped, so that no row is counted
// twice.
func (s *Store) moveAside(ctx context.Context, bad []workflowrow.Discard) (int64, error) {
	now := s.now().UnixNano()
	var moved int64
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		moved = 0
		touched := map[string]bool{}
		for _, d := range bad {
			var res sql.Result
			var err error
			switch d.Table {
			case "sessions":
				res, err = tx.ExecContext(ctx, `DELETE FROM sessions WHERE session_id = ? AND header_json = ?`, d.Session, d.Body)
			case "events":
				res, err = tx.ExecContext(ctx, `DELETE FROM events WHERE session_id = ? AND seq = ?`, d.Session, d.Seq)
			}
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO discarded_rows (table_name, row_key, reason, body, at) VALUES (?,?,?,?,?)`,
				d.Table, d.Key, d.Reason, d.Body, now); err != nil {
				return err
			}
			moved++
			switch d.Table {
			case "sessions":
				if _, err := tx.ExecContext(ctx, `DELETE FROM open_calls WHERE session_id = ?`, d.Session); err != nil {
					return err
				}
			case "events":
				touched[d.Session] = true
			}
		}
		for id := range touched {
			if _, err := tx.ExecContext(ctx, `UPDATE sessions SET retained = (SELECT COUNT(*) FROM events WHERE session_id = ?) WHERE session_id = ?`, id, id); err != nil {
				return err
			}
		}
		return nil
	})
	return moved, err
}
