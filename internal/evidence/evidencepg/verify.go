package evidencepg

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencerow"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
)

// FetchRows is how many rows Verify reads per round trip from each of its
// cursors (records, and tree nodes per level): its memory is O(FetchRows
// × levels) whatever the journal's size.
const FetchRows = 256

// Verify checks the journal in db as evidencedb.Verify checks evidence.db,
// without writing anything: one REPEATABLE READ, READ ONLY transaction (a
// consistent snapshot while replicas keep appending) streams every record
// in index order through server-side cursors, recomputes each leaf from
// the canonical bytes and from the columns, rebuilds the tree, compares
// the stored tree index (nodes and head) with it (FindingBadNode), checks
// every stored checkpoint's signature and root, and, with opts.From, a
// consistency proof from that checkpoint to the head. Without
// opts.TrustedKeys it trusts the journal's listed public keys
// (evidence.public_keys: whoever can write the database can write them;
// keep your own copy of the key). It never migrates: a database without
// the schema is failure.NotFound.
func Verify(ctx context.Context, db *pgdb.DB, opts evidence.VerifyOptions) (evidence.Report, error) {
	tx, err := db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "read the evidence journal")
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('evidence.journal') IS NOT NULL AND to_regclass('evidence.head') IS NOT NULL`).Scan(&exists); err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "read the evidence journal")
	}
	if !exists {
		return evidence.Report{}, failure.New(failure.NotFound, "no evidence journal in %s", pgdb.Redact(db.URL()))
	}
	in := evidence.CheckInput{From: opts.From, Progress: opts.Progress, Duplicates: map[string]bool{}}
	if err := tx.QueryRow(ctx, `SELECT journal_id, origin FROM evidence.journal WHERE id = 1`).Scan(&in.JournalID, &in.Origin); err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "the evidence journal has no identity")
	}
	keys := opts.TrustedKeys
	if len(keys) == 0 {
		if keys, err = publicKeys(ctx, tx); err != nil {
			return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "read the evidence public keys")
		}
	}
	if in.Keys, err = evidence.NewKeySet(keys...); err != nil {
		return evidence.Report{}, failure.Wrap(failure.InvalidArguments, err, "trusted keys")
	}
	var n int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM evidence.records`).Scan(&n); err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "count records")
	}
	in.Rows = uint64(n)
	if err := loadCheckpoints(ctx, tx, &in); err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "read checkpoints")
	}
	// Duplicates are found by the database; the list kept is bounded.
	dups, err := texts(ctx, tx, `SELECT invocation_id FROM evidence.records GROUP BY invocation_id HAVING count(*) > 1 LIMIT $1`, evidence.MaxReportFindings)
	if err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "find duplicates")
	}
	for _, id := range dups {
		in.Duplicates[id] = true
	}
	// A database an older build migrated has no purge log (and nothing purged).
	var logged bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('evidence.purges') IS NOT NULL`).Scan(&logged); err != nil {
		return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "read the purge log")
	}
	if logged {
		if in.PurgeLog, err = purgeLog(ctx, tx); err != nil {
			return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "read the purge log")
		}
	}
	in.Nodes = evidencerow.NewNodeCheck(evidencerow.NodeStore{
		Level: func(level uint) (evidencerow.NodeCursor, error) {
			return openCursor(ctx, tx, fmt.Sprintf("nodes_%d", level), fmt.Sprintf(`SELECT idx, hash FROM evidence.tree_nodes WHERE level = %d ORDER BY idx`, level))
		},
		State: func() (uint64, []byte, bool, error) {
			var size int64
			var blob []byte
			err := tx.QueryRow(ctx, sqlHead).Scan(&size, &blob)
			if errors.Is(err, pgx.ErrNoRows) {
				return 0, nil, false, nil
			}
			return uint64(size), blob, err == nil, err
		},
	})
	c := evidence.NewChecker(in)
	if err := streamRecords(ctx, tx, c); err != nil {
		return evidence.Report{}, err
	}
	rep := c.Finish()
	if opts.OutboxPending != nil {
		var wm int64
		if err := tx.QueryRow(ctx, `SELECT outbox_watermark FROM evidence.head WHERE id = 1`).Scan(&wm); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return evidence.Report{}, failure.Wrap(failure.Unavailable, err, "read the outbox watermark")
		}
		if rep.OutboxPending, err = opts.OutboxPending(ctx, wm); err != nil {
			return evidence.Report{}, err
		}
	}
	return rep, nil
}

// streamRecords feeds every record to c in index order, FetchRows at a
// time: a batch is read whole before c sees it, so that the node cursors
// c's tree drives can fetch on the same connection.
func streamRecords(ctx context.Context, tx pgx.Tx, c *evidence.Checker) error {
	if _, err := tx.Exec(ctx, `DECLARE records NO SCROLL CURSOR FOR SELECT `+evidencerow.Columns+` FROM evidence.records ORDER BY idx`); err != nil {
		return failure.Wrap(failure.Unavailable, err, "read records")
	}
	for {
		if err := ctx.Err(); err != nil {
			return failure.Wrap(failure.Cancelled, err, "verification cancelled")
		}
		rows, err := tx.Query(ctx, fmt.Sprintf(`FETCH %d FROM records`, FetchRows))
		if err != nil {
			return failure.Wrap(failure.Unavailable, err, "read records")
		}
		batch, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
		if err != nil {
			return failure.Wrap(failure.Unavailable, err, "read records")
		}
		for _, v := range batch {
			c.Row(evidencerow.Decode(v))
		}
		if len(batch) < FetchRows {
			return nil
		}
	}
}

// cursor is a server-side cursor read FetchRows at a time
// (evidencerow.NodeCursor over (idx, hash) rows).
type cursor struct {
	ctx  context.Context
	tx   pgx.Tx
	name string
	buf  []node
	done bool
}

type node struct {
	idx  int64
	hash []byte
}

func openCursor(ctx context.Context, tx pgx.Tx, name, query string) (*cursor, error) {
	if _, err := tx.Exec(ctx, `DECLARE `+name+` NO SCROLL CURSOR FOR `+query); err != nil {
		return nil, err
	}
	return &cursor{ctx: ctx, tx: tx, name: name}, nil
}

func (c *cursor) Next() (uint64, []byte, bool, error) {
	if len(c.buf) == 0 && !c.done {
		rows, err := c.tx.Query(c.ctx, fmt.Sprintf(`FETCH %d FROM %s`, FetchRows, c.name))
		if err != nil {
			return 0, nil, false, err
		}
		c.buf, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (node, error) {
			var n node
			err := r.Scan(&n.idx, &n.hash)
			return n, err
		})
		if err != nil {
			return 0, nil, false, err
		}
		c.done = len(c.buf) < FetchRows
	}
	if len(c.buf) == 0 {
		return 0, nil, false, nil
	}
	n := c.buf[0]
	c.buf = c.buf[1:]
	return uint64(n.idx), n.hash, true, nil
}

// Close leaves the cursor to the transaction's end.
func (c *cursor) Close() {}

func loadCheckpoints(ctx context.Context, tx pgx.Tx, in *evidence.CheckInput) error {
	rows, err := tx.Query(ctx, `SELECT size, root, key_id, note FROM evidence.checkpoints ORDER BY size, id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	in.Checkpoints, err = evidencerow.StoredCheckpoints(rows)
	return err
}
