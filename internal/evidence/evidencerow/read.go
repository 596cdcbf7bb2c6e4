package evidencerow

import (
	"context"
	"time"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
)

// A NodeRead reads one stored tree node: the record's leaf hash at level
// 0, a stored interior node otherwise; found is false when it is not
// stored.
type NodeRead func(id compact.NodeID) (hash []byte, found bool, err error)

// NodeCache reads proof nodes through read and a cache: the proofs of one
// bundle share most of their upper nodes.
type NodeCache struct {
	read  NodeRead
	cache map[compact.NodeID][]byte
}

// NewNodeCache returns an empty cache over read.
func NewNodeCache(read NodeRead) *NodeCache {
	return &NodeCache{read: read, cache: map[compact.NodeID][]byte{}}
}

// Get returns copies of the nodes ids (evidence.ProofFromNodes rehashes
// its input). A node that is not stored is failure.Internal; a read
// error failure.Unavailable.
func (c *NodeCache) Get(ids []compact.NodeID) ([][]byte, error) {
	hs := make([][]byte, len(ids))
	for i, id := range ids {
		h, ok := c.cache[id]
		if !ok {
			var found bool
			var err error
			if h, found, err = c.read(id); err != nil {
				return nil, failure.Wrap(failure.Unavailable, err, "evidence journal read failed")
			}
			if !found {
				return nil, failure.New(failure.Internal, "evidence tree node (%d,%d) is not stored; run `webcodex evidence verify`", id.Level, id.Index)
			}
			c.cache[id] = h
		}
		hs[i] = append([]byte(nil), h...)
	}
	return hs, nil
}

func checkSize(size, journalSize uint64) error {
	if size > journalSize {
		return failure.New(failure.InvalidArguments, "tree size %d exceeds the journal's %d records", size, journalSize)
	}
	return nil
}

// InclusionProof is the RFC 6962 inclusion proof of the leaf at index in
// the tree of size, read through read (O(log n) nodes) from a journal of
// journalSize records. A size beyond the journal, or an index outside the
// tree, is failure.InvalidArguments.
func InclusionProof(index, size, journalSize uint64, read NodeRead) ([][]byte, error) {
	if err := checkSize(size, journalSize); err != nil {
		return nil, err
	}
	n, err := proof.Inclusion(index, size)
	if err != nil {
		return nil, failure.Wrap(failure.InvalidArguments, err, "inclusion proof")
	}
	return evidence.ProofFromNodes(n, NewNodeCache(read).Get)
}

// ConsistencyProof is the RFC 6962 consistency proof from size1 to size2,
// read through read from a journal of journalSize records. A size2 beyond
// the journal, or sizes out of order, is failure.InvalidArguments.
func ConsistencyProof(size1, size2, journalSize uint64, read NodeRead) ([][]byte, error) {
	if err := checkSize(size2, journalSize); err != nil {
		return nil, err
	}
	n, err := proof.Consistency(size1, size2)
	if err != nil {
		return nil, failure.Wrap(failure.InvalidArguments, err, "consistency proof")
	}
	return evidence.ProofFromNodes(n, NewNodeCache(read).Get)
}

// Entry is a stored session row (index, key id, canonical bytes, leaf
// hash) with its record decoded from the canonical bytes; bytes that do
// not decode are failure.Internal. A row whose payload was purged (no
// canonical bytes) is an entry marked Purged whose Record is kept: the
// identifiers the journal keeps with the leaf (KeptRecord).
func Entry(index int64, keyID string, kept evidence.Record, canonical, leaf []byte) (evidence.Entry, error) {
	e := evidence.Entry{Index: uint64(index), KeyID: keyID, Canonical: canonical, LeafHash: leaf}
	if len(canonical) == 0 {
		e.Canonical, e.Purged, e.Record = []byte{}, true, kept
		return e, nil
	}
	_, r, err := evidence.ParseCanonical(canonical)
	if err != nil {
		return e, failure.Wrap(failure.Internal, err, "evidence record %d is corrupt; run `webcodex evidence verify`", index)
	}
	e.Record = r
	return e, nil
}

