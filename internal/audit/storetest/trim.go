package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditrow"
	"github.com/webcodex/webcodex/internal/failure"
)

// batchesTrimToExactlyTheNewest appends batches of several sizes that
// mix two sessions and checks after each that every session holds
// exactly its newest maxEvents events, in order.
func batchesTrimToExactlyTheNewest(t *testing.T, open func(*testing.T) Backend) {
	b := open(t)
	st := b.Store
	const maxEvents = 7
	sent := map[string][]string{}
	n := 0
	for _, size := range []int{1, 3, 6, 1, 9, 2, 20, 1, 1} {
		var batch []audit.Event
		for range size {
			session := []string{"a", "b"}[n%3/2] // a, a, b, a, a, b, ...
			id := fmt.Sprintf("e%03d", n)
			n++
			sent[session] = append(sent[session], id)
			batch = append(batch, audit.Event{EventView: audit.EventView{EventID: id, SessionID: session, Status: audit.EventSuccess}})
		}
		if err := st.AppendEvents(ctx, batch, maxEvents, time.Now()); err != nil {
			t.Fatal(err)
		}
		for session, ids := range sent {
			want := ids[max(0, len(ids)-maxEvents):]
			if got := eventIDs(t, b, session); !slices.Equal(got, want) {
				t.Fatalf("after %d events, session %s holds %v, want %v", n, session, got, want)
			}
		}
	}
}

// batchedTrimKeepsTheNewest: with a bound of 16 (a slack of 2), a
// session holds all its events up to 16, never more, and an append that
// takes it past 16 leaves exactly its newest 14, whatever the batch sizes
// and however two sessions' events mix in one batch.
func batchedTrimKeepsTheNewest(t *testing.T, open func(*testing.T) Backend) {
	b := open(t)
	st := b.Store
	const maxEvents = 16
	if s := auditrow.TrimSlack(maxEvents); s != 2 {
		t.Fatalf("TrimSlack(%d) = %d, want 2", maxEvents, s)
	}
	sent := map[string][]string{}
	held := map[string]int{} // what the session must hold
	full := false            // session a held exactly the bound once
	n := 0
	for _, size := range []int{5, 5, 5, 1, 1, 1, 1, 2, 1, 1, 30, 1, 3} {
		var batch []audit.Event
		added := map[string]int{}
		for range size {
			session := []string{"a", "b"}[n%3/2]
			id := fmt.Sprintf("e%03d", n)
			n++
			sent[session] = append(sent[session], id)
			added[session]++
			batch = append(batch, audit.Event{EventView: audit.EventView{EventID: id, SessionID: session, Status: audit.EventSuccess}})
		}
		if err := st.AppendEvents(ctx, batch, maxEvents, time.Now()); err != nil {
			t.Fatal(err)
		}
		for session, k := range added {
			if held[session] += k; held[session] > maxEvents {
				held[session] = maxEvents - 2
			}
		}
		full = full || held["a"] == maxEvents
		for session, ids := range sent {
			want := ids[len(ids)-held[session]:]
			if got := eventIDs(t, b, session); !slices.Equal(got, want) {
				t.Fatalf("after %d events, session %s holds %v, want its newest %d: %v", n, session, got, len(want), want)
			}
			if n, err := b.Raw.Retained(ctx, session); err != nil || n != int64(len(want)) {
				t.Fatalf("session %s's stored retained count is %d (%v), want %d", session, n, err, len(want))
			}
		}
	}
	if !full {
		t.Fatalf("the batches never left session a at the bound (held %v): the case tests less than it says", held)
	}
}

