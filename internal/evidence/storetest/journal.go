package storetest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
)

func appendQueryAndVerifyClean(t *testing.T, b Backend) {
	ctx := context.Background()
	j := open(t, b, evidence.Options{CheckpointEvery: 5})
	es := Fill(t, j, 0, 12, "wc_sess_a")
	Fill(t, j, 12, 3, "wc_sess_b")
	for i, e := range es {
		if e.Index != uint64(i) || !bytes.Equal(e.LeafHash, evidence.LeafHash(e.Canonical)) {
			t.Fatalf("entry %d: index %d", i, e.Index)
		}
	}
	got, err := j.SessionRecords(ctx, "wc_sess_a", 0)
	if err != nil || len(got) != 12 || got[0].Index != 11 || got[11].Index != 0 {
		t.Fatalf("session records: %v %d", err, len(got))
	}
	if got[0].Record.InvocationID != "inv-000011" || !got[0].Record.At.Equal(es[11].Record.At) {
		t.Fatalf("decoded %+v", got[0].Record)
	}
	if got, _ := j.SessionRecords(ctx, "wc_sess_a", 2); len(got) != 2 || got[0].Index != 11 {
		t.Fatalf("limit 2: %d", len(got))
	}
	if _, err := j.SessionRecords(ctx, "wc_sess_a", -1); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("negative limit: %v", err)
	}
	if _, err := j.SessionRecords(ctx, "", 1); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("empty session id: %v", err)
	}
	c, err := j.SessionCounts(ctx, "wc_sess_a")
	if err != nil || c != (evidence.Counts{Verified: 3, Sessionless: 3, InvalidClaim: 3, Unknown: 3}) {
		t.Fatalf("counts %+v %v", c, err)
	}
	// Size-based checkpoints at 5 and 10; Checkpoint signs 15 and is idempotent.
	cp, err := j.Checkpoint(ctx)
	if err != nil || cp.Size != 15 {
		t.Fatalf("checkpoint %+v %v", cp, err)
	}
	cp2, _ := j.Checkpoint(ctx)
	latest, _ := j.Latest(ctx)
	if cp2.Note != cp.Note || latest.Note != cp.Note {
		t.Fatal("Checkpoint is not idempotent")
	}
	if !strings.HasPrefix(cp.Note, j.Origin()+"\n15\n") {
		t.Fatalf("note %q", cp.Note)
	}
	j.Close()

	var calls int
	rep := b.Verify(t, evidence.VerifyOptions{From: []byte(cp.Note), Progress: func(done, total uint64) { calls++ }})
	WantKinds(t, rep)
	if rep.Records != 15 || rep.OK != 15 || rep.Checkpoints != 3 || rep.LastCheckpoint.Size != 15 || !rep.HeadMatchesCheckpoint ||
		rep.From == nil || *rep.FirstIndex != 0 || *rep.LastIndex != 14 || calls == 0 || rep.TreeNodesChecked != 11 {
		t.Fatalf("report %+v", rep)
	}
	// Reopening continues the tree where it was.
	j = open(t, b, evidence.Options{CheckpointEvery: 5})
	if e := Fill(t, j, 15, 1, "wc_sess_b")[0]; e.Index != 15 {
		t.Fatalf("after reopen: index %d", e.Index)
	}
	j.Close()
	rep = b.Verify(t, evidence.VerifyOptions{From: []byte(cp.Note)})
	WantKinds(t, rep)
	if rep.Unanchored != 1 || rep.HeadMatchesCheckpoint {
		t.Fatalf("unanchored %d", rep.Unanchored)
	}
	// Trusting another key only: every checkpoint and record is unknown_key.
	other, err := evidence.GenerateKey("example.test/other")
	if err != nil {
		t.Fatal(err)
	}
	rep = b.Verify(t, evidence.VerifyOptions{TrustedKeys: []string{other.VerifierKey}})
	if !rep.Has(evidence.FindingUnknownKey) || rep.Clean {
		t.Fatalf("foreign trusted key: %v", rep.Totals)
	}
}

