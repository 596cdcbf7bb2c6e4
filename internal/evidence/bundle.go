package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/transparency-dev/merkle/proof"

	"github.com/webcodex/webcodex/internal/failure"
)

// BundleFormat identifies the bundle JSON format.
const BundleFormat = "webcodex-evidence-bundle/1"

// MaxBundleRecords bounds the records of one bundle (oldest first);
// Truncated is set when a session has more.
const MaxBundleRecords = 10000

// MaxBundleBytes bounds the bundle VerifyBundle accepts.
const MaxBundleBytes = 64 << 20

// Bundle is a self-contained proof of one session's records: each record's
// canonical bytes with an RFC 6962 inclusion proof into a signed checkpoint,
// and the public keys to check it. It is verified with no database.
type Bundle struct {
	Format    string `json:"format"`
	JournalID string `json:"journal_id"`
	Origin    string `json:"origin"`
	SessionID string `json:"session_id"`
	// Checkpoint is the signed note every proof leads to.
	Checkpoint string `json:"checkpoint"`
	// PublicKeys are note verifier keys. Compare their ids with keys you
	// trust out of band (see VerifyBundleWith).
	PublicKeys []string       `json:"public_keys"`
	Records    []BundleRecord `json:"records"`
	Truncated  bool           `json:"truncated"`
}

// BundleRecord is one record of a bundle. Record is the decoded form for
// readers; the canonical bytes are what is proven, and VerifyBundle checks
// that Record re-encodes to them. A record whose payload was purged has
// Purged set, no canonical bytes, a Record holding only its invocation id,
// and its stored LeafHash, which the inclusion proof proves instead (both
// fields are omitted otherwise, so a bundle without purged records is
// what it was before purging existed).
type BundleRecord struct {
	Index          uint64   `json:"index"`
	KeyID          string   `json:"key_id"`
	Canonical      []byte   `json:"canonical"`
	Record         Record   `json:"record"`
	InclusionProof [][]byte `json:"inclusion_proof"`
	Purged         bool     `json:"purged,omitempty"`
	LeafHash       []byte   `json:"leaf_hash,omitempty"`
}

// VerifyBundle checks a bundle with the public keys it carries. See
// VerifyBundleWith.
func VerifyBundle(b []byte) (Report, error) { return VerifyBundleWith(b, nil) }

