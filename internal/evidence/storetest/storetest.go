// Package storetest is the contract suite of an evidence journal, run by
// the SQLite journal (evidencedb) and the PostgreSQL journal (evidencepg)
// from their own tests: appends, the outbox, checkpoints, session reads,
// proofs, bundles and offline verification, through the methods both
// journals export. Tests of one storage's files or tables stay with it.
package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
)

// Journal is what both journals offer their callers.
type Journal interface {
	evidence.Appender
	ApplyOutbox(ctx context.Context, items []evidence.OutboxItem, durable bool) ([]error, error)
	Watermarks() (applied, durable int64)
	SyncOutbox(ctx context.Context) error
	SetBeforeRead(fn func(context.Context) error)
	Checkpoint(ctx context.Context) (evidence.SignedCheckpoint, error)
	Head(ctx context.Context) (evidence.Checkpoint, error)
	Run(ctx context.Context) error
	Latest(ctx context.Context) (evidence.SignedCheckpoint, error)
	SessionRecords(ctx context.Context, sessionID string, limit int) ([]evidence.Entry, error)
	SessionCounts(ctx context.Context, sessionID string) (evidence.Counts, error)
	ExportBundle(ctx context.Context, sessionID string) (evidence.Bundle, error)
	Purger
	InclusionProof(ctx context.Context, index, size uint64) ([][]byte, error)
	ConsistencyProof(ctx context.Context, size1, size2 uint64) ([][]byte, error)
	JournalID() string
	Origin() string
	KeyID() string
	Close() error
}

// Purger drops the payloads of old records (docs/decisions/0086-evidence-payload-purge.md).
type Purger interface {
	PurgeBefore(ctx context.Context, policy string, cutoff time.Time, batch int) (evidence.PurgeSummary, error)
	// PurgeNext is one batch of PurgeBefore, from index from on.
	PurgeNext(ctx context.Context, policy string, cutoff time.Time, from uint64, batch int) (evidence.PurgeSummary, error)
	// PendingPurge counts what PurgeBefore(cutoff) would purge now.
	PendingPurge(ctx context.Context, cutoff time.Time) (int64, error)
}

// PurgeFirst purges the payloads of the records Rec built for 0..n-1 (their
// times are before T0 + n ms), which a signed checkpoint must cover.
func PurgeFirst(t testing.TB, p Purger, n int) evidence.PurgeSummary {
	t.Helper()
	sum, err := p.PurgeBefore(context.Background(), "test", T0.Add(time.Duration(n)*time.Millisecond), 0)
	if err != nil || sum.Purged != int64(n) {
		t.Fatalf("purge of %d records: %+v %v", n, sum, err)
	}
	return sum
}

// Backend is one journal's storage under test: a data directory, a
// database and its key file.
type Backend interface {
	// Open opens a journal on the storage, as a server (re)starting or
	// another replica does (with the same key); the test closes it.
	Open(t *testing.T, opts evidence.Options) (Journal, error)
	// Verify verifies the storage offline.
	Verify(t *testing.T, opts evidence.VerifyOptions) evidence.Report
}

// Run runs the contract against storages returned by newBackend (new and
// empty each call, cleaned up by newBackend).
func Run(t *testing.T, newBackend func(t *testing.T) Backend) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, Backend)
	}{
		{"AppendQueryAndVerifyClean", appendQueryAndVerifyClean}, {"AppendRejects", appendRejects},
		{"ConcurrentAppend", concurrentAppend}, {"TwoWritersShareAJournal", twoWritersShareAJournal},
		{"ApplyOutboxIsExactlyOnce", applyOutboxIsExactlyOnce}, {"BeforeReadRunsBeforeEveryReader", beforeReadRunsBeforeEveryReader},
		{"HeadCountsUnsignedRecords", headCountsUnsignedRecords}, {"BundleVerifiesWithoutDatabase", bundleVerifiesWithoutDatabase},
		{"ProofsFromStoredNodes", proofsFromStoredNodes}, {"ProofRejects", proofRejects},
		{"ReplayRecordsVerify", replayRecordsVerify}, {"RunSignsPeriodically", runSignsPeriodically},
		{"OriginRules", originRules},
		{"PurgeKeepsProofs", purgeKeepsProofs}, {"PurgeRejects", purgeRejects}, {"PurgeNextBatchByBatch", purgeBatchByBatch}, {"PurgeRacesBundleExport", purgeRacesBundleExport},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newBackend(t)) })
	}
}