func appendRejects(t *testing.T, b Backend) {
	ctx := context.Background()
	j := open(t, b, evidence.Options{})
	Fill(t, j, 0, 2, "s")
	bad := Rec(9, evidence.BindingVerified, "s")
	bad.Reasons = []evidence.Reason{evidence.ReasonNoRecorderRequested}
	if _, err := j.Append(ctx, bad); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("inconsistent binding: %v", err)
	}
	bad = Rec(9, evidence.BindingSessionless, "s")
	bad.Outcome = "maybe"
	if _, err := j.Append(ctx, bad); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("unknown outcome: %v", err)
	}
	if _, err := j.Append(ctx, Rec(1, evidence.BindingSessionless, "s")); failure.KindOf(err) != failure.Conflict {
		t.Fatalf("replayed invocation id: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := j.Append(cancelled, Rec(2, evidence.BindingSessionless, "s")); failure.KindOf(err) != failure.Interrupted {
		t.Fatalf("append with a cancelled context: %v, want interrupted", err)
	}
	if e := Fill(t, j, 2, 1, "s")[0]; e.Index != 2 {
		t.Fatalf("index after a rejected append: %d", e.Index)
	}
	if _, err := j.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	WantKinds(t, b.Verify(t, evidence.VerifyOptions{}))
}