// Bundle is the bundle of sessionID's entries (oldest first, at most
// evidence.MaxBundleRecords + 1 of them: more marks it truncated) in the
// checkpoint cp of the journal journalID/origin, each with its inclusion
// proof read through read and checked against cp's root, listing keys.
func Bundle(journalID, origin, sessionID string, cp evidence.SignedCheckpoint, entries []evidence.Entry, read NodeRead, keys []string) (evidence.Bundle, error) {
	if len(entries) == 0 {
		return evidence.Bundle{}, failure.New(failure.NotFound, "no evidence records for session %q", sessionID)
	}
	b := evidence.Bundle{Format: evidence.BundleFormat, JournalID: journalID, Origin: origin, SessionID: sessionID,
		Checkpoint: cp.Note, Records: []evidence.BundleRecord{}, PublicKeys: keys}
	if len(entries) > evidence.MaxBundleRecords {
		entries, b.Truncated = entries[:evidence.MaxBundleRecords], true
	}
	nodes := NewNodeCache(read)
	for _, e := range entries {
		n, err := proof.Inclusion(e.Index, cp.Size)
		if err != nil {
			return evidence.Bundle{}, failure.Wrap(failure.Internal, err, "inclusion proof")
		}
		p, err := evidence.ProofFromNodes(n, nodes.Get)
		if err != nil {
			return evidence.Bundle{}, err
		}
		if err := proof.VerifyInclusion(evidence.Hasher, e.Index, cp.Size, e.LeafHash, p, cp.Root); err != nil {
			return evidence.Bundle{}, failure.New(failure.Internal, "the stored tree nodes do not prove record %d in the signed checkpoint; run `webcodex evidence verify`", e.Index)
		}
		br := evidence.BundleRecord{Index: e.Index, KeyID: e.KeyID, Canonical: e.Canonical, Record: e.Record, InclusionProof: p}
		if e.Purged {
			// Only the invocation id: nothing in a bundle may say more
			// than its leaf proves, and with the salt gone the leaf
			// proves none of the identifiers a purge keeps.
			br.Purged, br.LeafHash, br.Record = true, e.LeafHash, evidence.Record{InvocationID: e.Record.InvocationID}
		}
		b.Records = append(b.Records, br)
	}
	return b, nil
}

// RunCheckpoints calls sign every interval until ctx is done and returns
// ctx.Err(); sign's errors go to onError (nil: dropped).
func RunCheckpoints(ctx context.Context, interval time.Duration, sign func(context.Context) error, onError func(error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if err := sign(ctx); err != nil && onError != nil && ctx.Err() == nil {
				onError(err)
			}
		}
	}
}

// Rows is a result set of either driver (*sql.Rows, pgx.Rows).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// EntryColumns are the columns Entries reads: the entry's, then the
// identifiers a purge keeps (PurgeSet).
const EntryColumns = `idx, key_id, canonical, leaf_hash,
	invocation_id, at_ns, claim_recording_session_id, claim_business_session_id, verified_session_id, session_binding, replay_of`

// Entries reads rows of EntryColumns as entries (Entry). A read error is
// failure.Unavailable.
func Entries(rows Rows) ([]evidence.Entry, error) {
	out := []evidence.Entry{}
	for rows.Next() {
		var i, at int64
		var keyID, binding string
		var canon, leaf []byte
		var k evidence.Record
		if err := rows.Scan(&i, &keyID, &canon, &leaf,
			&k.InvocationID, &at, &k.Claim.RecordingSessionID, &k.Claim.BusinessSessionID, &k.Verified.SessionID, &binding, &k.ReplayOf); err != nil {
			return nil, readErr(err)
		}
		k.At, k.Binding, k.Replayed = time.Unix(0, at).UTC(), evidence.Binding(binding), k.ReplayOf != ""
		e, err := Entry(i, keyID, k, canon, leaf)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, readErr(rows.Err())
}

// Counts reads rows of (session_binding, records, replays) as counts. A
// read error is failure.Unavailable.
func Counts(rows Rows) (evidence.Counts, error) {
	var c evidence.Counts
	for rows.Next() {
		var b string
		var n, replays int64
		if err := rows.Scan(&b, &n, &replays); err != nil {
			return evidence.Counts{}, readErr(err)
		}
		c.Add(evidence.Binding(b), n)
		c.Replays += replays
	}
	return c, readErr(rows.Err())
}

// StoredCheckpoints reads rows of (size, root, key_id, note) as stored
// checkpoints, for verification.
func StoredCheckpoints(rows Rows) ([]evidence.StoredCheckpoint, error) {
	var out []evidence.StoredCheckpoint
	for rows.Next() {
		var sc evidence.StoredCheckpoint
		var size int64
		if err := rows.Scan(&size, &sc.Root, &sc.KeyID, &sc.Note); err != nil {
			return nil, err
		}
		sc.Size = uint64(size)
		out = append(out, sc)
	}
	return out, rows.Err()
}

// ScanCheckpoint scans a row of (size, root, key_id, note, created_at_ns)
// as Checkpoint does; the row's own error (no rows) is returned as is.
func ScanCheckpoint(row interface{ Scan(dest ...any) error }) (evidence.SignedCheckpoint, error) {
	var size, at int64
	var root []byte
	var keyID, note string
	if err := row.Scan(&size, &root, &keyID, &note, &at); err != nil {
		return evidence.SignedCheckpoint{}, err
	}
	return Checkpoint(size, keyID, note, at)
}

func readErr(err error) error {
	if err == nil {
		return nil
	}
	return failure.Wrap(failure.Unavailable, err, "evidence journal read failed")
}

// PurgeRanges reads rows of (first_idx, last_idx) of the purge log,
// ordered by first_idx, merging overlapping and adjacent ranges.
func PurgeRanges(rows Rows) ([]evidence.IndexRange, error) {
	var out []evidence.IndexRange
	for rows.Next() {
		var first, last int64
		if err := rows.Scan(&first, &last); err != nil {
			return nil, err
		}
		r := evidence.IndexRange{First: uint64(first), Last: uint64(last)}
		if n := len(out); n > 0 && r.First <= out[n-1].Last+1 {
			out[n-1].Last = max(out[n-1].Last, r.Last)
			continue
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
