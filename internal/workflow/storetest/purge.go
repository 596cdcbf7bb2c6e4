package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/retention"
	"github.com/webcodex/webcodex/internal/workflow"
)

// purgeBatch is the batch size the purge tests use: smaller than a
// session's events, so a session takes several batches.
const purgeBatch = 3

// closedWithEvents starts a session, appends calls read pairs and closes
// it.
func closedWithEvents(t *testing.T, svc *workflow.Service, calls int) workflow.Session {
	t.Helper()
	s := start(t, svc)
	for i := range calls {
		appendEvents(t, svc, s.ID, readPair("c"+string(rune('a'+i)))...)
	}
	closed, _, err := svc.Close(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	return closed
}

// purgeAll runs PurgeClosedEvents until it returns zero and sums it.
func purgeAll(t *testing.T, st Store, cutoff time.Time) retention.Count {
	t.Helper()
	var sum retention.Count
	for {
		p, err := st.PurgeClosedEvents(context.Background(), cutoff, purgeBatch)
		if err != nil {
			t.Fatal(err)
		}
		if p.Owners == 0 {
			return sum
		}
		if p.Items > purgeBatch {
			t.Fatalf("one batch removed %d events, more than %d", p.Items, purgeBatch)
		}
		sum.Owners += p.Owners
		sum.Items += p.Items
	}
}

// purgeClosedEvents: only closed sessions last updated before the cutoff
// lose their events; their headers say so (retention_truncated,
// events_purged) and keep their counters; the count before the purge is
// what the purge removes; active and newer sessions are untouched.
func purgeClosedEvents(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
	svc := workflow.NewService(st, nil)
	old := closedWithEvents(t, svc, 3) // 2 + 6 + 1 = 9 events
	cutoff := time.Now()
	newer := closedWithEvents(t, svc, 1)
	active := start(t, svc)

	want := retention.Count{Owners: 1, Items: old.EventsObserved}
	if got, err := st.CountClosedEvents(ctx, cutoff); err != nil || got != want {
		t.Fatalf("count = %+v, %v; want %+v", got, err, want)
	}
	if got := purgeAll(t, st, cutoff); got.Items != want.Items {
		t.Fatalf("purged %+v, want %d events", got, want.Items)
	}
	after := get(t, st, old.ID)
	if !after.RetentionTruncated || after.EventsPurged != old.EventsObserved || after.EventsObserved != old.EventsObserved || after.Counters != old.Counters {
		t.Fatalf("purged header = %+v, want truncated with events_purged %d and the counters kept", after, old.EventsObserved)
	}
	if evs := events(t, st, old.ID); len(evs) != 0 {
		t.Fatalf("%d events left after the purge", len(evs))
	}
	for _, s := range []workflow.Session{newer, active} {
		got := get(t, st, s.ID)
		if got.EventsPurged != 0 || got.RetentionTruncated || int64(len(events(t, st, s.ID))) != got.EventsObserved {
			t.Fatalf("session %s (%s) changed by the purge: %+v", s.ID, s.Lifecycle, got)
		}
	}
	if got, err := st.CountClosedEvents(ctx, cutoff); err != nil || got != (retention.Count{}) {
		t.Fatalf("count after the purge = %+v, %v; want zero", got, err)
	}
	if st, err := st.Status(ctx); err != nil || st.Events != int64(newer.EventsObserved+active.EventsObserved) {
		t.Fatalf("status after the purge = %+v, %v", st, err)
	}
}

// purgeAcrossAKill: a process killed between purge batches, or with a
// batch waiting for the writer, leaves every session consistent (its
// header's events_purged is exactly what is gone), and the next one
// finishes the purge.
func purgeAcrossAKill(t *testing.T, l env) {
	st := l.Open(t)
	svc := workflow.NewService(st, nil)
	old := closedWithEvents(t, svc, 4) // 11 events: four batches
	cutoff := time.Now()
	if p, err := st.PurgeClosedEvents(context.Background(), cutoff, purgeBatch); err != nil || p.Items != purgeBatch {
		t.Fatalf("first batch = %+v, %v", p, err)
	}
	// The next batch waits for the writer (or, on a database, skips the
	// locked row) when the process is killed.
	release := l.Hold(t, st, old.ID)
	go func() {
		// The process is killed: what this batch returns is not looked at.
		_, _ = st.PurgeClosedEvents(context.Background(), cutoff, purgeBatch)
	}()
	next := l.Crash(t, st)
	mid := get(t, next, old.ID)
	if left := int64(len(events(t, next, old.ID))); mid.EventsPurged != purgeBatch || left != old.EventsObserved-purgeBatch {
		t.Fatalf("after a kill: events_purged %d with %d events left, want %d and %d", mid.EventsPurged, left, purgeBatch, old.EventsObserved-purgeBatch)
	}
	release()
	purgeAll(t, next, cutoff)
	if got := get(t, next, old.ID); got.EventsPurged != old.EventsObserved || len(events(t, next, old.ID)) != 0 {
		t.Fatalf("after the next start's purge: %+v", got)
	}
}
