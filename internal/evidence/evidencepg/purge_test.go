package evidencepg_test

import (
	"context"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencepg"
	"github.com/webcodex/webcodex/internal/evidence/storetest"
	"github.com/webcodex/webcodex/internal/failure"
)

// TestPurgeAbortedMidBatch aborts a purge inside its second batch's
// transaction (its writes done, the context cancelled before the commit,
// as a replica losing its caller or its connection): the first batch stays
// with its log row, the second is wholly rolled back, the journal verifies
// clean, and the next purge finishes. (The SQLite journal's test kills a
// real process; here the database's transaction gives the same guarantee.)
func TestPurgeAbortedMidBatch(t *testing.T) {
	b := journal10(t)
	j := replica(t, b, evidence.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	batches := 0
	evidencepg.SetBeforePurgeCommit(func() {
		if batches++; batches == 2 {
			cancel()
		}
	})
	defer evidencepg.SetBeforePurgeCommit(nil)
	cutoff := storetest.T0.Add(8 * time.Millisecond)
	sum, err := j.PurgeBefore(ctx, "abort", cutoff, 2)
	if err == nil || sum.Purged != 2 || sum.Batches != 1 {
		t.Fatalf("aborted purge: %+v %v (%s)", sum, err, failure.KindOf(err))
	}
	rep := b.Verify(t, evidence.VerifyOptions{})
	storetest.WantKinds(t, rep)
	if rep.Purged != 2 || rep.OK != 8 || len(rep.PurgedRanges) != 1 || rep.PurgedRanges[0] != (evidence.IndexRange{First: 0, Last: 1}) {
		t.Fatalf("after the abort: purged %d ranges %v ok %d", rep.Purged, rep.PurgedRanges, rep.OK)
	}
	evidencepg.SetBeforePurgeCommit(nil)
	sum, err = j.PurgeBefore(context.Background(), "abort", cutoff, 2)
	if err != nil || sum.Purged != 6 || *sum.Range != (evidence.IndexRange{First: 2, Last: 7}) {
		t.Fatalf("the next purge: %+v %v", sum, err)
	}
	rep = b.Verify(t, evidence.VerifyOptions{})
	storetest.WantKinds(t, rep)
	if rep.Purged != 8 || rep.OK != 2 {
		t.Fatalf("after the next purge: purged %d ok %d", rep.Purged, rep.OK)
	}
}

// TestPurgedSpaceIsReused: on PostgreSQL a purge rewrites each record's
// row without its payload (the old version becomes dead), and once the
// table is vacuumed (autovacuum, in a server) the records appended after
// it reuse that space, so a journal whose payloads are purged as fast as
// records arrive grows only by what every record keeps. The test vacuums
// itself: autovacuum's timing is the server's.
func TestPurgedSpaceIsReused(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	j := replica(t, b, evidence.Options{})
	db := b.pool(t)
	size := func() int64 {
		t.Helper()
		var n int64
		if err := db.Pool.QueryRow(ctx, `SELECT pg_relation_size('evidence.records')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const n = 1000
	s0 := size()
	storetest.Fill(t, j, 0, n, "s")
	if _, err := j.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	s1 := size()
	storetest.PurgeFirst(t, j, n)
	if _, err := db.Pool.Exec(ctx, `VACUUM evidence.records`); err != nil {
		t.Fatal(err)
	}
	storetest.Fill(t, j, n, n, "s")
	s2 := size()
	t.Logf("records heap: empty %d bytes, after %d records %d, after purging them, a vacuum and %d more %d", s0, n, s1, n, s2)
	if s2-s1 > (s1-s0)/2 {
		t.Fatalf("the second %d records took %d bytes, the first %d: the purged space was not reused", n, s2-s1, s1-s0)
	}
}
