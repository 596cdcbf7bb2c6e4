package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/retention"
)

// purgeBatch is the batch size the purge test uses: smaller than what it
// purges, so the purge takes several batches.
const purgeBatch = 2

// purgeEventsBefore: only events that ended before the cutoff go, oldest
// first and at most a batch at a time; each session keeps its counters
// and the count of events it holds follows; the count before the purge is
// what the purge removes.
func purgeEventsBefore(t *testing.T, open func(*testing.T) Backend) {
	b := open(t)
	p, ok := b.Store.(audit.EventPurger)
	if !ok {
		t.Fatalf("%T is no audit.EventPurger", b.Store)
	}
	ev := func(session, id string, ended int64) audit.Event {
		return audit.Event{EventView: audit.EventView{EventID: id, SessionID: session, Status: audit.EventSuccess, StartedAt: ended, EndedAt: ended}}
	}
	batch := []audit.Event{ev("a", "a1", 100), ev("b", "b1", 101), ev("a", "a2", 102), ev("a", "a3", 200), ev("b", "b2", 201)}
	if err := b.Store.AppendEvents(ctx, batch, 0, time.Unix(300, 0)); err != nil {
		t.Fatal(err)
	}
	before, _, err := b.Store.Session(ctx, "a", 10)
	if err != nil {
		t.Fatal(err)
	}
	cutoff := time.Unix(150, 0)
	want := retention.Count{Owners: 2, Items: 3}
	if got, err := p.CountEventsBefore(ctx, cutoff); err != nil || got != want {
		t.Fatalf("count = %+v, %v; want %+v", got, err, want)
	}
	var sum retention.Count
	for {
		got, err := p.PurgeEventsBefore(ctx, cutoff, purgeBatch)
		if err != nil {
			t.Fatal(err)
		}
		if got.Items == 0 {
			break
		}
		if got.Items > purgeBatch {
			t.Fatalf("one batch removed %d events, more than %d", got.Items, purgeBatch)
		}
		sum.Items += got.Items
	}
	if sum.Items != want.Items {
		t.Fatalf("purged %d events, want %d", sum.Items, want.Items)
	}
	for session, ids := range map[string][]string{"a": {"a3"}, "b": {"b2"}} {
		if got := eventIDs(t, b, session); !slices.Equal(got, ids) {
			t.Fatalf("session %s holds %v after the purge, want %v", session, got, ids)
		}
		if n, err := b.Raw.Retained(ctx, session); err != nil || n != 1 {
			t.Fatalf("session %s: retained %d, %v; want 1", session, n, err)
		}
	}
	after, _, err := b.Store.Session(ctx, "a", 10)
	if err != nil || after.TotalActions != before.TotalActions {
		t.Fatalf("session a after the purge: %+v, %v; want its counters kept (%d actions)", after, err, before.TotalActions)
	}
	if got, err := p.CountEventsBefore(ctx, cutoff); err != nil || got != (retention.Count{}) {
		t.Fatalf("count after the purge = %+v, %v; want zero", got, err)
	}
}