// VerifyBundleWith checks a bundle: the checkpoint's signature (by a key in
// trusted, or in the bundle's own keys when trusted is empty), and for every
// record its schema, canonical bytes, binding to the bundle's journal and
// session, and inclusion proof into the checkpoint. It returns an error only
// when b is not a bundle at all; every other problem is a finding.
func VerifyBundleWith(b []byte, trusted []string) (Report, error) {
	if len(b) > MaxBundleBytes {
		return Report{}, failure.New(failure.RequestTooLarge, "evidence bundle is %d bytes; the limit is %d", len(b), MaxBundleBytes)
	}
	var bun Bundle
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&bun); err != nil {
		return Report{}, failure.Wrap(failure.InvalidArguments, err, "not an evidence bundle")
	}
	if bun.Format != BundleFormat {
		return Report{}, failure.New(failure.InvalidArguments, "bundle format %q; this build reads %q", bun.Format, BundleFormat)
	}
	keys := trusted
	if len(keys) == 0 {
		keys = bun.PublicKeys
	}
	ks, err := NewKeySet(keys...)
	if err != nil {
		return Report{}, failure.Wrap(failure.InvalidArguments, err, "bundle public keys")
	}
	rep := Report{JournalID: bun.JournalID, Origin: bun.Origin, TrustedKeys: ks.IDs(),
		Totals: map[FindingKind]int64{}, Findings: []Finding{}, PurgedRanges: []IndexRange{}}
	cp, keyID, err := OpenCheckpoint([]byte(bun.Checkpoint), ks)
	var root []byte
	switch {
	case err != nil:
		rep.add(Finding{Scope: ScopeCheckpoint, Kind: checkpointErrKind(err), Detail: err.Error()})
	case cp.Origin != bun.Origin:
		rep.add(Finding{Scope: ScopeCheckpoint, Kind: FindingOriginMismatch, Detail: fmt.Sprintf("checkpoint origin %q, bundle origin %q", cp.Origin, bun.Origin)})
	default:
		root = cp.Root
		rep.Head = cp
		rep.Checkpoints = 1
		rep.LastCheckpoint = &CheckpointStatus{Size: cp.Size, Root: cp.Root, KeyID: keyID}
		rep.HeadMatchesCheckpoint = true
	}
	seen := map[string]bool{}
	for _, br := range bun.Records {
		rep.Records++
		if rep.FirstIndex == nil {
			rep.FirstIndex = idx(br.Index)
		}
		rep.LastIndex = idx(br.Index)
		n0 := sumTotals(rep.Totals)
		rec := func(k FindingKind, format string, args ...any) {
			rep.add(Finding{Scope: ScopeRecord, Kind: k, Index: idx(br.Index), InvocationID: br.Record.InvocationID, Detail: fmt.Sprintf(format, args...)})
		}
		leaf := LeafHash(br.Canonical)
		v, err := SchemaOf(br.Canonical)
		switch {
		case br.Purged:
			// Only the leaf hash remains; the inclusion proof below is
			// all that proves it.
			leaf = br.LeafHash
			if len(br.Canonical) != 0 || len(leaf) != Hasher.Size() {
				rec(FindingMalformed, "a purged record has no canonical bytes and a %d-byte leaf hash", Hasher.Size())
			}
		case err != nil:
			rep.Unparseable++
			rec(FindingMalformed, "canonical bytes do not start with %q and a version", Magic)
		case !SupportedSchema(v):
			rec(FindingUnsupportedSchema, "canonical schema version %d; this build reads %d to %d", v, MinSchemaVersion, SchemaVersion)
		default:
			h, r, err := ParseCanonical(br.Canonical)
			if err != nil {
				rep.Unparseable++
				rec(FindingMalformed, "canonical bytes: %v", err)
				break
			}
			switch {
			case h.JournalID != bun.JournalID:
				rec(FindingBadLeaf, "canonical bytes belong to journal %q", h.JournalID)
			case h.Index != br.Index:
				rec(FindingBadLeaf, "canonical bytes name index %d", h.Index)
			case h.KeyID != br.KeyID:
				rec(FindingBadLeaf, "canonical bytes name key %s", h.KeyID)
			}
			br.Record.Salt = r.Salt // never in JSON: taken from the canonical bytes
			if canon, err := br.Record.Canonical(bun.JournalID, br.KeyID, br.Index); err != nil || !bytes.Equal(canon, br.Canonical) {
				rec(FindingBadLeaf, "the decoded record does not re-encode to the canonical bytes")
			}
			if r.Claim.RecordingSessionID != bun.SessionID && r.Claim.BusinessSessionID != bun.SessionID && r.Verified.SessionID != bun.SessionID {
				rec(FindingMalformed, "the record neither claims nor verifies session %s", bun.SessionID)
			}
			if seen[r.InvocationID] {
				rec(FindingDuplicateID, "invocation id %s appears twice", r.InvocationID)
			}
			seen[r.InvocationID] = true
		}
		if !ks.Has(br.KeyID) {
			rec(FindingUnknownKey, "record bound to key %s, which is not trusted", br.KeyID)
		}
		if root != nil {
			if err := proof.VerifyInclusion(Hasher, br.Index, cp.Size, leaf, br.InclusionProof, root); err != nil {
				rec(FindingNotInTree, "inclusion proof into the checkpoint of size %d fails: %v", cp.Size, err)
			}
		} else {
			rec(FindingNotInTree, "no verified checkpoint to prove inclusion against")
		}
		switch {
		case sumTotals(rep.Totals) != n0:
		case br.Purged:
			rep.addPurged(br.Index)
		default:
			rep.OK++
		}
	}
	rep.Clean = len(rep.Totals) == 0
	return rep, nil
}
