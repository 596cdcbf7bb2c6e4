package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/proof"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
)

// purgeKeepsProofs purges payloads in batches: only records older than
// the cutoff and covered by a signed checkpoint lose them; an inclusion
// proof taken before the purge still verifies, session reads and bundles
// mark the purged records, and the journal verifies clean with the purged
// ranges reported apart from findings.
func purgeKeepsProofs(t *testing.T, b Backend) {
	ctx := context.Background()
	j := open(t, b, evidence.Options{CheckpointEvery: 10})
	es := Fill(t, j, 0, 30, "wc_sess_a")
	Fill(t, j, 30, 15, "wc_sess_b") // checkpoints at 10..40; 40..44 unsigned
	cp, err := j.Latest(ctx)
	if err != nil || cp.Size != 40 {
		t.Fatalf("latest %+v %v", cp, err)
	}
	before, err := j.InclusionProof(ctx, 3, cp.Size)
	if err != nil {
		t.Fatal(err)
	}
	counts, _ := j.SessionCounts(ctx, "wc_sess_a")
	pending := func(cutoff time.Time, want int64) {
		t.Helper()
		if n, err := j.PendingPurge(ctx, cutoff); err != nil || n != want {
			t.Fatalf("pending purge before %s: %d %v, want %d", cutoff.Sub(T0), n, err, want)
		}
	}
	pending(T0.Add(25*time.Millisecond), 25)
	pending(T0.Add(time.Hour), 40) // 40..44 are not signed

	sum, err := j.PurgeBefore(ctx, "evidence_days", T0.Add(25*time.Millisecond), 4)
	if err != nil || sum.Purged != 25 || sum.Batches != 7 || *sum.Range != (evidence.IndexRange{First: 0, Last: 24}) || sum.Policy != "evidence_days" {
		t.Fatalf("purge: %+v %v", sum, err)
	}
	pending(T0.Add(25*time.Millisecond), 0)
	if err := proof.VerifyInclusion(evidence.Hasher, 3, cp.Size, es[3].LeafHash, before, cp.Root); err != nil {
		t.Fatalf("an inclusion proof taken before the purge: %v", err)
	}
	if after, err := j.InclusionProof(ctx, 3, cp.Size); err != nil || !slices.EqualFunc(after, before, bytes.Equal) {
		t.Fatalf("the proof changed with the purge: %v", err)
	}
	got, err := j.SessionRecords(ctx, "wc_sess_a", 50)
	if err != nil || len(got) != 30 {
		t.Fatalf("session records: %d %v", len(got), err)
	}
	for _, e := range got {
		if e.Purged != (e.Index < 25) || e.Purged && (len(e.Canonical) != 0 || !bytes.Equal(e.LeafHash, es[e.Index].LeafHash)) {
			t.Fatalf("entry %d: purged %v, %d canonical bytes, %+v", e.Index, e.Purged, len(e.Canonical), e.Record)
		}
		// A purged entry's record is what the journal keeps: the
		// identifiers, time and binding, and nothing of the content.
		if o := es[e.Index].Record; e.Purged && (e.Record.InvocationID != o.InvocationID || !e.Record.At.Equal(o.At) ||
			e.Record.Claim.RecordingSessionID != o.Claim.RecordingSessionID || e.Record.Claim.BusinessSessionID != o.Claim.BusinessSessionID ||
			e.Record.Verified.SessionID != o.Verified.SessionID || e.Record.Binding != o.Binding || e.Record.ReplayOf != o.ReplayOf ||
			e.Record.Tool != "" || e.Record.Outcome != "" || e.Record.Claim.Project != "" || e.Record.ArgumentsDigest != "") {
			t.Fatalf("purged entry %d reads %+v; the record was %+v", e.Index, e.Record, o)
		}
	}
	if c, _ := j.SessionCounts(ctx, "wc_sess_a"); c != counts {
		t.Fatalf("counts %+v, before the purge %+v", c, counts)
	}
	rep := cleanBundle(t, j, "wc_sess_a")
	if rep.Records != 30 || rep.OK != 5 || rep.Purged != 25 || !slices.Equal(rep.PurgedRanges, []evidence.IndexRange{{First: 0, Last: 24}}) {
		t.Fatalf("bundle report %+v", rep)
	}
	// The export signed the head (45). Records 45..48 are older than the
	// next cutoff but unsigned: they keep their payloads.
	Fill(t, j, 45, 4, "wc_sess_b")
	pending(T0.Add(time.Hour), 20)
	sum, err = j.PurgeBefore(ctx, "evidence_days", T0.Add(time.Hour), 0)
	if err != nil || sum.Purged != 20 || sum.Batches != 1 || *sum.Range != (evidence.IndexRange{First: 25, Last: 44}) {
		t.Fatalf("second purge: %+v %v", sum, err)
	}
	pending(T0.Add(time.Hour), 0)
	if sum, err := j.PurgeBefore(ctx, "evidence_days", T0.Add(time.Hour), 0); err != nil || sum.Purged != 0 || sum.Batches != 0 || sum.Range != nil {
		t.Fatalf("a purge with nothing left: %+v %v", sum, err)
	}
	// A purged bundle record whose leaf hash was changed is not in the tree.
	bun, _ := j.ExportBundle(ctx, "wc_sess_b")
	bun.Records[0].LeafHash = bytes.Clone(bun.Records[0].LeafHash)
	bun.Records[0].LeafHash[0] ^= 1
	raw, _ := json.Marshal(bun)
	if rep, _ := evidence.VerifyBundle(raw); !HasFinding(rep, evidence.ScopeRecord, evidence.FindingNotInTree, 30) {
		t.Fatalf("tampered purged leaf in a bundle: %s", Dump(rep))
	}
	j.Close()
	rep = b.Verify(t, evidence.VerifyOptions{From: []byte(cp.Note)})
	WantKinds(t, rep)
	if rep.Records != 49 || rep.OK != 4 || rep.Purged != 45 || rep.LastCheckpoint.Size != 49 ||
		!slices.Equal(rep.PurgedRanges, []evidence.IndexRange{{First: 0, Last: 44}}) || rep.From == nil {
		t.Fatalf("report %+v", rep)
	}
}

