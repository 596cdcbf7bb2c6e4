package evidencedb_test

import (
	"context"
	"testing"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/failure"
)

// writerStats returns the journal writer's commits, jobs and lazy commits.
func writerStats(j *evidencedb.Journal) (commits, jobs, lazy int64) {
	w := j.DB().Writer
	commits, jobs = w.Stats()
	return commits, jobs, w.LazyCommits()
}

// TestAppendBehindIsLazyAndSeenByReaders: a behind append returns before
// it commits, commits lazily (no durable commit for it), and a reader
// asking right after the call sees it: the reader waits for the queued
// append instead of finding the journal without it.
func TestAppendBehindIsLazyAndSeenByReaders(t *testing.T) {
	ctx := context.Background()
	j := open(t, t.TempDir(), evidence.Options{})
	defer j.Close()
	c0, n0, l0 := writerStats(j)
	outcome := make(chan error, 1)
	r := rec(0, evidence.BindingInvalidClaim, "wc_sess_claimed")
	if err := j.AppendBehind(ctx, r, func(err error) { outcome <- err }); err != nil {
		t.Fatal(err)
	}
	entries, err := j.SessionRecords(ctx, "wc_sess_claimed", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Record.InvocationID != r.InvocationID || entries[0].Index != 0 {
		t.Fatalf("a reader right after the behind append sees %+v", entries)
	}
	// then was called before the reader's wait ended.
	select {
	case err := <-outcome:
		if err != nil {
			t.Fatalf("behind append: %v", err)
		}
	default:
		t.Fatal("the reader returned before the append's outcome was reported")
	}
	c1, n1, l1 := writerStats(j)
	if c1-c0 != 1 || n1-n0 != 1 || l1-l0 != 1 {
		t.Fatalf("commits +%d, jobs +%d, lazy commits +%d; want one lazy commit of one append", c1-c0, n1-n0, l1-l0)
	}
	if head, err := j.Head(ctx); err != nil || head.Size != 1 {
		t.Fatalf("head %+v %v", head, err)
	}
}

// TestBehindGatherSharesCommits: sequential behind appends (BehindGather
// lets the batch wait for the next ones) share lazy commits, land in queue
// order with dense indexes, sign the checkpoints due inside their batches,
// and the journal verifies.
func TestBehindGatherSharesCommits(t *testing.T) {
	if evidencedb.BehindGather <= 0 {
		t.Fatalf("BehindGather = %v: behind appends would not gather", evidencedb.BehindGather)
	}
	ctx := context.Background()
	dir := t.TempDir()
	j := open(t, dir, evidence.Options{CheckpointEvery: 16})
	c0, n0, l0 := writerStats(j)
	const n = 64
	for i := range n {
		if err := j.AppendBehind(ctx, rec(i, evidence.BindingSessionless, "s"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.WaitBehind(ctx); err != nil {
		t.Fatal(err)
	}
	c1, n1, l1 := writerStats(j)
	if n1-n0 != n || c1-c0 >= n || c1-c0 != l1-l0 {
		t.Fatalf("%d behind appends: jobs +%d in %d commits (%d lazy); want fewer commits than appends, all lazy", n, n1-n0, c1-c0, l1-l0)
	}
	entries, err := j.SessionRecords(ctx, "s", n)
	if err != nil || len(entries) != n {
		t.Fatalf("%d records (%v), want %d", len(entries), err, n)
	}
	for k, e := range entries { // newest first
		if want := n - 1 - k; e.Index != uint64(want) || e.Record.InvocationID != rec(want, evidence.BindingSessionless, "s").InvocationID {
			t.Fatalf("entry %d: index %d invocation %s, want index %d", k, e.Index, e.Record.InvocationID, want)
		}
	}
	cp, err := j.Latest(ctx)
	if err != nil || cp.Size != n {
		t.Fatalf("latest checkpoint %+v %v, want the one signed at %d inside a behind batch", cp.Checkpoint, err, n)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if rep := verify(t, dir, evidence.VerifyOptions{}); rep.Records != n {
		t.Fatalf("verify counted %d records, want %d", rep.Records, n)
	} else {
		wantKinds(t, rep)
	}
}

// TestAppendBehindRejectsInvalidRecordAtOnce: an invalid record is
// reported by AppendBehind itself; nothing is queued and then is never
// called.
func TestAppendBehindRejectsInvalidRecordAtOnce(t *testing.T) {
	ctx := context.Background()
	j := open(t, t.TempDir(), evidence.Options{})
	defer j.Close()
	queued := j.DB().Writer.Queued()
	r := rec(0, evidence.BindingSessionless, "s")
	r.Tool = ""
	called := false
	if err := j.AppendBehind(ctx, r, func(error) { called = true }); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("invalid record: %v, want invalid_arguments", err)
	}
	if err := j.WaitBehind(ctx); err != nil {
		t.Fatal(err)
	}
	if got := j.DB().Writer.Queued(); got != queued || called {
		t.Fatalf("an invalid record was queued (tickets %d -> %d, then called %v)", queued, got, called)
	}
	if head, err := j.Head(ctx); err != nil || head.Size != 0 {
		t.Fatalf("head %+v %v, want empty", head, err)
	}
}

// TestAppendBehindFailureReported: a behind append that fails in the
// writer (a reused invocation id) reports failure.Conflict to then; the
// appends of the same batch around it still commit, with dense indexes,
// and the journal verifies.
func TestAppendBehindFailureReported(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	j := open(t, dir, evidence.Options{})
	fill(t, j, 0, 1, "s")
	outcomes := make([]error, 3)
	for k, i := range []int{1, 0, 2} { // 0 exists already
		if err := j.AppendBehind(ctx, rec(i, evidence.BindingSessionless, "s"), func(err error) { outcomes[k] = err }); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.WaitBehind(ctx); err != nil {
		t.Fatal(err)
	}
	if outcomes[0] != nil || failure.KindOf(outcomes[1]) != failure.Conflict || outcomes[2] != nil {
		t.Fatalf("outcomes %v, want nil, conflict, nil", outcomes)
	}
	entries, err := j.SessionRecords(ctx, "s", 0)
	if err != nil || len(entries) != 3 || entries[0].Index != 2 || entries[0].Record.InvocationID != "inv-000002" ||
		entries[1].Index != 1 || entries[1].Record.InvocationID != "inv-000001" {
		t.Fatalf("records after a failed behind append: %+v (%v)", entries, err)
	}
	if _, err := j.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	wantKinds(t, verify(t, dir, evidence.VerifyOptions{}))
}

// TestSyncBehindMakesLazyAppendsDurable: after behind appends committed
// lazily, SyncBehind makes one durable commit; with nothing new since, it
// makes none.
func TestSyncBehindMakesLazyAppendsDurable(t *testing.T) {
	ctx := context.Background()
	j := open(t, t.TempDir(), evidence.Options{})
	defer j.Close()
	if err := j.AppendBehind(ctx, rec(0, evidence.BindingSessionless, "s"), nil); err != nil {
		t.Fatal(err)
	}
	if err := j.WaitBehind(ctx); err != nil {
		t.Fatal(err)
	}
	c0, _, l0 := writerStats(j)
	if err := j.SyncBehind(ctx); err != nil {
		t.Fatal(err)
	}
	c1, _, l1 := writerStats(j)
	if c1-c0 != 1 || l1 != l0 {
		t.Fatalf("SyncBehind: commits +%d, lazy +%d; want one durable commit", c1-c0, l1-l0)
	}
	if err := j.SyncBehind(ctx); err != nil {
		t.Fatal(err)
	}
	if c2, _, _ := writerStats(j); c2 != c1 {
		t.Fatalf("SyncBehind with nothing new committed %d times", c2-c1)
	}
}

// TestCloseKeepsQueuedBehindAppends: Close right after behind appends were
// queued commits every one of them, then makes them durable; a reopened
// journal holds them all.
func TestCloseKeepsQueuedBehindAppends(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	j := open(t, dir, evidence.Options{CheckpointEvery: 50})
	const n = 300 // more than one writer batch (sqlitedb.MaxBatch)
	for i := range n {
		if err := j.AppendBehind(ctx, rec(i, evidence.BindingSessionless, "s"), nil); err != nil {
			t.Fatal(err)
		}
	}
	c0, _, l0 := writerStats(j)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	c1, _, l1 := writerStats(j)
	if durable0, durable1 := c0-l0, c1-l1; durable1 != durable0+1 || l1 <= l0 {
		t.Fatalf("close: durable commits %d -> %d, lazy %d -> %d; want the queued appends committed lazily, then one durable commit",
			durable0, durable1, l0, l1)
	}
	k := open(t, dir, evidence.Options{})
	defer k.Close()
	head, err := k.Head(ctx)
	if err != nil || head.Size != n {
		t.Fatalf("reopened head %+v %v, want %d records", head, err, n)
	}
	wantKinds(t, verify(t, dir, evidence.VerifyOptions{}))
}
