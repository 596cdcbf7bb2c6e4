package evidencepg

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/transparency-dev/merkle/compact"

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
	rows, err := j.db.Pool.Query(ctx, `SELECT `+evidencerow.EntryColumns+` FROM evidence.records
		WHERE idx IN (`+sqlSession+`) `+tail, append([]any{sessionID}, args...)...)
	if err != nil {
		return nil, wrapRead(err)
	}
	defer rows.Close()
	return evidencerow.Entries(rows)
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
	return evidencerow.Counts(rows)
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
	keys, err := publicKeys(ctx, j.db.Pool)
	if err != nil {
		return evidence.Bundle{}, failure.Wrap(failure.Unavailable, err, "read public keys")
	}
	return evidencerow.Bundle(j.journalID, j.origin, sessionID, cp, entries, j.node(ctx), keys)
}

// node reads stored tree nodes through the pool.
func (j *Journal) node(ctx context.Context) evidencerow.NodeRead {
	return func(id compact.NodeID) ([]byte, bool, error) {
		var h []byte
		var err error
		if id.Level == 0 {
			err = j.db.Pool.QueryRow(ctx, `SELECT leaf_hash FROM evidence.records WHERE idx = $1`, int64(id.Index)).Scan(&h)
		} else {
			err = j.db.Pool.QueryRow(ctx, `SELECT hash FROM evidence.tree_nodes WHERE level = $1 AND idx = $2`, int64(id.Level), int64(id.Index)).Scan(&h)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, false, nil
		}
		return h, err == nil, err
	}
}

// InclusionProof returns the RFC 6962 inclusion proof of the leaf at index
// in the tree of size, read from the stored nodes (O(log n) point reads).
// size must not exceed the journal's size (failure.InvalidArguments).
func (j *Journal) InclusionProof(ctx context.Context, index, size uint64) ([][]byte, error) {
	n, err := j.size(ctx)
	if err != nil {
		return nil, err
	}
	return evidencerow.InclusionProof(index, size, n, j.node(ctx))
}

// ConsistencyProof returns the RFC 6962 consistency proof from size1 to
// size2, read from the stored nodes (O(log n) point reads). size2 must not
// exceed the journal's size (failure.InvalidArguments).
func (j *Journal) ConsistencyProof(ctx context.Context, size1, size2 uint64) ([][]byte, error) {
	n, err := j.size(ctx)
	if err != nil {
		return nil, err
	}
	return evidencerow.ConsistencyProof(size1, size2, n, j.node(ctx))
}

// size is the journal's committed size (the head's next index).
func (j *Journal) size(ctx context.Context) (uint64, error) {
	var n int64
	if err := j.db.Pool.QueryRow(ctx, `SELECT size FROM evidence.head WHERE id = 1`).Scan(&n); err != nil {
		return 0, wrapRead(err)
	}
	return uint64(n), nil
}
