package evidencedb

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
)

// OutboxItem is one record taken from the workflow ledger's evidence
// outbox, with the outbox sequence it was stored under.
type OutboxItem = evidence.OutboxItem

// watermarks are the outbox sequences the journal has applied: applied
// (committed) and durable (committed with an fsync of evidence.db's WAL, or
// before one). Rows up to durable may be deleted from the outbox.
type watermarks struct {
	applied, durable atomic.Int64
}

// readWatermark is the outbox sequence stored with the journal's records
// (0 when none was applied yet), read inside tx (a writer transaction
// with j.mu held, or Verify's read-only snapshot).
func readWatermark(ctx context.Context, tx *sql.Tx) (int64, error) {
	var v string
	err := tx.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'outbox_watermark'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// ApplyOutbox appends the records of items whose sequence is above the
// outbox watermark stored in the journal, in order, in one transaction that
// also stores the new watermark: a replay of the same items (after a crash
// lost the outbox's trim, or by another process sharing the data directory)
// appends nothing twice. A record whose invocation already has one (the
// recovery of a call cut off by a crash wrote it) is kept as it is and
// skipped; an invalid one is skipped and reported in skipped. When durable
// is false the transaction commits without an fsync (the outbox still holds
// the records durably); otherwise it is durable when ApplyOutbox returns.
func (j *Journal) ApplyOutbox(ctx context.Context, items []OutboxItem, durable bool) (skipped []error, err error) {
	if len(items) == 0 {
		return nil, nil
	}
	var wm int64
	fn := func(ctx context.Context, tx *sql.Tx) error {
		j.mu.Lock()
		defer j.mu.Unlock()
		skipped = skipped[:0]
		if err := j.sync(ctx, tx); err != nil {
			return err
		}
		stored, err := readWatermark(ctx, tx)
		if err != nil {
			return err
		}
		wm = stored
		for _, it := range items {
			if it.Seq <= wm {
				continue
			}
			wm = it.Seq
			rec := evidence.Salted(it.Record) // schema version 3
			canon, err := rec.Canonical(j.journalID, j.key.ID, 0)
			if err != nil {
				skipped = append(skipped, err)
				continue
			}
			if _, err := j.appendLocked(ctx, tx, rec, canon); err != nil {
				if failure.Is(err, failure.Conflict) {
					continue
				}
				return err
			}
		}
		if wm == stored {
			return nil
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES ('outbox_watermark', ?1) ON CONFLICT (k) DO UPDATE SET v = ?1`, strconv.FormatInt(wm, 10))
		return err
	}
	if durable {
		err = j.db.Writer.Do(ctx, fn)
	} else {
		err = j.db.Writer.DoLazy(ctx, fn)
	}
	if err != nil {
		return nil, wrapWrite(err)
	}
	j.marks.applied.Store(wm)
	if durable {
		j.marks.durable.Store(wm)
	}
	return skipped, nil
}

// Watermarks returns the outbox sequences applied so far and applied
// durably (see ApplyOutbox). At open both are the stored watermark.
func (j *Journal) Watermarks() (applied, durable int64) {
	return j.marks.applied.Load(), j.marks.durable.Load()
}

// SetBeforeRead installs fn, run before the journal answers a reader of
// its records (SessionRecords, SessionCounts, Checkpoint, Head,
// ExportBundle), so that records still on their way (the workflow
// ledger's outbox) are applied first. Set it before the journal is shared.
func (j *Journal) SetBeforeRead(fn func(context.Context) error) { j.beforeRead = fn }

func (j *Journal) flushBeforeRead(ctx context.Context) error {
	if j.beforeRead == nil {
		return nil
	}
	return j.beforeRead(ctx)
}

// loadWatermark sets both watermarks from the stored one, at open.
func (j *Journal) loadWatermark(ctx context.Context) error {
	return j.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		wm, err := readWatermark(ctx, tx)
		if err != nil {
			return err
		}
		j.marks.applied.Store(wm)
		j.marks.durable.Store(wm)
		return nil
	})
}

// durableUpTo records that the outbox sequence applied (read before a
// durable commit was queued) is now durable: that commit's fsync covered
// every earlier commit of the WAL.
func (j *Journal) durableUpTo(applied int64) {
	for {
		cur := j.marks.durable.Load()
		if applied <= cur || j.marks.durable.CompareAndSwap(cur, applied) {
			return
		}
	}
}

// SyncOutbox makes the applied outbox watermark durable: one durable
// commit (it rewrites the stored watermark), whose fsync of the WAL covers
// every lazily committed append before it. It does nothing when the
// durable watermark is already the applied one.
func (j *Journal) SyncOutbox(ctx context.Context) error {
	applied, durable := j.Watermarks()
	if applied == durable {
		return nil
	}
	err := j.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES ('outbox_watermark', ?1) ON CONFLICT (k) DO UPDATE SET v = ?1`, strconv.FormatInt(applied, 10))
		return err
	})
	if err != nil {
		return wrapWrite(err)
	}
	j.durableUpTo(applied)
	return nil
}