func concurrentAppend(t *testing.T, b Backend) {
	j := open(t, b, evidence.Options{CheckpointEvery: 16})
	const workers, per = 8, 40
	var wg sync.WaitGroup
	idx := make(chan uint64, workers*per)
	for w := range workers {
		wg.Go(func() {
			for i := range per {
				n := w*per + i
				e, err := j.Append(context.Background(), Rec(n, Kinds[n%4], fmt.Sprint("s", w)))
				if err != nil {
					t.Error(err)
					return
				}
				idx <- e.Index
			}
		})
	}
	wg.Go(func() { // checkpoints race with appends
		for range 10 {
			if _, err := j.Checkpoint(context.Background()); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	close(idx)
	seen := map[uint64]bool{}
	for i := range idx {
		seen[i] = true
	}
	if len(seen) != workers*per {
		t.Fatalf("%d distinct indexes", len(seen))
	}
	if _, err := j.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	j.Close()
	rep := b.Verify(t, evidence.VerifyOptions{})
	WantKinds(t, rep)
	if rep.Records != workers*per || rep.Checkpoints < workers*per/16 {
		t.Fatalf("records %d checkpoints %d", rep.Records, rep.Checkpoints)
	}
}

// twoWritersShareAJournal: two journals open on one storage (a server and
// `webcodex mcp`, or two replicas) append in turns; each picks up the
// other's leaves, indexes stay dense and the journal verifies.
func twoWritersShareAJournal(t *testing.T, b Backend) {
	a := open(t, b, evidence.Options{})
	c := open(t, b, evidence.Options{})
	if a.JournalID() != c.JournalID() || a.Origin() != c.Origin() || a.KeyID() != c.KeyID() {
		t.Fatalf("two journals of one storage: %s/%s/%s vs %s/%s/%s", a.JournalID(), a.Origin(), a.KeyID(), c.JournalID(), c.Origin(), c.KeyID())
	}
	for i := range 20 {
		j := a
		if i%3 == 0 {
			j = c
		}
		if e := Fill(t, j, i, 1, "s")[0]; e.Index != uint64(i) {
			t.Fatalf("append %d got index %d", i, e.Index)
		}
	}
	ca, err := a.Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cb, err := c.Checkpoint(context.Background())
	if err != nil || cb.Size != 20 || !bytes.Equal(ca.Root, cb.Root) {
		t.Fatalf("the two writers disagree: %+v vs %+v (%v)", ca.Checkpoint, cb.Checkpoint, err)
	}
	WantKinds(t, b.Verify(t, evidence.VerifyOptions{}))
}

// applyOutboxIsExactlyOnce applies outbox items, replays them (as a
// start-up after a lost trim does), and checks that each record is in the
// journal once, in outbox order, that the watermark survives a reopen,
// that an invalid item is skipped and reported while the rest commit, that
// a record whose invocation already has one is kept as it was, and that
// the journal verifies.
func applyOutboxIsExactlyOnce(t *testing.T, b Backend) {
	ctx := context.Background()
	const sess = "wc_sess_0123456789abcdef0123456789abcdef"
	j := open(t, b, evidence.Options{})
	// Recovery wrote inv 3's record first.
	if _, err := j.Append(ctx, Rec(3, evidence.BindingUnknown, sess)); err != nil {
		t.Fatal(err)
	}
	bad := Rec(2, evidence.BindingVerified, sess)
	bad.Outcome = "maybe"
	items := []evidence.OutboxItem{
		{Seq: 1, Record: Rec(1, evidence.BindingVerified, sess)},
		{Seq: 2, Record: bad},
		{Seq: 3, Record: Rec(3, evidence.BindingVerified, sess)},
		{Seq: 4, Record: Rec(4, evidence.BindingVerified, sess)},
	}
	skipped, err := j.ApplyOutbox(ctx, items[:2], false)
	if err != nil || len(skipped) != 1 || !failure.Is(skipped[0], failure.InvalidArguments) {
		t.Fatalf("first batch: skipped %v, err %v; want the invalid record skipped", skipped, err)
	}
	if applied, durable := j.Watermarks(); applied != 2 || durable > applied {
		t.Fatalf("watermarks after a lazy batch = %d, %d; want 2 applied", applied, durable)
	}
	if err := j.SyncOutbox(ctx); err != nil {
		t.Fatal(err)
	}
	if applied, durable := j.Watermarks(); applied != 2 || durable != 2 {
		t.Fatalf("watermarks after SyncOutbox = %d, %d; want 2, 2", applied, durable)
	}
	// The replay of everything: seq 1 and 2 are below the watermark.
	if _, err := j.ApplyOutbox(ctx, items, true); err != nil {
		t.Fatal(err)
	}
	if applied, durable := j.Watermarks(); applied != 4 || durable != 4 {
		t.Fatalf("watermarks after a durable batch = %d, %d; want 4, 4", applied, durable)
	}
	j.Close()

	j = open(t, b, evidence.Options{})
	if applied, durable := j.Watermarks(); applied != 4 || durable != 4 {
		t.Fatalf("watermarks after reopen = %d, %d; want 4, 4", applied, durable)
	}
	if _, err := j.ApplyOutbox(ctx, items, true); err != nil { // a second replay
		t.Fatal(err)
	}
	got, err := j.SessionRecords(ctx, sess, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := len(got) - 1; i >= 0; i-- {
		ids = append(ids, got[i].Record.InvocationID+"/"+string(got[i].Record.Binding))
	}
	want := []string{"inv-000003/unknown", "inv-000001/verified", "inv-000004/verified"}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Fatalf("records %v, want %v", ids, want)
	}
	if _, err := j.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if rep := b.Verify(t, evidence.VerifyOptions{OutboxPending: func(_ context.Context, wm int64) (int64, error) { return 10 - wm, nil }}); !rep.Clean || rep.OutboxPending != 6 {
		t.Fatalf("verify: pending %d, %s", rep.OutboxPending, Dump(rep))
	}
}

// beforeReadRunsBeforeEveryReader checks that the hook runs before the
// journal answers each kind of reader, and that its error is returned.
func beforeReadRunsBeforeEveryReader(t *testing.T, b Backend) {
	ctx := context.Background()
	j := open(t, b, evidence.Options{})
	const sess = "wc_sess_0123456789abcdef0123456789abcdef"
	calls := 0
	j.SetBeforeRead(func(ctx context.Context) error {
		calls++
		_, err := j.ApplyOutbox(ctx, []evidence.OutboxItem{{Seq: int64(calls), Record: Rec(calls, evidence.BindingVerified, sess)}}, false)
		return err
	})
	if c, err := j.SessionCounts(ctx, sess); err != nil || c.Verified != 1 {
		t.Fatalf("SessionCounts saw %d records (%v), want the 1 the hook applied", c.Verified, err)
	}
	if rs, err := j.SessionRecords(ctx, sess, 0); err != nil || len(rs) != 2 {
		t.Fatalf("SessionRecords saw %d (%v), want 2", len(rs), err)
	}
	if b, err := j.ExportBundle(ctx, sess); err != nil || len(b.Records) != 3 {
		t.Fatalf("ExportBundle holds %d (%v), want 3", len(b.Records), err)
	}
	if h, err := j.Head(ctx); err != nil || h.Size != 4 {
		t.Fatalf("Head = %d (%v), want 4", h.Size, err)
	}
	j.SetBeforeRead(func(context.Context) error { return failure.New(failure.Unavailable, "ledger closed") })
	if _, err := j.SessionCounts(ctx, sess); !failure.Is(err, failure.Unavailable) {
		t.Fatalf("SessionCounts with a failing hook: %v, want unavailable", err)
	}
	if _, err := j.Checkpoint(ctx); !failure.Is(err, failure.Unavailable) {
		t.Fatalf("Checkpoint with a failing hook: %v, want unavailable", err)
	}
}

func headCountsUnsignedRecords(t *testing.T, b Backend) {
	ctx := context.Background()
	j := open(t, b, evidence.Options{})
	if h, err := j.Head(ctx); err != nil || h.Size != 0 || h.Origin != j.Origin() {
		t.Fatalf("empty head = %+v, %v", h, err)
	}
	if _, err := j.Latest(ctx); failure.KindOf(err) != failure.NotFound {
		t.Fatalf("latest before any checkpoint: %v", err)
	}
	WantKinds(t, b.Verify(t, evidence.VerifyOptions{})) // an empty journal is clean
	Fill(t, j, 0, 3, "wc_sess_a")
	WantKinds(t, b.Verify(t, evidence.VerifyOptions{}), evidence.FindingNoCheckpoint)
	cp, err := j.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h, err := j.Head(ctx)
	if err != nil || h.Size != 3 || !bytes.Equal(h.Root, cp.Root) {
		t.Fatalf("head = %+v, %v; checkpoint %+v", h, err, cp.Checkpoint)
	}
	// Records after the checkpoint are in the head, not in the checkpoint.
	Fill(t, j, 3, 2, "wc_sess_a")
	h2, err := j.Head(ctx)
	if err != nil || h2.Size != 5 || bytes.Equal(h2.Root, cp.Root) {
		t.Fatalf("head after 2 more = %+v, %v", h2, err)
	}
	if last, err := j.Latest(ctx); err != nil || last.Size != 3 {
		t.Fatalf("Head signed something: latest = %+v, %v", last, err)
	}
}

// originRules: an invalid origin is refused, a new journal keeps the one
// it was given, and an existing journal's origin cannot change.
func originRules(t *testing.T, b Backend) {
	if _, err := b.Open(t, evidence.Options{Origin: "bad origin+x"}); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("invalid origin: %v", err)
	}
	j := open(t, b, evidence.Options{Origin: "example.test/evidence"})
	if j.Origin() != "example.test/evidence" {
		t.Fatalf("origin %q", j.Origin())
	}
	if _, err := b.Open(t, evidence.Options{Origin: "other.test/x"}); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("changed origin: %v", err)
	}
	if k := open(t, b, evidence.Options{}); k.Origin() != "example.test/evidence" || k.JournalID() != j.JournalID() {
		t.Fatalf("reopened as %q %q", k.Origin(), k.JournalID())
	}
}
