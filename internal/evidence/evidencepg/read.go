package evidencepg

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencerow"
	"github.com/webcodex/webcodex/internal/failure"
)

// sqlSession selects the idx of every record whose claimed or verified
// session is $1.
const sqlSession = `SELECT idx FROM evidence.records WHERE claim_recording_session_id = $1
		UNION SELECT idx FROM evidence.records WHERE claim_business_session_id = $1
		UNION SELECT idx FROM evidence.records WHERE verified_session_id = $1`

// SessionRecords returns up to limit records whose claimed (recording or
// business) or verified session is sessionID, newest first, decoded from
// their canonical bytes. limit follows evidencerow.ClampLimit.
func (j *Journal) SessionRecords(ctx context.Context, sessionID string, limit int) ([]evidence.Entry, error) {
	limit, err := evidencerow.ClampLimit(limit)
	if err != nil {
		return nil, err
	}
	if err := evidencerow.CheckSessionID(sessionID); err != nil {
		return nil, err
	}
	if err := j.flushBeforeRead(ctx); err != nil {
		return nil, err
	}
	return j.sessionEntries(ctx, sessionID, `ORDER BY idx DESC LIMIT $2`, limit)
}

func (j *Journal) sessionEntries(ctx context.Context, sessionID, tail string, args ...any) ([]evidence.Entry, error) {
	rows, err := j.db.Pool.Query(ctx, `SELECT idx, key_id, canonical, leaf_hash FROM evidence.records
		WHERE idx IN (`+sqlSession+`) `+tail, append([]any{sessionID}, args...)...)
	if err != nil {
		return nil, wrapRead(err)
	}
	defer rows.Close()
	out := []evidence.Entry{}
	for rows.Next() {
		var e evidence.Entry
		var i int64
		if err := rows.Scan(&i, &e.KeyID, &e.Canonical, &e.LeafHash); err != nil {
			return nil, wrapRead(err)
		}
		e.Index = uint64(i)
		_, r, err := evidence.ParseCanonical(e.Canonical)
		if err != nil {
			return nil, failure.Wrap(failure.Internal, err, "evidence record %d is corrupt; run `webcodex evidence verify`", i)
		}
		e.Record = r
		out = append(out, e)
	}
	return out, wrapRead(rows.Err())
}

// SessionCounts counts the records of sessionID (claimed or verified) per
// binding state, and the replays among them.
func (j *Journal) SessionCounts(ctx context.Context, sessionID string) (evidence.Counts, error) {
	if err := evidencerow.CheckSessionID(sessionID); err != nil {
		return evidence.Counts{}, err
	}
	if err := j.flushBeforeRead(ctx); err != nil {
		return evidence.Counts{}, err
	}
	rows, err := j.db.Pool.Query(ctx, `SELECT session_binding, count(*), count(*) FILTER (WHERE replay_of <> '') FROM evidence.records
		WHERE idx IN (`+sqlSession+`) GROUP BY session_binding`, sessionID)
	if err != nil {
		return evidence.Counts{}, wrapRead(err)
	}
	defer rows.Close()
	var c evidence.Counts
	for rows.Next() {
		var b string
		var n, replays int64
		if err := rows.Scan(&b, &n, &replays); err != nil {
			return evidence.Counts{}, wrapRead(err)
		}
		c.Add(evidence.Binding(b), n)
		c.Replays += replays
	}
	return c, wrapRead(rows.Err())
}

