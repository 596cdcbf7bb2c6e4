package evidencepg

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/transparency-dev/merkle/compact"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencerow"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
)

const (
	// sqlLockHead is the log's one order: every writer takes it first.
	sqlLockHead = `SELECT size, hashes, outbox_watermark FROM evidence.head WHERE id = 1 FOR UPDATE`
	sqlPutHead  = `UPDATE evidence.head SET size = $1, hashes = $2, outbox_watermark = $3 WHERE id = 1`
	sqlHead     = `SELECT size, hashes FROM evidence.head WHERE id = 1`
	sqlLastCP   = `SELECT size, root, key_id, note, created_at_ns FROM evidence.checkpoints ORDER BY size DESC, id DESC LIMIT 1`
	sqlInsertCP = `INSERT INTO evidence.checkpoints (size, root, key_id, note, created_at_ns) VALUES ($1, $2, $3, $4, $5)`
	sqlPutNode  = `INSERT INTO evidence.tree_nodes (level, idx, hash) VALUES ($1, $2, $3)`
)

// sqlInsert stores a record unless its invocation id is stored already
// (then it inserts nothing and the transaction stays usable).
var sqlInsert = func() string {
	ph := make([]string, evidencerow.NumColumns)
	for i := range ph {
		ph[i] = fmt.Sprintf("$%d", i+1)
	}
	return `INSERT INTO evidence.records (` + evidencerow.Columns + `) VALUES (` + strings.Join(ph, ", ") + `) ON CONFLICT (invocation_id) DO NOTHING`
}()

// head is the locked head row inside a writer's transaction.
type head struct {
	rng       *compact.Range
	watermark int64
}

// lockHead locks the head row FOR UPDATE and returns it: from here to the
// commit no other replica appends, signs or applies the outbox.
func lockHead(ctx context.Context, tx pgx.Tx) (head, error) {
	var size, wm int64
	var blob []byte
	if err := tx.QueryRow(ctx, sqlLockHead).Scan(&size, &blob, &wm); err != nil {
		return head{}, err
	}
	rng, err := evidencerow.Range(uint64(size), blob)
	if err != nil {
		return head{}, failure.Wrap(failure.Internal, err, "evidence head; run `webcodex evidence verify`")
	}
	return head{rng: rng, watermark: wm}, nil
}

