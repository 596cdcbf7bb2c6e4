package evidence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
)

// FindingKind is a stable verification finding identifier.
type FindingKind string

// Per-record findings (scope "record"). A record with none is "ok" (counted
// in Report.OK; FindingOK never appears in Findings).
const (
	FindingOK FindingKind = "ok"
	// FindingMalformed: a row or canonical blob that cannot be decoded,
	// or a decoded record outside the closed lists.
	FindingMalformed FindingKind = "malformed"
	// FindingBadLeaf: the stored leaf hash differs from the hash of the
	// canonical bytes or of the re-encoded columns, or the canonical bytes
	// name another journal, index or key id than the row.
	FindingBadLeaf FindingKind = "bad_leaf"
	// FindingUnknownKey: a record bound to, or a checkpoint signed by, a
	// key outside the trusted set.
	FindingUnknownKey FindingKind = "unknown_key"
	// FindingUnsupportedSchema: canonical bytes of another schema version.
	FindingUnsupportedSchema FindingKind = "unsupported_schema"
	// FindingDuplicateID: an invocation id stored more than once (replay).
	FindingDuplicateID FindingKind = "duplicate_id"
	// FindingNotInTree: the record is not at its tree position (a gap
	// before it), or its inclusion proof does not reach the checkpoint.
	FindingNotInTree FindingKind = "not_in_tree"
)

// Journal-level findings (scopes "journal", "checkpoint", "from").
const (
	// FindingMissing: leaf indexes absent from the journal (deletion).
	FindingMissing FindingKind = "missing"
	// FindingNoCheckpoint: the journal has records but no stored
	// checkpoint at all, so no signature covers any of them (every
	// checkpoint was deleted, or the journal was never signed). An empty
	// journal without a checkpoint has nothing to prove and is clean.
	FindingNoCheckpoint FindingKind = "no_checkpoint"
	// FindingUnloggedPurge: a record's payload is gone but no purge log
	// row covers its index (a payload blanked by hand, not by retention),
	// or a purged record is not covered by any stored checkpoint (a
	// purge only drops payloads a signature already covers).
	FindingUnloggedPurge FindingKind = "unlogged_purge"
	// FindingBadSignature: a trusted key's signature does not verify.
	FindingBadSignature FindingKind = "bad_signature"
	// FindingMalformedCheckpoint: a checkpoint that cannot be parsed, or a
	// checkpoint row whose columns disagree with its note.
	FindingMalformedCheckpoint FindingKind = "malformed_checkpoint"
	// FindingOriginMismatch: a checkpoint of another log.
	FindingOriginMismatch FindingKind = "origin_mismatch"
	// FindingRootMismatch: the rebuilt tree's root at a checkpoint's size
	// differs from the signed root (rewritten, reordered or deleted rows).
	FindingRootMismatch FindingKind = "root_mismatch"
	// FindingTruncated: a stored checkpoint is larger than the journal
	// (its tail was removed).
	FindingTruncated FindingKind = "truncated"
	// FindingRollback: the --from checkpoint is larger than the journal
	// (the journal was rolled back or truncated).
	FindingRollback FindingKind = "rollback"
	// FindingInconsistent: the consistency proof from the --from
	// checkpoint to the head fails (history rewritten).
	FindingInconsistent FindingKind = "inconsistent"
	// FindingBadNode: the stored tree state or interior nodes (the index
	// that serves start-up and O(log n) proofs, see
	// docs/decisions/0022-evidence-tree-nodes.md) differ from the tree
	// rebuilt from the records: a node edited, missing or extra.
	FindingBadNode FindingKind = "bad_node"
)

// Finding scopes.
const (
	ScopeRecord     = "record"
	ScopeJournal    = "journal"
	ScopeCheckpoint = "checkpoint"
	ScopeFrom       = "from"
)

// MaxReportFindings bounds the findings listed in a Report; Totals still
// count every finding.
const MaxReportFindings = 1000

