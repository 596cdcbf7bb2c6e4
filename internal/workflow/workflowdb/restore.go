package workflowdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

type discard struct {
	table, key, reason, body string
	session                  string
	seq                      int64
}

// restore validates every row of the ledger, moves malformed ones to
// discarded_rows and corrects each session's retained count. It reads with
// the read pool and writes only when something must move.
func (s *Store) restore(ctx context.Context) error {
	start := time.Now()
	var bad []discard
	badSession := map[string]bool{}
	var rep RestoreReport

	rows, err := s.db.Read.QueryContext(ctx, `SELECT session_id, header_json FROM sessions`)
	if err != nil {
		return fmt.Errorf("restore sessions: %w", err)
	}
	for rows.Next() {
		var id, hdr string
		if err := rows.Scan(&id, &hdr); err != nil {
			rows.Close()
			return fmt.Errorf("restore sessions: %w", err)
		}
		sess, err := decodeHeader([]byte(hdr))
		if err == nil && sess.ID != id {
			err = fmt.Errorf("session_id: header names %s", sess.ID)
		}
		if err != nil {
			bad = append(bad, discard{table: "sessions", key: id, reason: err.Error(), body: hdr, session: id})
			badSession[id] = true
			continue
		}
		rep.Sessions++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("restore sessions: %w", err)
	}

	rows, err = s.db.Read.QueryContext(ctx, `SELECT session_id, `+eventColumns+` FROM events`)
	if err != nil {
		return fmt.Errorf("restore events: %w", err)
	}
	// One set of scan destinations serves every row: building them per row
	// cost as much as validating it.
	var id string
	var r eventRow
	dest := append([]any{&id}, r.dest()...)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return fmt.Errorf("restore events: %w", err)
		}
		if badSession[id] {
			bad = append(bad, discard{table: "events", key: fmt.Sprintf("%s/%d", id, r.seq), reason: "session row discarded", body: rowBody(r), session: id, seq: r.seq})
			continue
		}
		if _, err := r.event(); err != nil {
			bad = append(bad, discard{table: "events", key: fmt.Sprintf("%s/%d", id, r.seq), reason: err.Error(), body: rowBody(r), session: id, seq: r.seq})
			continue
		}
		rep.Events++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("restore events: %w", err)
	}
	if len(bad) > 0 {
		if err := s.moveAside(ctx, bad); err != nil {
			return err
		}
	}
	rep.Discarded = int64(len(bad))
	rep.Duration = time.Since(start)
	s.restored = rep
	return nil
}

func rowBody(r eventRow) string {
	b, _ := json.Marshal(map[string]any{
		"seq": r.seq, "at": r.at, "kind": r.kind, "tool": r.tool, "call_id": r.callID,
		"invocation_id": r.invocationID, "role": r.role, "outcome": r.outcome, "error_kind": r.errorKind,
		"duration_ms": r.durationMS, "text": r.text, "observed_json": r.observed,
		"changed_json": r.changed, "facts_json": r.facts, "validation_json": r.validation,
	})
	return string(b)
}

func (s *Store) moveAside(ctx context.Context, bad []discard) error {
	now := s.now().UnixNano()
	return s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		touched := map[string]bool{}
		for _, d := range bad {
			if _, err := tx.ExecContext(ctx, `INSERT INTO discarded_rows (table_name, row_key, reason, body, at) VALUES (?,?,?,?,?)`,
				d.table, d.key, d.reason, d.body, now); err != nil {
				return err
			}
			switch d.table {
			case "sessions":
				if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE session_id = ?`, d.session); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `DELETE FROM open_calls WHERE session_id = ?`, d.session); err != nil {
					return err
				}
			case "events":
				if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE session_id = ? AND seq = ?`, d.session, d.seq); err != nil {
					return err
				}
				touched[d.session] = true
			}
		}
		for id := range touched {
			if _, err := tx.ExecContext(ctx, `UPDATE sessions SET retained = (SELECT COUNT(*) FROM events WHERE session_id = ?) WHERE session_id = ?`, id, id); err != nil {
				return err
			}
		}
		return nil
	})
}