// writerBatchBounds: concurrent Submits are written in batches of at
// most MaxWriteBatch, every event exactly once, each before its Submit
// returns.
func writerBatchBounds(t *testing.T, open func(*testing.T) Backend) {
	bs := &batchStore{Store: open(t).Store}
	svc := audit.NewService(bs, nil)
	svc.Start(nil)
	const n = 3*audit.MaxWriteBatch + 7
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 8 {
				if err := svc.Submit(ctx, time.Minute, "b", okEvent(), audit.Attribution{}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	// Every Submit returned: every event is committed before Stop.
	if sess, _, err := svc.SessionWithEvents(ctx, "b", 1); err != nil || sess.TotalActions != n {
		t.Fatalf("after every Submit returned: total_actions %d (%v), want %d", sess.TotalActions, err, n)
	}
	if err := svc.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, s := range bs.sizes {
		if s < 1 || s > audit.MaxWriteBatch {
			t.Errorf("batch of %d events", s)
		}
		total += s
	}
	sess, _, err := svc.SessionWithEvents(ctx, "b", 1)
	if err != nil {
		t.Fatal(err)
	}
	if total != n || sess.TotalActions != n {
		t.Fatalf("%d events in batches, total_actions %d, want %d", total, sess.TotalActions, n)
	}
}

// batchCounters: one batch spanning sessions updates each session's
// counters by its own events only.
func batchCounters(t *testing.T, open func(*testing.T) Backend) {
	st := open(t).Store
	ev := func(id, eid, status string, ended, ms int64, files ...string) audit.Event {
		return audit.Event{EventView: audit.EventView{EventID: eid, SessionID: id, Status: status, StartedAt: ended, EndedAt: ended,
			DurationMS: ms, ChangedFiles: files, IDs: map[string]string{"job_id": "j-" + eid}}}
	}
	batch := []audit.Event{
		ev("a", "1", audit.EventSuccess, 100, 5, "x.go"),
		ev("b", "2", audit.EventFailed, 101, 7),
		ev("a", "3", audit.EventTimeoutOrUnknown, 99, 11, "y.go", "z.go"),
		ev("c", "4", audit.EventWarning, 102, 1),
		ev("a", "5", audit.EventFailed, 103, 2),
	}
	if err := st.AppendEvents(ctx, batch, 2, time.Unix(200, 0)); err != nil {
		t.Fatal(err)
	}
	want := map[string]audit.Session{
		"a": {TotalActions: 3, SuccessCount: 1, FailedCount: 1, TimeoutOrUnknownCount: 1, TotalDurationMS: 18, ChangedFilesCount: 3, JobIDsCount: 3},
		"b": {TotalActions: 1, FailedCount: 1, TotalDurationMS: 7, JobIDsCount: 1},
		"c": {TotalActions: 1, WarningCount: 1, TotalDurationMS: 1, JobIDsCount: 1},
	}
	firstLast := map[string][2]int64{"a": {99, 103}, "b": {101, 101}, "c": {102, 102}}
	for id, w := range want {
		s, evs, err := st.Session(ctx, id, 10)
		if err != nil {
			t.Fatal(err)
		}
		got := audit.Session{TotalActions: s.TotalActions, SuccessCount: s.SuccessCount, FailedCount: s.FailedCount,
			TimeoutOrUnknownCount: s.TimeoutOrUnknownCount, WarningCount: s.WarningCount, TotalDurationMS: s.TotalDurationMS,
			ChangedFilesCount: s.ChangedFilesCount, JobIDsCount: s.JobIDsCount}
		if got != w || *s.FirstEventAt != firstLast[id][0] || *s.LastEventAt != firstLast[id][1] || s.UpdatedAt != 200 {
			t.Errorf("session %s: %+v", id, s)
		}
		if id == "a" && (len(evs) != 2 || evs[0].EventID != "3" || evs[1].EventID != "5") {
			t.Errorf("session a keeps %d events (max 2): %+v", len(evs), evs)
		}
	}
	// All or none: a batch with a duplicate event id writes nothing.
	if err := st.AppendEvents(ctx, []audit.Event{ev("d", "6", audit.EventSuccess, 1, 1), ev("d", "5", audit.EventSuccess, 1, 1)}, 10, time.Unix(300, 0)); err == nil {
		t.Fatal("duplicate event id accepted")
	}
	if _, _, err := st.Session(ctx, "d", 10); !failure.Is(err, failure.NotFound) {
		t.Fatalf("a failed batch left session d: %v", err)
	}
}

// affinityCache: repeated requests resolve from memory for
// AffinityCacheTTL, and the cache never answers differently from the
// store: activity in another session or a close sends the next request
// to the store.
func affinityCache(t *testing.T, open func(*testing.T) Backend) {
	cs := &countingStore{Store: open(t).Store}
	clk := NewClock(time.Unix(1_800_000_000, 0))
	svc := audit.NewService(cs, clk.Now)
	idle, _, _ := svc.Affinity(ctx, owner, "")
	for range 5 {
		if id, _, _ := svc.Affinity(ctx, owner, ""); id != idle {
			t.Fatalf("cached idle answer %s, want %s", id, idle)
		}
		svc.Record(ctx, idle, okEvent(), audit.Attribution{})
	}
	if cs.resolves != 1 {
		t.Fatalf("%d store look-ups for 6 idle requests within the TTL, want 1", cs.resolves)
	}
	clk.Add(audit.AffinityCacheTTL)
	svc.Affinity(ctx, owner, "")
	if cs.resolves != 2 {
		t.Fatalf("after the TTL: %d look-ups, want 2", cs.resolves)
	}
	// Activity in an explicit session makes it the most recent one.
	clk.Add(time.Second)
	svc.Affinity(ctx, owner, "explicit")
	svc.Record(ctx, "explicit", okEvent(), audit.Attribution{})
	if id, _, _ := svc.Affinity(ctx, owner, ""); id != "explicit" {
		t.Fatalf("idle reuse after activity elsewhere: %s, want the store's answer explicit", id)
	}
	if _, err := svc.CloseSession(ctx, "explicit"); err != nil {
		t.Fatal(err)
	}
	if id, _, _ := svc.Affinity(ctx, owner, ""); id != idle {
		t.Fatalf("idle reuse after closing the cached session: %s, want %s", id, idle)
	}
}

// countingStore counts Resolve calls that reach the store.
type countingStore struct {
	audit.Store
	resolves int
}

func (c *countingStore) Resolve(ctx context.Context, req audit.ResolveRequest) (audit.Resolved, error) {
	c.resolves++
	return c.Store.Resolve(ctx, req)
}

// batchStore records the size of every AppendEvents batch.
type batchStore struct {
	audit.Store
	mu    sync.Mutex
	sizes []int
}

func (b *batchStore) AppendEvents(ctx context.Context, evs []audit.Event, max int, now time.Time) error {
	b.mu.Lock()
	b.sizes = append(b.sizes, len(evs))
	b.mu.Unlock()
	return b.Store.AppendEvents(ctx, evs, max, now)
}