// Finding is one verification problem.
type Finding struct {
	Scope        string      `json:"scope"`
	Kind         FindingKind `json:"kind"`
	Index        *uint64     `json:"index,omitempty"`
	InvocationID string      `json:"invocation_id,omitempty"`
	Detail       string      `json:"detail"`
}

// CheckpointStatus describes a checkpoint that verified.
type CheckpointStatus struct {
	Size  uint64 `json:"size"`
	Root  []byte `json:"root_hash"`
	KeyID string `json:"key_id"`
}

// Report is the result of verifying a journal or a bundle.
type Report struct {
	JournalID string `json:"journal_id"`
	Origin    string `json:"origin"`
	// Records is the number of rows (or bundle records) read; OK how many
	// of them have no record-scope finding; Unparseable how many could
	// not be decoded at all.
	Records     int64   `json:"records"`
	OK          int64   `json:"ok"`
	Unparseable int64   `json:"unparseable"`
	FirstIndex  *uint64 `json:"first_index,omitempty"`
	LastIndex   *uint64 `json:"last_index,omitempty"`
	// Head is the tree rebuilt from the stored canonical bytes.
	Head Checkpoint `json:"head"`
	// Checkpoints is how many stored checkpoints were checked; Last is
	// the largest one that verified; Unanchored the records after it (the
	// unsigned tail, all records when none verified). A tail is reported,
	// not a finding: a running journal always has one until its next
	// checkpoint. Records with no checkpoint at all are FindingNoCheckpoint.
	Checkpoints           int               `json:"checkpoints"`
	LastCheckpoint        *CheckpointStatus `json:"last_checkpoint,omitempty"`
	Unanchored            uint64            `json:"unanchored"`
	HeadMatchesCheckpoint bool              `json:"head_matches_checkpoint"`
	// From is the user's earlier checkpoint, when one was given and it
	// verified.
	From        *CheckpointStatus `json:"from,omitempty"`
	TrustedKeys []string          `json:"trusted_key_ids"`
	// TreeNodesChecked is how many stored interior nodes were compared
	// with the rebuilt tree (0 for a journal whose tree index was not
	// built yet, or for a bundle).
	TreeNodesChecked  uint64                `json:"tree_nodes_checked"`
	Totals            map[FindingKind]int64 `json:"totals"`
	Findings          []Finding             `json:"findings"`
	FindingsTruncated bool                  `json:"findings_truncated"`
	Clean             bool                  `json:"clean"`
	// OutboxPending is how many evidence records of acknowledged calls
	// wait in the workflow ledger's outbox, not yet in the journal (a
	// server killed before it journaled them; its next start does). They
	// are not findings. Exact when no server runs; while one runs, the
	// count may differ by the records it journals meanwhile. 0 for a
	// bundle.
	OutboxPending int64 `json:"outbox_pending"`
	// Purged is how many records had their payload purged by retention
	// (their leaf hash kept; docs/decisions/0086-evidence-payload-purge.md),
	// and PurgedRanges those records as runs of consecutive indexes (at
	// most MaxReportFindings runs; PurgedRangesTruncated when more). A
	// purged record is not a finding and not counted in OK: its leaf hash
	// is proven only by the tree (every checkpoint covering it, the stored
	// nodes), never by its content, which is gone.
	Purged                int64        `json:"purged"`
	PurgedRanges          []IndexRange `json:"purged_ranges"`
	PurgedRangesTruncated bool         `json:"purged_ranges_truncated"`
}

// IndexRange is the run of leaf indexes First..Last (inclusive).
type IndexRange struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
}

// addPurged counts the purged record at index i, extending the last range
// when it is the next index.
func (r *Report) addPurged(i uint64) {
	r.Purged++
	if n := len(r.PurgedRanges); n > 0 && r.PurgedRanges[n-1].Last+1 == i {
		r.PurgedRanges[n-1].Last = i
		return
	}
	if len(r.PurgedRanges) >= MaxReportFindings {
		r.PurgedRangesTruncated = true
		return
	}
	r.PurgedRanges = append(r.PurgedRanges, IndexRange{First: i, Last: i})
}

