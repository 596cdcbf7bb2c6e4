package evidencepg

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencerow"
)

// beforePurgeCommit, when set (by tests), runs inside every purge batch's
// transaction after its writes, before the commit.
var beforePurgeCommit func()

// PurgeBefore drops the payload of every record appended before cutoff
// and covered by a signed checkpoint, as evidencedb's PurgeBefore does: in
// batches of batch records (0: evidence.PurgeBatch), each one short
// transaction with its purge log row, that never locks the head (appends
// go on meanwhile); a replica killed during a batch leaves it wholly
// undone. An invalid request is failure.InvalidArguments and purges
// nothing.
func (j *Journal) PurgeBefore(ctx context.Context, policy string, cutoff time.Time, batch int) (evidence.PurgeSummary, error) {
	return evidence.RunPurge(ctx, policy, cutoff, batch, j.purgeStep(policy, cutoff))
}

// PurgeNext is one batch of PurgeBefore, from index from on, as
// evidencedb's PurgeNext is.
func (j *Journal) PurgeNext(ctx context.Context, policy string, cutoff time.Time, from uint64, batch int) (evidence.PurgeSummary, error) {
	return evidence.RunPurgeBatch(ctx, policy, cutoff, from, batch, j.purgeStep(policy, cutoff))
}

// purgeStep is one purge batch under policy for records before cutoff.
func (j *Journal) purgeStep(policy string, cutoff time.Time) evidence.PurgeStep {
	return func(ctx context.Context, from uint64, batch int) (n int64, first, last uint64, err error) {
		var lo, hi int64
		err = j.tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
			err := tx.QueryRow(ctx, `WITH batch AS (
					SELECT idx FROM evidence.records
					WHERE idx >= $1 AND idx < (SELECT COALESCE(max(size), 0) FROM evidence.checkpoints)
						AND at_ns < $2 AND length(canonical) > 0
					ORDER BY idx LIMIT $3 FOR UPDATE),
				done AS (UPDATE evidence.records SET canonical = ''::bytea, `+evidencerow.PurgeSet+`
					WHERE idx IN (SELECT idx FROM batch) RETURNING idx)
				SELECT count(*), COALESCE(min(idx), 0), COALESCE(max(idx), 0) FROM done`,
				int64(from), cutoff.UnixNano(), batch).Scan(&n, &lo, &hi)
			if err != nil || n == 0 {
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO evidence.purges (policy, cutoff_ns, first_idx, last_idx, count, at_ns) VALUES ($1, $2, $3, $4, $5, $6)`,
				policy, cutoff.UnixNano(), lo, hi, n, j.now().UnixNano())
			if err == nil && beforePurgeCommit != nil {
				beforePurgeCommit()
			}
			return err
		})
		if err != nil {
			return 0, 0, 0, wrapWrite(err)
		}
		return n, uint64(lo), uint64(hi), nil
	}
}

// PendingPurge counts the records PurgeBefore(cutoff) would purge now,
// as evidencedb's PendingPurge does. It changes nothing.
func (j *Journal) PendingPurge(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := j.db.Pool.QueryRow(ctx, `SELECT count(*) FROM evidence.records
		WHERE idx < (SELECT COALESCE(max(size), 0) FROM evidence.checkpoints) AND at_ns < $1 AND length(canonical) > 0`, cutoff.UnixNano()).Scan(&n)
	return n, err
}

// purgeLog reads the purge log's index ranges, for verification.
func purgeLog(ctx context.Context, tx pgx.Tx) ([]evidence.IndexRange, error) {
	rows, err := tx.Query(ctx, `SELECT first_idx, last_idx FROM evidence.purges ORDER BY first_idx`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return evidencerow.PurgeRanges(rows)
}
