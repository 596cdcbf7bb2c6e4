package evidencedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/sqlitedb"
)

// Verify checks the journal in dataDir offline, without a server and
// without modifying any file: the database is opened read-only
// (mode=ro, query_only; immutable when no WAL file exists, so that no
// -wal or -shm file is created). It streams every row in index order (memory
// O(log n) plus the reported findings and the list of checkpoints):
// recomputes each leaf from the canonical bytes and from the columns,
// rebuilds the tree, checks every stored checkpoint's signature and root,
// and, with opts.From, checks a consistency proof from that earlier
// checkpoint to the head. When the journal has a tree index (tree_nodes and
// tree_state), every stored node and the state row are compared with the
// rebuilt tree (FindingBadNode); the index is never trusted. Findings are in the Report (Clean is false when
// there is any); an error means the journal could not be read at all.
func Verify(ctx context.Context, dataDir string, opts evidence.VerifyOptions) (evidence.Report, error) {
	path := filepath.Join(dataDir, FileName)
	if _, err := os.Stat(path); err != nil {
		return evidence.Report{}, failure.Wrap(failure.NotFound, err, "no evidence journal at %s", path)
	}
	db, err := sqlitedb.OpenReadOnly(path)
	if err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "open %s read-only", path)
	}
	defer db.Close()
	keys, err := evidence.TrustedKeys(dataDir, opts.TrustedKeys)
	if err != nil {
		return evidence.Report{}, failure.Wrap(failure.InvalidArguments, err, "trusted keys")
	}
	// One read transaction: a consistent snapshot even while a server appends.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "read %s", path)
	}
	defer tx.Rollback()
	return verifyTx(ctx, tx, path, keys, opts)
}

// verifyTx runs the checks of Verify inside tx, trusting keys.
func verifyTx(ctx context.Context, tx *sql.Tx, path string, keys *evidence.KeySet, opts evidence.VerifyOptions) (evidence.Report, error) {
	in := evidence.CheckInput{Keys: keys, From: opts.From, Progress: opts.Progress, Duplicates: map[string]bool{}}
	if err := tx.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'journal_id'`).Scan(&in.JournalID); err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "%s has no journal id", path)
	}
	if err := tx.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'origin'`).Scan(&in.Origin); err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "%s has no origin", path)
	}
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM records`).Scan(&n); err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "count records")
	}
	in.Rows = uint64(n)
	if err := loadCheckpoints(ctx, tx, &in); err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "read checkpoints")
	}
	// Duplicates are found by SQLite (a temp b-tree, not Go memory); the
	// list kept is bounded.
	dups, err := tx.QueryContext(ctx, `SELECT invocation_id FROM records GROUP BY invocation_id HAVING COUNT(*) > 1 LIMIT ?`, evidence.MaxReportFindings)
	if err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "find duplicates")
	}
	for dups.Next() {
		var id string
		if err := dups.Scan(&id); err == nil {
			in.Duplicates[id] = true
		}
	}
	dups.Close()
	if in.Nodes, err = newNodeCheck(ctx, tx); err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "read the tree index")
	}

	c := evidence.NewChecker(in)
	// Verify never migrates: a journal no build with replays has opened
	// has no replay_of column, and none of its records is a replay.
	cols := recordColumns
	var replays bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pragma_table_info('records') WHERE name = 'replay_of')`).Scan(&replays); err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "read the records table's columns")
	}
	if !replays {
		cols = recordColumnsV1 + `, '' AS replay_of`
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+cols+` FROM records ORDER BY idx`)
	if err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "read records")
	}
	defer rows.Close()
	vals := make([]any, 29)
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := ctx.Err(); err != nil {
			return evidence.Report{}, failure.Wrap(failure.Cancelled, err, "verification cancelled")
		}
		if err := rows.Scan(ptrs...); err != nil {
			return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "read records")
		}
		c.Row(decodeRow(vals))
	}
	if err := rows.Err(); err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "read records")
	}
	rep := c.Finish()
	if opts.OutboxPending != nil {
		wm, err := readWatermark(ctx, tx)
		if err != nil {
			return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "read the outbox watermark of %s", path)
		}
		if rep.OutboxPending, err = opts.OutboxPending(ctx, wm); err != nil {
			return evidence.Report{}, err
		}
	}
	return rep, nil
}

func loadCheckpoints(ctx context.Context, tx *sql.Tx, in *evidence.CheckInput) error {
	rows, err := tx.QueryContext(ctx, `SELECT size, root, key_id, note FROM checkpoints ORDER BY size, id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var sc evidence.StoredCheckpoint
		var size int64
		if err := rows.Scan(&size, &sc.Root, &sc.KeyID, &sc.Note); err != nil {
			return err
		}
		sc.Size = uint64(size)
		in.Checkpoints = append(in.Checkpoints, sc)
	}
	return rows.Err()
}

// decodeRow converts one scanned row (recordColumns order) without trusting
// its types: any value of the wrong type makes the row's columns
// undecodable (ColumnsErr), never a panic.
func decodeRow(v []any) evidence.StoredRow {
	var row evidence.StoredRow
	var errs []error
	str := func(i int) string {
		switch x := v[i].(type) {
		case string:
			return x
		case []byte:
			return string(x)
		}
		errs = append(errs, fmt.Errorf("column %d is %T, want text", i, v[i]))
		return ""
	}
	num := func(i int) int64 {
		if x, ok := v[i].(int64); ok {
			return x
		}
		errs = append(errs, fmt.Errorf("column %d is %T, want integer", i, v[i]))
		return 0
	}
	blob := func(i int) []byte {
		switch x := v[i].(type) {
		case []byte:
			return append([]byte(nil), x...)
		case string:
			return []byte(x)
		}
		errs = append(errs, fmt.Errorf("column %d is %T, want blob", i, v[i]))
		return nil
	}
	row.Index = uint64(num(0))
	row.InvocationID = str(1)
	row.KeyID = str(2)
	r := &row.Columns
	r.InvocationID = row.InvocationID
	r.At = time.Unix(0, num(3)).UTC()
	r.Tool = str(4)
	r.Source = evidence.Source(str(5))
	r.TransportEra = str(6)
	r.Claim = evidence.Claim{RecordingSessionID: str(7), BusinessSessionID: str(8), Project: str(9), PrincipalKind: str(10), ClientWindow: str(11)}
	r.Verified = evidence.Verified{SessionID: str(12), Project: str(13), Authority: str(14), Lifecycle: str(15)}
	r.Binding = evidence.Binding(str(16))
	r.Reasons = splitList[evidence.Reason](str(17))
	r.CheckedKeys = splitList[evidence.CheckKey](str(18))
	r.SkippedKeys = splitList[evidence.CheckKey](str(19))
	r.SessionRecordDigest = str(20)
	r.Outcome = evidence.Outcome(str(21))
	r.ErrorKind = str(22)
	r.DurationMS = num(23)
	r.ArgumentsDigest = str(24)
	r.ResultDigest = str(25)
	row.Canonical = blob(26)
	row.LeafHash = blob(27)
	r.ReplayOf = str(28)
	r.Replayed = r.ReplayOf != ""
	if len(errs) > 0 {
		row.ColumnsErr = errors.Join(errs...)
	} else if err := r.Validate(); err != nil {
		row.ColumnsErr = err
	}
	return row
}