func (r *Report) add(f Finding) {
	if r.Totals == nil {
		r.Totals = map[FindingKind]int64{}
	}
	r.Totals[f.Kind]++
	if len(r.Findings) < MaxReportFindings {
		r.Findings = append(r.Findings, f)
	} else {
		r.FindingsTruncated = true
	}
}

// Has reports whether the report holds a finding of kind k.
func (r Report) Has(k FindingKind) bool { return r.Totals[k] > 0 }

// Kinds returns the finding kinds present, sorted.
func (r Report) Kinds() []FindingKind {
	out := []FindingKind{}
	for k := range r.Totals {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func idx(i uint64) *uint64 { return &i }

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// From is the text of a signed checkpoint the user kept earlier; the
	// journal must be a consistent extension of it.
	From []byte
	// TrustedKeys, when non-empty, are the only public keys trusted (note
	// verifier keys); otherwise the data directory's keys are used (see
	// TrustedKeys).
	TrustedKeys []string
	// Progress, when set, is called with rows done and the total, every
	// ProgressEvery rows and at the end.
	Progress func(done, total uint64)
	// OutboxPending, when set, counts the records waiting past the
	// outbox sequence the journal has applied (watermark): the records of
	// calls the workflow ledger acknowledged that the journal has not
	// taken yet. Its answer is Report.OutboxPending.
	OutboxPending func(ctx context.Context, watermark int64) (int64, error)
}

// ProgressEvery is how many rows pass between Progress calls.
const ProgressEvery = 4096

// StoredRow is one journal row as read from storage.
type StoredRow struct {
	Index        uint64
	InvocationID string
	KeyID        string
	// Columns is the record decoded from the row's columns; ColumnsErr
	// is set when they could not be decoded.
	Columns    Record
	ColumnsErr error
	Canonical  []byte
	LeafHash   []byte
}

// StoredCheckpoint is one stored checkpoint row.
type StoredCheckpoint struct {
	Size  uint64
	Root  []byte
	KeyID string
	Note  string
}

// CheckInput is what a Checker needs before the rows stream in.
type CheckInput struct {
	JournalID, Origin string
	Keys              *KeySet
	// Rows is the number of rows that will be streamed.
	Rows        uint64
	Checkpoints []StoredCheckpoint
	From        []byte
	// Duplicates are invocation ids stored more than once.
	Duplicates map[string]bool
	Progress   func(done, total uint64)
	// PurgeLog is the purge log's index ranges, sorted and merged: every
	// purged row must lie in one (FindingUnloggedPurge otherwise).
	PurgeLog []IndexRange
	// Nodes, when set, is shown every node the rebuilt tree creates and
	// reports how the stored tree index differs from it (FindingBadNode).
	Nodes NodeCheck
}

// NodeCheck compares a journal's stored tree index (interior nodes and
// compact range) with the tree the Checker rebuilds from the records.
type NodeCheck interface {
	// Visit is called with every node the rebuilt tree creates, in
	// creation order (level 0 is a leaf).
	Visit(id compact.NodeID, hash []byte)
	// Finish is given the rebuilt tree's size and compact range and
	// returns the differences found (at most a few lines, each one
	// finding) and how many stored nodes were compared.
	Finish(size uint64, rangeHashes [][]byte) (problems []string, compared uint64)
}

// Checker verifies a journal streamed row by row in index order, in
// bounded memory.
type Checker struct {
	in     CheckInput
	tree   *TreeBuilder
	rep    Report
	pos    uint64 // tree position of the next row
	next   uint64 // index expected for the next row
	logAt  int    // the first PurgeLog range that may hold the next purged row
	signed uint64 // the largest stored checkpoint's size
	from   *Checkpoint
	fromID string
}

// NewChecker prepares the checks of in (verifying the From checkpoint's
// signature at once).
func NewChecker(in CheckInput) *Checker {
	c := &Checker{in: in, tree: NewTreeBuilder()}
	c.rep.JournalID, c.rep.Origin, c.rep.TrustedKeys = in.JournalID, in.Origin, in.Keys.IDs()
	c.rep.Totals = map[FindingKind]int64{}
	c.rep.Findings = []Finding{}
	c.rep.PurgedRanges = []IndexRange{}
	if in.Nodes != nil {
		c.tree.VisitNodes(in.Nodes.Visit)
	}
	for _, cp := range in.Checkpoints {
		c.tree.WantRoot(cp.Size)
		c.signed = max(c.signed, cp.Size)
	}
	if len(in.From) > 0 {
		cp, keyID, err := OpenCheckpoint(in.From, in.Keys)
		switch {
		case err != nil:
			c.rep.add(Finding{Scope: ScopeFrom, Kind: checkpointErrKind(err), Detail: err.Error()})
		case cp.Origin != in.Origin:
			c.rep.add(Finding{Scope: ScopeFrom, Kind: FindingOriginMismatch, Detail: fmt.Sprintf("checkpoint origin %q, journal origin %q", cp.Origin, in.Origin)})
		default:
			c.from, c.fromID = &cp, keyID
			c.tree.WantRoot(cp.Size)
			if cp.Size <= in.Rows {
				c.tree.WantConsistency(cp.Size, in.Rows)
			}
		}
	}
	return c
}

func checkpointErrKind(err error) FindingKind {
	switch {
	case errors.Is(err, ErrUnknownKey):
		return FindingUnknownKey
	case errors.Is(err, ErrBadSignature):
		return FindingBadSignature
	default:
		return FindingMalformedCheckpoint
	}
}

// Row checks the next row and adds its canonical bytes to the tree.
func (c *Checker) Row(r StoredRow) {
	rep := &c.rep
	rep.Records++
	if rep.FirstIndex == nil {
		rep.FirstIndex = idx(r.Index)
	}
	rep.LastIndex = idx(r.Index)
	n0 := sumTotals(rep.Totals)
	rec := func(k FindingKind, format string, args ...any) {
		rep.add(Finding{Scope: ScopeRecord, Kind: k, Index: idx(r.Index), InvocationID: r.InvocationID, Detail: fmt.Sprintf(format, args...)})
	}
	if r.Index > c.next {
		rep.add(Finding{Scope: ScopeJournal, Kind: FindingMissing, Index: idx(c.next),
			Detail: fmt.Sprintf("indexes %d..%d are absent", c.next, r.Index-1)})
	}
	c.next = r.Index + 1
	if r.Index != c.pos {
		rec(FindingNotInTree, "stored at index %d but at tree position %d (a gap precedes it)", r.Index, c.pos)
	}
	if len(r.Canonical) == 0 {
		c.purgedRow(r, rec)
		return
	}
	// The tree is built from the canonical bytes: the content itself.
	leaf := LeafHash(r.Canonical)
	if err := c.tree.Append(leaf); err != nil {
		rec(FindingMalformed, "tree: %v", err)
	}
	c.pos++

	if r.ColumnsErr != nil {
		rep.Unparseable++
		rec(FindingMalformed, "columns: %v", r.ColumnsErr)
	}
	columnsOK := r.ColumnsErr == nil
	v, err := SchemaOf(r.Canonical)
	switch {
	case err != nil:
		rec(FindingMalformed, "canonical bytes do not start with %q and a version", Magic)
		columnsOK = false
	case !SupportedSchema(v):
		rec(FindingUnsupportedSchema, "canonical schema version %d; this build reads %d to %d", v, MinSchemaVersion, SchemaVersion)
		columnsOK = false
	default:
		h, parsed, err := ParseCanonical(r.Canonical)
		if err != nil {
			rec(FindingMalformed, "canonical bytes: %v", err)
		} else {
			// The salt is stored only in the canonical bytes.
			r.Columns.Salt = parsed.Salt
			switch {
			case h.JournalID != c.in.JournalID:
				rec(FindingBadLeaf, "canonical bytes belong to journal %q", h.JournalID)
			case h.Index != r.Index:
				rec(FindingBadLeaf, "canonical bytes name index %d", h.Index)
			case h.KeyID != r.KeyID:
				rec(FindingBadLeaf, "canonical bytes name key %s, the row %s", h.KeyID, r.KeyID)
			}
		}
	}
	if !bytes.Equal(leaf, r.LeafHash) {
		rec(FindingBadLeaf, "stored leaf hash differs from the hash of the canonical bytes")
	}
	if columnsOK {
		canon, err := r.Columns.Canonical(c.in.JournalID, r.KeyID, r.Index)
		if err != nil {
			rec(FindingMalformed, "columns: %v", err)
		} else if !bytes.Equal(LeafHash(canon), r.LeafHash) || !bytes.Equal(canon, r.Canonical) {
			rec(FindingBadLeaf, "the columns do not re-encode to the stored leaf")
		}
	}
	if !c.in.Keys.Has(r.KeyID) {
		rec(FindingUnknownKey, "record bound to key %s, which is not trusted", r.KeyID)
	}
	if c.in.Duplicates[r.InvocationID] {
		rec(FindingDuplicateID, "invocation id %s is stored more than once", r.InvocationID)
	}
	if sumTotals(rep.Totals) == n0 {
		rep.OK++
	}
	if p := c.in.Progress; p != nil && rep.Records%ProgressEvery == 0 {
		p(uint64(rep.Records), c.in.Rows)
	}
}

// purgedRow checks a row whose payload was purged: only its stored leaf
// hash remains, and it enters the tree as is, so that a changed leaf hash
// changes every root and node above it (root_mismatch, bad_node). Its key
// must still be trusted and its id unique.
func (c *Checker) purgedRow(r StoredRow, rec func(FindingKind, string, ...any)) {
	rep := &c.rep
	n0 := sumTotals(rep.Totals)
	if len(r.LeafHash) != Hasher.Size() {
		rec(FindingBadLeaf, "purged record's leaf hash is %d bytes", len(r.LeafHash))
	}
	if err := c.tree.Append(r.LeafHash); err != nil {
		rec(FindingMalformed, "tree: %v", err)
	}
	c.pos++
	log := c.in.PurgeLog
	for c.logAt < len(log) && log[c.logAt].Last < r.Index {
		c.logAt++
	}
	switch {
	case c.logAt == len(log) || log[c.logAt].First > r.Index:
		rec(FindingUnloggedPurge, "the payload is gone but no purge log row covers index %d", r.Index)
	case r.Index >= c.signed:
		rec(FindingUnloggedPurge, "the payload is gone but no stored checkpoint covers index %d", r.Index)
	}
	if !c.in.Keys.Has(r.KeyID) {
		rec(FindingUnknownKey, "record bound to key %s, which is not trusted", r.KeyID)
	}
	if c.in.Duplicates[r.InvocationID] {
		rec(FindingDuplicateID, "invocation id %s is stored more than once", r.InvocationID)
	}
	if sumTotals(rep.Totals) == n0 {
		rep.addPurged(r.Index)
	}
	if p := c.in.Progress; p != nil && rep.Records%ProgressEvery == 0 {
		p(uint64(rep.Records), c.in.Rows)
	}
}

func sumTotals(m map[FindingKind]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// Finish checks the checkpoints and the From checkpoint against the rebuilt
// tree and returns the report.
func (c *Checker) Finish() Report {
	rep := &c.rep
	rep.Head = Checkpoint{Origin: c.in.Origin, Size: c.tree.Size(), Root: c.tree.Root()}
	if c.tree.Size() != c.in.Rows {
		rep.add(Finding{Scope: ScopeJournal, Kind: FindingMalformed, Detail: fmt.Sprintf("expected %d rows, read %d", c.in.Rows, c.tree.Size())})
	}
	if len(c.in.Checkpoints) == 0 && rep.Head.Size > 0 {
		rep.add(Finding{Scope: ScopeJournal, Kind: FindingNoCheckpoint,
			Detail: fmt.Sprintf("%d record(s) and no signed checkpoint: no signature covers them, so they could have been rewritten or deleted undetectably", rep.Head.Size)})
	}
	if c.in.Nodes != nil {
		problems, n := c.in.Nodes.Finish(c.tree.Size(), c.tree.Hashes())
		rep.TreeNodesChecked = n
		for _, p := range problems {
			rep.add(Finding{Scope: ScopeJournal, Kind: FindingBadNode, Detail: p})
		}
	}
	var last *CheckpointStatus
	for _, sc := range c.in.Checkpoints {
		rep.Checkpoints++
		f := Finding{Scope: ScopeCheckpoint, Index: idx(sc.Size)}
		cp, keyID, err := OpenCheckpoint([]byte(sc.Note), c.in.Keys)
		switch {
		case err != nil:
			f.Kind, f.Detail = checkpointErrKind(err), err.Error()
		case cp.Origin != c.in.Origin:
			f.Kind, f.Detail = FindingOriginMismatch, fmt.Sprintf("checkpoint origin %q, journal origin %q", cp.Origin, c.in.Origin)
		case cp.Size != sc.Size || !bytes.Equal(cp.Root, sc.Root) || keyID != sc.KeyID:
			f.Kind, f.Detail = FindingMalformedCheckpoint, "the checkpoint row's columns disagree with its signed note"
		case cp.Size > rep.Head.Size:
			f.Kind, f.Detail = FindingTruncated, fmt.Sprintf("signed checkpoint of size %d, but the journal has %d records", cp.Size, rep.Head.Size)
		default:
			root, _ := c.tree.RootAt(cp.Size)
			if !bytes.Equal(root, cp.Root) {
				f.Kind, f.Detail = FindingRootMismatch, fmt.Sprintf("the records do not hash to the signed root of size %d", cp.Size)
			} else if last == nil || cp.Size >= last.Size {
				last = &CheckpointStatus{Size: cp.Size, Root: cp.Root, KeyID: keyID}
			}
		}
		if f.Kind != "" {
			rep.add(f)
		}
	}
	rep.LastCheckpoint = last
	if last != nil {
		rep.Unanchored = rep.Head.Size - last.Size
		rep.HeadMatchesCheckpoint = rep.Unanchored == 0
	} else {
		rep.Unanchored = rep.Head.Size
	}
	if c.from != nil {
		cp := *c.from
		f := Finding{Scope: ScopeFrom, Index: idx(cp.Size)}
		if cp.Size > rep.Head.Size {
			f.Kind, f.Detail = FindingRollback, fmt.Sprintf("your checkpoint has %d records, the journal only %d: it was rolled back or truncated", cp.Size, rep.Head.Size)
		} else {
			p, err := c.tree.ConsistencyProof(cp.Size, rep.Head.Size)
			if err == nil {
				err = proof.VerifyConsistency(Hasher, cp.Size, rep.Head.Size, p, cp.Root, rep.Head.Root)
			}
			if err != nil {
				f.Kind, f.Detail = FindingInconsistent, fmt.Sprintf("the journal is not an append-only extension of your checkpoint of size %d: %v", cp.Size, err)
			}
		}
		if f.Kind != "" {
			rep.add(f)
		} else {
			rep.From = &CheckpointStatus{Size: cp.Size, Root: cp.Root, KeyID: c.fromID}
		}
	}
	if p := c.in.Progress; p != nil {
		p(uint64(rep.Records), c.in.Rows)
	}
	rep.Clean = len(rep.Totals) == 0
	return *rep
}