// purgeRejects: every bad request is invalid_arguments and purges nothing.
func purgeRejects(t *testing.T, b Backend) {
	ctx := context.Background()
	j := open(t, b, evidence.Options{CheckpointEvery: 5})
	Fill(t, j, 0, 5, "wc_sess_a")
	late := T0.Add(time.Hour)
	for name, call := range map[string]func() (evidence.PurgeSummary, error){
		"empty policy": func() (evidence.PurgeSummary, error) { return j.PurgeBefore(ctx, "", late, 0) },
		"long policy": func() (evidence.PurgeSummary, error) {
			return j.PurgeBefore(ctx, strings.Repeat("p", evidence.MaxFieldBytes+1), late, 0)
		},
		"zero cutoff":             func() (evidence.PurgeSummary, error) { return j.PurgeBefore(ctx, "p", time.Time{}, 0) },
		"negative batch":          func() (evidence.PurgeSummary, error) { return j.PurgeBefore(ctx, "p", late, -1) },
		"batch beyond max":        func() (evidence.PurgeSummary, error) { return j.PurgeBefore(ctx, "p", late, evidence.MaxPurgeBatch+1) },
		"one batch, empty policy": func() (evidence.PurgeSummary, error) { return j.PurgeNext(ctx, "", late, 0, 0) },
		"one batch, zero cutoff":  func() (evidence.PurgeSummary, error) { return j.PurgeNext(ctx, "p", time.Time{}, 0, 0) },
		"one batch beyond max": func() (evidence.PurgeSummary, error) {
			return j.PurgeNext(ctx, "p", late, 0, evidence.MaxPurgeBatch+1)
		},
	} {
		if sum, err := call(); failure.KindOf(err) != failure.InvalidArguments || sum.Purged != 0 {
			t.Fatalf("%s: %+v %v", name, sum, err)
		}
	}
	j.Close()
	rep := b.Verify(t, evidence.VerifyOptions{})
	WantKinds(t, rep)
	if rep.Purged != 0 || rep.OK != 5 {
		t.Fatalf("a refused purge changed the journal: %+v", rep)
	}
}