// ExportBundle signs the head (idempotently) and returns a self-contained
// bundle of sessionID's records (oldest first, at most
// evidence.MaxBundleRecords) with inclusion proofs into that checkpoint,
// each read from the stored tree nodes and checked against the
// checkpoint's root before it is returned, and the journal's public keys.
// A session with no records is failure.NotFound.
func (j *Journal) ExportBundle(ctx context.Context, sessionID string) (evidence.Bundle, error) {
	if err := evidencerow.CheckSessionID(sessionID); err != nil {
		return evidence.Bundle{}, err
	}
	cp, err := j.Checkpoint(ctx)
	if err != nil {
		return evidence.Bundle{}, err
	}
	entries, err := j.sessionEntries(ctx, sessionID, `AND idx < $2 ORDER BY idx LIMIT $3`, int64(cp.Size), evidence.MaxBundleRecords+1)
	if err != nil {
		return evidence.Bundle{}, err
	}
	if len(entries) == 0 {
		return evidence.Bundle{}, failure.New(failure.NotFound, "no evidence records for session %q", sessionID)
	}
	b := evidence.Bundle{Format: evidence.BundleFormat, JournalID: j.journalID, Origin: j.origin, SessionID: sessionID,
		Checkpoint: cp.Note, Records: []evidence.BundleRecord{}}
	if len(entries) > evidence.MaxBundleRecords {
		entries, b.Truncated = entries[:evidence.MaxBundleRecords], true
	}
	nodes := &nodeReader{ctx: ctx, q: j.db.Pool, cache: map[compact.NodeID][]byte{}}
	for _, e := range entries {
		n, err := proof.Inclusion(e.Index, cp.Size)
		if err != nil {
			return evidence.Bundle{}, failure.Wrap(failure.Internal, err, "inclusion proof")
		}
		p, err := evidence.ProofFromNodes(n, nodes.get)
		if err != nil {
			return evidence.Bundle{}, err
		}
		if err := proof.VerifyInclusion(evidence.Hasher, e.Index, cp.Size, e.LeafHash, p, cp.Root); err != nil {
			return evidence.Bundle{}, failure.New(failure.Internal, "the stored tree nodes do not prove record %d in the signed checkpoint; run `webcodex evidence verify`", e.Index)
		}
		b.Records = append(b.Records, evidence.BundleRecord{Index: e.Index, KeyID: e.KeyID, Canonical: e.Canonical, Record: e.Record, InclusionProof: p})
	}
	if b.PublicKeys, err = publicKeys(ctx, j.db.Pool); err != nil {
		return evidence.Bundle{}, failure.Wrap(failure.Unavailable, err, "read public keys")
	}
	return b, nil
}

// nodeReader reads proof nodes (a leaf hash at level 0, an interior node
// otherwise) through a small cache: the proofs of one bundle share most
// of their upper nodes.
type nodeReader struct {
	ctx   context.Context
	q     querier
	cache map[compact.NodeID][]byte
}

func (r *nodeReader) get(ids []compact.NodeID) ([][]byte, error) {
	hs := make([][]byte, len(ids))
	for i, id := range ids {
		h, ok := r.cache[id]
		if !ok {
			var err error
			if id.Level == 0 {
				err = r.q.QueryRow(r.ctx, `SELECT leaf_hash FROM evidence.records WHERE idx = $1`, int64(id.Index)).Scan(&h)
			} else {
				err = r.q.QueryRow(r.ctx, `SELECT hash FROM evidence.tree_nodes WHERE level = $1 AND idx = $2`, int64(id.Level), int64(id.Index)).Scan(&h)
			}
			if errors.Is(err, pgx.ErrNoRows) {
				return nil, failure.New(failure.Internal, "evidence tree node (%d,%d) is not stored; run `webcodex evidence verify`", id.Level, id.Index)
			}
			if err != nil {
				return nil, wrapRead(err)
			}
			r.cache[id] = h
		}
		hs[i] = append([]byte(nil), h...) // Rehash rewrites its input
	}
	return hs, nil
}

// InclusionProof returns the RFC 6962 inclusion proof of the leaf at index
// in the tree of size, read from the stored nodes (O(log n) point reads).
// size must not exceed the journal's size (failure.InvalidArguments).
func (j *Journal) InclusionProof(ctx context.Context, index, size uint64) ([][]byte, error) {
	if err := j.checkSize(ctx, size); err != nil {
		return nil, err
	}
	n, err := proof.Inclusion(index, size)
	if err != nil {
		return nil, failure.Wrap(failure.InvalidArguments, err, "inclusion proof")
	}
	r := &nodeReader{ctx: ctx, q: j.db.Pool, cache: map[compact.NodeID][]byte{}}
	return evidence.ProofFromNodes(n, r.get)
}

// ConsistencyProof returns the RFC 6962 consistency proof from size1 to
// size2, read from the stored nodes (O(log n) point reads). size2 must not
// exceed the journal's size (failure.InvalidArguments).
func (j *Journal) ConsistencyProof(ctx context.Context, size1, size2 uint64) ([][]byte, error) {
	if err := j.checkSize(ctx, size2); err != nil {
		return nil, err
	}
	n, err := proof.Consistency(size1, size2)
	if err != nil {
		return nil, failure.Wrap(failure.InvalidArguments, err, "consistency proof")
	}
	r := &nodeReader{ctx: ctx, q: j.db.Pool, cache: map[compact.NodeID][]byte{}}
	return evidence.ProofFromNodes(n, r.get)
}

func (j *Journal) checkSize(ctx context.Context, size uint64) error {
	var next int64
	if err := j.db.Pool.QueryRow(ctx, `SELECT size FROM evidence.head WHERE id = 1`).Scan(&next); err != nil {
		return wrapRead(err)
	}
	if size > uint64(next) {
		return failure.New(failure.InvalidArguments, "tree size %d exceeds the journal's %d records", size, next)
	}
	return nil
}