// T0 is the base time of the records Rec builds.
var T0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Digest is the SHA-256 hex of s.
func Digest(s string) string { return evidence.Digest([]byte(s)) }

// Rec returns a valid record number i of binding b for session sess.
func Rec(i int, b evidence.Binding, sess string) evidence.Record {
	r := evidence.Record{
		InvocationID: fmt.Sprintf("inv-%06d", i), At: T0.Add(time.Duration(i) * time.Millisecond),
		Tool: "read_files", Source: evidence.SourceMCP, TransportEra: "2025-11-25",
		Claim:   evidence.Claim{PrincipalKind: "api_token", ClientWindow: Digest("window"), Project: "agent:local:demo"},
		Binding: b, Outcome: evidence.OutcomeOK, DurationMS: int64(i % 100),
		ArgumentsDigest: Digest(fmt.Sprint("args", i)), ResultDigest: Digest(fmt.Sprint("result", i)),
	}
	switch b {
	case evidence.BindingVerified:
		r.Claim.RecordingSessionID = sess
		r.Verified = evidence.Verified{SessionID: sess, Project: "agent:local:demo", Authority: "auth-1", Lifecycle: "active"}
		r.Reasons = []evidence.Reason{evidence.ReasonStoreMatch}
		r.CheckedKeys = []evidence.CheckKey{evidence.KeyRegistration, evidence.KeyAuthority, evidence.KeyProject}
		r.SkippedKeys = []evidence.CheckKey{evidence.KeyLifecycle}
		r.SessionRecordDigest = Digest("session-record")
	case evidence.BindingSessionless:
		r.Claim.BusinessSessionID = sess
		r.Reasons = []evidence.Reason{evidence.ReasonNoRecorderRequested}
	case evidence.BindingInvalidClaim:
		r.Claim.RecordingSessionID = sess
		r.Reasons = []evidence.Reason{evidence.ReasonSessionClosed, evidence.ReasonProjectMismatch}
		r.CheckedKeys = []evidence.CheckKey{evidence.KeyRegistration, evidence.KeyProject, evidence.KeyLifecycle}
		r.Outcome, r.ErrorKind, r.ResultDigest = evidence.OutcomeRefused, "session_closed", ""
	case evidence.BindingUnknown:
		r.Claim.RecordingSessionID = sess
		r.Reasons = []evidence.Reason{evidence.ReasonNotChecked}
		r.Outcome, r.ErrorKind = evidence.OutcomeRefused, "invalid_arguments"
	}
	return r
}

// Kinds are the four bindings, in the order Fill cycles through them.
var Kinds = []evidence.Binding{evidence.BindingVerified, evidence.BindingSessionless, evidence.BindingInvalidClaim, evidence.BindingUnknown}

// Fill appends records from..from+n-1 (bindings cycling) for sess and
// returns their entries.
func Fill(t testing.TB, j evidence.Appender, from, n int, sess string) []evidence.Entry {
	t.Helper()
	var out []evidence.Entry
	for i := from; i < from+n; i++ {
		e, err := j.Append(context.Background(), Rec(i, Kinds[i%len(Kinds)], sess))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// WantKinds fails t unless rep's finding kinds are exactly want (and it is
// clean exactly when want is empty).
func WantKinds(t *testing.T, rep evidence.Report, want ...evidence.FindingKind) {
	t.Helper()
	got := rep.Kinds()
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("finding kinds = %v, want %v\n%s", got, want, Dump(rep))
	}
	if rep.Clean != (len(want) == 0) {
		t.Fatalf("clean = %v with findings %v", rep.Clean, got)
	}
}

// Dump renders rep's findings for a failure message.
func Dump(rep evidence.Report) string {
	b, _ := json.MarshalIndent(rep.Findings, "", " ")
	return string(b)
}

// HasFinding reports whether rep has a finding of kind k in scope about
// index.
func HasFinding(rep evidence.Report, scope string, k evidence.FindingKind, index uint64) bool {
	for _, f := range rep.Findings {
		if f.Scope == scope && f.Kind == k && f.Index != nil && *f.Index == index {
			return true
		}
	}
	return false
}

func open(t *testing.T, b Backend, opts evidence.Options) Journal {
	t.Helper()
	j, err := b.Open(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}
