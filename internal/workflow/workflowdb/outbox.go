package workflowdb

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/sqlitedb"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// OutboxRow is one evidence outbox row (shared with the PostgreSQL
// store).
type OutboxRow = workflowrow.OutboxRow

// Outbox returns at most limit outbox rows with a sequence above after, in
// sequence order. Rows are committed in sequence order (one writer per
// database, across processes too), so a reader that has taken every row
// up to n never meets a row below n later.
func (s *Store) Outbox(ctx context.Context, after int64, limit int) ([]OutboxRow, error) {
	out, err := outboxRows(ctx, s.db.Read, after, limit)
	return out, storeErr(err)
}

func outboxRows(ctx context.Context, db *sql.DB, after int64, limit int) ([]OutboxRow, error) {
	rows, err := db.QueryContext(ctx, `SELECT seq, body FROM evidence_outbox WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []OutboxRow
	for rows.Next() {
		var r OutboxRow
		if err := rows.Scan(&r.Seq, &r.Body); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// TrimOutbox deletes the outbox rows up to seq, behind the caller and
// without a commit of its own (the next batch carries it; losing it only
// leaves rows the journal skips). It never deletes the newest row: seq is
// the table's rowid without AUTOINCREMENT (migration 0007), so a new row
// takes the largest seq present plus one, and the row kept is what stops
// a seq from ever being given out twice.
func (s *Store) TrimOutbox(ctx context.Context, upTo int64) error {
	_, err := s.db.Writer.Go(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM evidence_outbox WHERE seq <= ? AND seq < (SELECT MAX(seq) FROM evidence_outbox)`, upTo)
		return err
	}, nil)
	return storeErr(err)
}

// countUnrecorded sums, over the processes that had the ledger open and
// are gone, the read-only calls each acknowledged (its lock file) beyond
// the last it committed (read_marks), and removes their marks.
func (s *Store) countUnrecorded(ctx context.Context) (int64, error) {
	rows, err := s.db.Read.QueryContext(ctx, `SELECT instance, seq FROM read_marks`)
	if err != nil {
		return 0, err
	}
	marks := map[string]int64{}
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return 0, err
		}
		marks[id] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	des, _ := os.ReadDir(s.inst.dir)
	var total int64
	var gone []string
	for _, de := range des {
		id, ok := strings.CutSuffix(de.Name(), ".lock")
		if !ok || id == s.inst.id {
			continue
		}
		acked := acknowledgedBy(s.inst.dir, id)
		if acked == 0 || s.inst.alive(id) { // alive removes a dead one's file
			continue
		}
		if n := acked - marks[id]; n > 0 {
			total += n
		}
		gone = append(gone, id)
	}
	for id := range marks {
		if id != s.inst.id && !s.inst.alive(id) {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return total, nil
	}
	return total, s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, id := range gone {
			if _, err := tx.ExecContext(ctx, `DELETE FROM read_marks WHERE instance = ?`, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// PendingOutbox counts, without writing anything (sqlitedb.OpenReadOnly),
// the outbox rows with a sequence above after in the ledger at path: the
// evidence records an offline reader of the journal (`webcodex evidence
// verify`) does not find in it yet. A data directory without a ledger has
// none.
func PendingOutbox(ctx context.Context, path string, after int64) (int64, error) {
	var n int64
	err := readOnly(path, func(db *sql.DB) error {
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM evidence_outbox WHERE seq > ?`, after).Scan(&n); err != nil {
			return failure.Wrap(failure.Unavailable, err, "count the evidence outbox of %s", path)
		}
		return nil
	})
	return n, err
}

// ReadOutbox hands fn, in sequence order and in batches of at most limit,
// the outbox rows with a sequence above after in the ledger at path,
// without writing anything (sqlitedb.OpenReadOnly): how an offline
// command takes the evidence records a server has not journaled yet. fn's
// error ends the reading and is returned. A data directory without a
// ledger has none.
func ReadOutbox(ctx context.Context, path string, after int64, limit int, fn func([]OutboxRow) error) error {
	return readOnly(path, func(db *sql.DB) error {
		for {
			rows, err := outboxRows(ctx, db, after, limit)
			if err != nil {
				return failure.Wrap(failure.Unavailable, err, "read the evidence outbox of %s", path)
			}
			if len(rows) == 0 {
				return nil
			}
			if err := fn(rows); err != nil {
				return err
			}
			after = rows[len(rows)-1].Seq
		}
	})
}

// readOnly runs fn on the ledger at path opened read-only; a path where no
// ledger exists runs nothing.
func readOnly(path string, fn func(*sql.DB) error) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	db, err := sqlitedb.OpenReadOnly(path)
	if err != nil {
		return failure.Wrap(failure.Unavailable, err, "open %s read-only", path)
	}
	defer db.Close()
	return fn(db)
}
