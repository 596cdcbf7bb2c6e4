package evidencedb

import (
	"context"
	"database/sql"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencerow"
)

// sqlPurgeable selects the next batch of records whose payload may be
// purged: at or after index ?1, covered by the newest signed checkpoint
// (below ?2: a purged leaf is proven only by a checkpoint), appended
// before the cutoff ?3 and not purged yet (a payload row exists); at most
// ?4.
const sqlPurgeable = `SELECT p.idx FROM record_payloads p JOIN record_leaves l ON l.idx = p.idx
	WHERE p.idx >= ?1 AND p.idx < ?2 AND l.at_ns < ?3 ORDER BY p.idx LIMIT ?4`

// beforePurgeCommit, when set (by tests), runs inside every purge batch's
// transaction after its writes, before the commit.
var beforePurgeCommit func()

// PurgeBefore drops the payload of every record appended before cutoff
// and covered by a signed checkpoint: it deletes the record's
// record_payloads row (the canonical bytes with the salt, and the content
// columns, which read as evidencerow.PurgeSet leaves them), so that later
// appends reuse its pages, and keeps its record_leaves row (index, leaf
// hash, identifiers), so that every checkpoint and proof still verifies
// and `webcodex evidence verify` reports it as purged. It works in
// batches of batch records (0: evidence.PurgeBatch), each one short writer
// transaction that also writes its row in the purge log, so a process
// killed during a batch leaves that batch wholly undone and the next call
// does it. It returns what it purged; an invalid request is
// failure.InvalidArguments and purges nothing; a cancelled ctx stops it
// between batches, with the batches done committed and counted.
func (j *Journal) PurgeBefore(ctx context.Context, policy string, cutoff time.Time, batch int) (evidence.PurgeSummary, error) {
	return evidence.RunPurge(ctx, policy, cutoff, batch, j.purgeStep(policy, cutoff))
}

// PurgeNext is one batch of PurgeBefore, from index from on: at most
// batch records (0: evidence.PurgeBatch) in one writer transaction with
// its purge log row. A caller that bounds its own runs (the retention
// purger) calls it again from one past the summary's Range.Last until it
// purges nothing.
func (j *Journal) PurgeNext(ctx context.Context, policy string, cutoff time.Time, from uint64, batch int) (evidence.PurgeSummary, error) {
	return evidence.RunPurgeBatch(ctx, policy, cutoff, from, batch, j.purgeStep(policy, cutoff))
}

// purgeStep is one purge batch under policy for records before cutoff.
func (j *Journal) purgeStep(policy string, cutoff time.Time) evidence.PurgeStep {
	return func(ctx context.Context, from uint64, batch int) (n int64, first, last uint64, err error) {
		err = j.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
			n = 0
			var covered int64
			if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(size), 0) FROM checkpoints`).Scan(&covered); err != nil {
				return err
			}
			rows, err := tx.QueryContext(ctx, sqlPurgeable, int64(from), covered, cutoff.UnixNano(), batch)
			if err != nil {
				return err
			}
			var ids []int64
			for rows.Next() {
				var i int64
				if err := rows.Scan(&i); err != nil {
					rows.Close()
					return err
				}
				ids = append(ids, i)
			}
			rows.Close()
			if err := rows.Err(); err != nil || len(ids) == 0 {
				return err
			}
			lo, hi := ids[0], ids[len(ids)-1]
			if _, err := tx.ExecContext(ctx, `DELETE FROM record_payloads WHERE idx IN (`+sqlPurgeable+`)`,
				lo, hi+1, cutoff.UnixNano(), len(ids)); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO purges (policy, cutoff_ns, first_idx, last_idx, count, at_ns) VALUES (?,?,?,?,?,?)`,
				policy, cutoff.UnixNano(), lo, hi, len(ids), j.now().UnixNano())
			if err == nil && beforePurgeCommit != nil {
				beforePurgeCommit()
			}
			n, first, last = int64(len(ids)), uint64(lo), uint64(hi)
			return err
		})
		return n, first, last, wrapWrite(err)
	}
}

// PendingPurge counts the records PurgeBefore(cutoff) would purge now:
// appended before cutoff, covered by the newest signed checkpoint, not
// purged yet. It changes nothing.
func (j *Journal) PendingPurge(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := j.db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM record_payloads p JOIN record_leaves l ON l.idx = p.idx
		WHERE p.idx < (SELECT COALESCE(MAX(size), 0) FROM checkpoints) AND l.at_ns < ?1`, cutoff.UnixNano()).Scan(&n)
	return n, err
}

// purgeLog reads the purge log's index ranges, for verification; a
// journal from before the log has none.
func purgeLog(ctx context.Context, tx *sql.Tx) ([]evidence.IndexRange, error) {
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'purges')`).Scan(&exists); err != nil || !exists {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT first_idx, last_idx FROM purges ORDER BY first_idx`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return evidencerow.PurgeRanges(rows)
}