// rebuildHead recreates a lost head row (someone deleted it) from every
// leaf, O(n), and says so in the log, as evidencedb rebuilds a lost tree
// state: it rewrites the interior nodes the leaves give (dropping any
// beyond them) and stores the head, with outbox watermark 0 (ApplyOutbox
// then skips the records already journaled). A gap in the indexes is
// failure.Unavailable. Replicas rebuilding at once write the same values;
// the first head stored wins.
func (j *Journal) rebuildHead(ctx context.Context, tx pgx.Tx) error {
	j.log.Warn("evidence: rebuilding the tree index from every leaf", "reason", "the head row is missing")
	cur, err := openCursor(ctx, tx, "leaves", `SELECT idx, leaf_hash FROM evidence.records ORDER BY idx`)
	if err != nil {
		return err
	}
	rng := evidence.RangeFactory.NewEmptyRange(0)
	var putErr error
	visit := func(id compact.NodeID, h []byte) {
		if id.Level > 0 && putErr == nil {
			_, putErr = tx.Exec(ctx, `INSERT INTO evidence.tree_nodes (level, idx, hash) VALUES ($1, $2, $3)
				ON CONFLICT (level, idx) DO UPDATE SET hash = excluded.hash`, int64(id.Level), int64(id.Index), h)
		}
	}
	for {
		i, leaf, ok, err := cur.Next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if i != rng.End() {
			return failure.New(failure.Unavailable, "evidence journal index %d is missing; run `webcodex evidence verify`", rng.End())
		}
		if err := rng.Append(leaf, visit); err != nil {
			return err
		}
		if putErr != nil {
			return putErr
		}
	}
	size := int64(rng.End())
	if _, err := tx.Exec(ctx, `DELETE FROM evidence.tree_nodes WHERE (idx + 1) * (1::bigint << level) > $1`, size); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO evidence.head (id, size, hashes, outbox_watermark) VALUES (1, $1, $2, 0) ON CONFLICT DO NOTHING`,
		size, evidencerow.RangeBlob(rng))
	return err
}

// putHead queues the store of h.
func putHead(p *pgdb.Pipeline, h head) {
	p.Exec(sqlPutHead, int64(h.rng.End()), evidencerow.RangeBlob(h.rng), h.watermark)
}

// Append validates r, assigns the next leaf index from the locked head,
// stores the row (columns, canonical bytes, leaf hash), the interior nodes
// it completes and the new head; when the new size is a multiple of the
// checkpoint interval it also signs a checkpoint, all in one transaction,
// durable when Append returns. A reused invocation id is
// failure.Conflict; an invalid record failure.InvalidArguments; a context
// already done writes nothing (failure.Interrupted: callers recording a
// call whose own context may be cancelled should pass
// context.WithoutCancel); a commit whose answer was lost
// failure.OutcomeUnknown.
func (j *Journal) Append(ctx context.Context, r evidence.Record) (evidence.Entry, error) {
	r = evidence.Salted(r) // schema version 3: the leaf commits to a fresh salt
	canon, err := r.Canonical(j.journalID, j.key.ID, 0)
	if err != nil {
		return evidence.Entry{}, err
	}
	var e evidence.Entry
	err = j.tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		h, err := lockHead(ctx, tx)
		if err != nil {
			return err
		}
		var p pgdb.Pipeline
		if e, err = j.appendLocked(ctx, tx, &p, h.rng, r, canon); err != nil {
			return err
		}
		putHead(&p, h)
		return p.Flush(ctx, tx)
	})
	if err != nil {
		return evidence.Entry{}, wrapWrite(err)
	}
	return e, nil
}

// appendLocked appends r, whose canonical encoding for index 0 is canon,
// inside tx at rng's end and extends rng (the head is locked; the caller
// stores it). The row and the interior nodes it completes are queued in
// p; a checkpoint due at the new size sends them first (it reads the
// newest checkpoint). A record whose invocation id is stored already
// fails p's flush with failure.Conflict.
func (j *Journal) appendLocked(ctx context.Context, tx pgx.Tx, p *pgdb.Pipeline, rng *compact.Range, r evidence.Record, canon []byte) (evidence.Entry, error) {
	index := rng.End()
	canon = evidence.SetCanonicalIndex(canon, index)
	leaf := evidence.LeafHash(canon)
	p.ExecChecked(func(tag pgconn.CommandTag) error {
		if tag.RowsAffected() == 0 {
			return failure.New(failure.Conflict, "evidence record %s already exists", r.InvocationID)
		}
		return nil
	}, sqlInsert, evidencerow.Args(index, j.key.ID, r, canon, leaf)...)
	if err := rng.Append(leaf, func(id compact.NodeID, h []byte) {
		if id.Level > 0 {
			p.Exec(sqlPutNode, int64(id.Level), int64(id.Index), h)
		}
	}); err != nil {
		return evidence.Entry{}, err
	}
	if rng.End()%j.every == 0 {
		if err := p.Flush(ctx, tx); err != nil {
			return evidence.Entry{}, err
		}
		if _, err := j.checkpointLocked(ctx, tx, rng); err != nil {
			return evidence.Entry{}, err
		}
	}
	return evidence.Entry{Index: index, KeyID: j.key.ID, Canonical: canon, LeafHash: leaf, Record: r}, nil
}

// checkpointLocked signs rng's head unless the newest checkpoint already
// has its size and the current key. The head is locked, so two replicas
// never sign one size twice.
func (j *Journal) checkpointLocked(ctx context.Context, tx pgx.Tx, rng *compact.Range) (evidence.SignedCheckpoint, error) {
	size := rng.End()
	last, err := evidencerow.ScanCheckpoint(tx.QueryRow(ctx, sqlLastCP))
	if err == nil && last.Size == size && last.KeyID == j.key.ID {
		return last, nil
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return evidence.SignedCheckpoint{}, err
	}
	root, err := evidence.RootOf(rng)
	if err != nil {
		return evidence.SignedCheckpoint{}, err
	}
	sc, err := evidence.SignCheckpoint(evidence.Checkpoint{Origin: j.origin, Size: size, Root: root}, j.key, j.now())
	if err != nil {
		return evidence.SignedCheckpoint{}, err
	}
	if _, err := tx.Exec(ctx, sqlInsertCP, int64(size), root, sc.KeyID, sc.Note, sc.CreatedAt.UnixNano()); err != nil {
		return evidence.SignedCheckpoint{}, err
	}
	return sc, nil
}

// Checkpoint signs the current head and stores the checkpoint, under the
// head lock. It is idempotent: when the newest checkpoint already has the
// head's size (and the current key), that checkpoint is returned
// unchanged, whichever replica signed it.
func (j *Journal) Checkpoint(ctx context.Context) (evidence.SignedCheckpoint, error) {
	if err := j.flushBeforeRead(ctx); err != nil {
		return evidence.SignedCheckpoint{}, err
	}
	var sc evidence.SignedCheckpoint
	err := j.tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		h, err := lockHead(ctx, tx)
		if err != nil {
			return err
		}
		sc, err = j.checkpointLocked(ctx, tx, h.rng)
		return err
	})
	return sc, wrapWrite(err)
}

// Head returns the journal's current tree head: the size and root of every
// committed record, signed or not (the next checkpoint signs it).
func (j *Journal) Head(ctx context.Context) (evidence.Checkpoint, error) {
	if err := j.flushBeforeRead(ctx); err != nil {
		return evidence.Checkpoint{}, err
	}
	var size int64
	var blob []byte
	if err := j.db.Pool.QueryRow(ctx, sqlHead).Scan(&size, &blob); err != nil {
		return evidence.Checkpoint{}, wrapRead(err)
	}
	rng, err := evidencerow.Range(uint64(size), blob)
	if err != nil {
		return evidence.Checkpoint{}, failure.Wrap(failure.Internal, err, "evidence head; run `webcodex evidence verify`")
	}
	root, err := evidence.RootOf(rng)
	if err != nil {
		return evidence.Checkpoint{}, failure.Wrap(failure.Internal, err, "evidence head")
	}
	return evidence.Checkpoint{Origin: j.origin, Size: rng.End(), Root: root}, nil
}

// Run signs the head every checkpoint interval when it grew, until ctx is
// done; it returns ctx.Err(). Errors go to Options.OnError. Replicas may
// all run it: the head lock makes one of them sign a size, the others
// find it signed.
func (j *Journal) Run(ctx context.Context) error {
	return evidencerow.RunCheckpoints(ctx, j.interval, func(ctx context.Context) error {
		_, err := j.Checkpoint(ctx)
		return err
	}, j.onError)
}

// Latest returns the newest (largest) stored checkpoint, or
// failure.NotFound when none was signed yet.
func (j *Journal) Latest(ctx context.Context) (evidence.SignedCheckpoint, error) {
	sc, err := evidencerow.ScanCheckpoint(j.db.Pool.QueryRow(ctx, sqlLastCP))
	if errors.Is(err, pgx.ErrNoRows) {
		return sc, failure.New(failure.NotFound, "no evidence checkpoint has been signed yet")
	}
	return sc, wrapRead(err)
}

// ApplyOutbox appends the records of items whose sequence is above the
// outbox watermark stored in the head, in order, in one transaction that
// holds the head lock once for the batch and stores the new watermark: a
// replay of the same items (after a crash lost the outbox's trim, or by
// another replica applying the same outbox at the same time) appends
// nothing twice. A record whose invocation already has one is kept as it
// is and skipped; an invalid one is skipped and reported in skipped.
// Every commit is durable, so durable changes nothing.
func (j *Journal) ApplyOutbox(ctx context.Context, items []evidence.OutboxItem, durable bool) (skipped []error, err error) {
	if len(items) == 0 {
		return nil, nil
	}
	var wm int64
	err = j.tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		skipped = skipped[:0]
		h, err := lockHead(ctx, tx)
		if err != nil {
			return err
		}
		stored := h.watermark
		have, err := journaled(ctx, tx, items, h.watermark)
		if err != nil {
			return err
		}
		var p pgdb.Pipeline
		for _, it := range items {
			if it.Seq <= h.watermark {
				continue
			}
			h.watermark = it.Seq
			if have[it.Record.InvocationID] {
				continue // its invocation has a record: kept as it is
			}
			rec := evidence.Salted(it.Record) // schema version 3
			canon, err := rec.Canonical(j.journalID, j.key.ID, 0)
			if err != nil {
				skipped = append(skipped, err)
				continue
			}
			have[it.Record.InvocationID] = true
			if _, err := j.appendLocked(ctx, tx, &p, h.rng, rec, canon); err != nil {
				return err
			}
		}
		wm = h.watermark
		if wm != stored {
			putHead(&p, h)
		}
		return p.Flush(ctx, tx)
	})
	if err != nil {
		return nil, wrapWrite(err)
	}
	j.seeWatermark(wm)
	return skipped, nil
}

// journaled returns the invocation ids of the items above watermark that
// have a record in the journal, reading it once (the head is locked:
// nothing appends meanwhile).
func journaled(ctx context.Context, tx pgx.Tx, items []evidence.OutboxItem, watermark int64) (map[string]bool, error) {
	var ids []string
	for _, it := range items {
		if it.Seq > watermark {
			ids = append(ids, it.Record.InvocationID)
		}
	}
	rows, err := tx.Query(ctx, `SELECT invocation_id FROM evidence.records WHERE invocation_id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(have))
	for _, id := range have {
		out[id] = true
	}
	return out, nil
}

// seeWatermark raises the watermark this replica reports to wm.
func (j *Journal) seeWatermark(wm int64) {
	for {
		cur := j.watermark.Load()
		if wm <= cur || j.watermark.CompareAndSwap(cur, wm) {
			return
		}
	}
}

// Watermarks returns the outbox watermark stored in the journal as this
// replica last saw it (at open, or after its ApplyOutbox), as applied and
// as durable: every commit is durable, so the two are equal.
func (j *Journal) Watermarks() (applied, durable int64) {
	wm := j.watermark.Load()
	return wm, wm
}

// SyncOutbox does nothing: every ApplyOutbox commit is durable already.
func (j *Journal) SyncOutbox(ctx context.Context) error { return nil }

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