// purgeRacesBundleExport exports a session's bundle again and again while
// a purge drops its payloads one record per transaction: every bundle is
// consistent (verifies clean, each record whole or purged) and the purged
// part only grows.
func purgeRacesBundleExport(t *testing.T, b Backend) {
	ctx := context.Background()
	j := open(t, b, evidence.Options{CheckpointEvery: 50})
	Fill(t, j, 0, 100, "wc_sess_a")
	done := make(chan error, 1)
	go func() {
		_, err := j.PurgeBefore(ctx, "race", T0.Add(time.Hour), 1)
		done <- err
	}()
	var last int64
	check := func() {
		t.Helper()
		rep := cleanBundle(t, j, "wc_sess_a")
		if rep.Records != 100 || rep.OK+rep.Purged != 100 || rep.Purged < last {
			t.Fatalf("bundle during a purge: %+v", rep)
		}
		last = rep.Purged
	}
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
		}
		check()
	}
	if check(); last != 100 {
		t.Fatalf("after the purge %d records are purged", last)
	}
}

// cleanBundle exports sess's bundle from j, verifies it as JSON and fails
// t unless it is clean.
func cleanBundle(t *testing.T, j Journal, sess string) evidence.Report {
	t.Helper()
	bun, err := j.ExportBundle(context.Background(), sess)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range bun.Records {
		if r.Purged && !reflect.DeepEqual(r.Record, evidence.Record{InvocationID: r.Record.InvocationID}) {
			t.Fatalf("purged bundle record %d says more than its invocation id: %+v", r.Index, r.Record)
		}
	}
	raw, _ := json.Marshal(bun)
	rep, err := evidence.VerifyBundle(raw)
	if err != nil {
		t.Fatal(err)
	}
	WantKinds(t, rep)
	return rep
}

// purgeBatchByBatch: PurgeNext purges one batch from the index given, in
// index order, each with its purge log row, and nothing once none is
// left; the result is what PurgeBefore would have purged.
func purgeBatchByBatch(t *testing.T, b Backend) {
	ctx := context.Background()
	j := open(t, b, evidence.Options{CheckpointEvery: 10})
	Fill(t, j, 0, 10, "wc_sess_a")
	cutoff := T0.Add(8 * time.Millisecond)
	var from uint64
	var got []evidence.IndexRange
	for range 10 {
		sum, err := j.PurgeNext(ctx, "batch", cutoff, from, 3)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Range == nil {
			if sum.Purged != 0 || sum.Batches != 0 {
				t.Fatalf("an empty batch: %+v", sum)
			}
			break
		}
		if sum.Batches != 1 || sum.Purged != int64(sum.Range.Last-sum.Range.First+1) {
			t.Fatalf("one batch: %+v", sum)
		}
		got = append(got, *sum.Range)
		from = sum.Range.Last + 1
	}
	if want := []evidence.IndexRange{{First: 0, Last: 2}, {First: 3, Last: 5}, {First: 6, Last: 7}}; !slices.Equal(got, want) {
		t.Fatalf("batches %v, want %v", got, want)
	}
	j.Close()
	rep := b.Verify(t, evidence.VerifyOptions{})
	WantKinds(t, rep)
	if rep.Purged != 8 || rep.OK != 2 {
		t.Fatalf("after the batches: purged %d ok %d", rep.Purged, rep.OK)
	}
}
