package evidencedb_test

import (
	"context"
	"testing"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/failure"
)

// TestApplyOutboxIsExactlyOnce applies outbox items, replays them (as a
// start-up after a lost trim does), and checks that each record is in the
// journal once, in outbox order, that the watermark survives a reopen,
// that an invalid item is skipped and reported while the rest commit, that
// a record whose invocation already has one is kept as it was, and that
// the journal verifies.
func TestApplyOutboxIsExactlyOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const sess = "wc_sess_0123456789abcdef0123456789abcdef"
	j := open(t, dir, evidence.Options{})
	// Recovery wrote inv 3's record first.
	if _, err := j.Append(ctx, rec(3, evidence.BindingUnknown, sess)); err != nil {
		t.Fatal(err)
	}
	bad := rec(2, evidence.BindingVerified, sess)
	bad.Outcome = "maybe"
	items := []evidencedb.OutboxItem{
		{Seq: 1, Record: rec(1, evidence.BindingVerified, sess)},
		{Seq: 2, Record: bad},
		{Seq: 3, Record: rec(3, evidence.BindingVerified, sess)},
		{Seq: 4, Record: rec(4, evidence.BindingVerified, sess)},
	}
	skipped, err := j.ApplyOutbox(ctx, items[:2], false)
	if err != nil || len(skipped) != 1 || !failure.Is(skipped[0], failure.InvalidArguments) {
		t.Fatalf("first batch: skipped %v, err %v; want the invalid record skipped", skipped, err)
	}
	if applied, durable := j.Watermarks(); applied != 2 || durable != 0 {
		t.Fatalf("watermarks after a lazy batch = %d, %d; want 2, 0", applied, durable)
	}
	// The replay of everything: seq 1 and 2 are below the watermark.
	if _, err := j.ApplyOutbox(ctx, items, true); err != nil {
		t.Fatal(err)
	}
	if applied, durable := j.Watermarks(); applied != 4 || durable != 4 {
		t.Fatalf("watermarks after a durable batch = %d, %d; want 4, 4", applied, durable)
	}
	j.Close()

	j = open(t, dir, evidence.Options{})
	defer j.Close()
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
	if len(ids) != len(want) {
		t.Fatalf("records %v, want %v", ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("records %v, want %v", ids, want)
		}
	}
	if _, err := j.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if rep := verify(t, dir, evidence.VerifyOptions{}); !rep.Clean {
		t.Fatalf("verify: %s", dump(rep))
	}
}

// TestBeforeReadRunsBeforeEveryReader checks that the hook runs before the
// journal answers each kind of reader, and that its error is returned.
func TestBeforeReadRunsBeforeEveryReader(t *testing.T) {
	ctx := context.Background()
	j := open(t, t.TempDir(), evidence.Options{})
	defer j.Close()
	const sess = "wc_sess_0123456789abcdef0123456789abcdef"
	calls := 0
	j.SetBeforeRead(func(ctx context.Context) error {
		calls++
		_, err := j.ApplyOutbox(ctx, []evidencedb.OutboxItem{{Seq: int64(calls), Record: rec(calls, evidence.BindingVerified, sess)}}, false)
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
	j.SetBeforeRead(func(context.Context) error { return failure.New(failure.Unavailable, "ledger closed") })
	if _, err := j.SessionCounts(ctx, sess); !failure.Is(err, failure.Unavailable) {
		t.Fatalf("SessionCounts with a failing hook: %v, want unavailable", err)
	}
}
