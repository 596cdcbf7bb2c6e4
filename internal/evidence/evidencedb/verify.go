package evidencedb

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencerow"
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
	if in.PurgeLog, err = purgeLog(ctx, tx); err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "read the purge log")
	}
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
	vals := make([]any, evidencerow.NumColumns)
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
		c.Row(evidencerow.Decode(vals))
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
	in.Checkpoints, err = evidencerow.StoredCheckpoints(rows)
	return err
}
