package auditdb_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditdb"
	"github.com/webcodex/webcodex/internal/audit/auditrow"
	"github.com/webcodex/webcodex/internal/audit/storetest"
	"github.com/webcodex/webcodex/internal/failure"
)

func countEvents(t *testing.T, st *auditdb.Store) int {
	t.Helper()
	var n int
	if err := st.DB().Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM action_events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func okEvent() audit.Event {
	return audit.Event{EventView: audit.EventView{Status: audit.EventSuccess}}
}

// TestIdleReuseClock drives the 1,800 s idle window with the bubble's fake
// clock: reuse strictly inside it, a new session at exactly the limit, and
// activity (an event) restarting the window.
func TestIdleReuseClock(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		// Opened inside the bubble: the writer goroutine belongs to it.
		st, err := auditdb.Open(ctx, filepath.Join(dir, auditdb.FileName))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		svc := audit.NewService(st, nil) // time.Now is the bubble's clock
		first, _, err := svc.Affinity(ctx, owner, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Record(ctx, first, okEvent(), audit.Attribution{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(audit.IdleReuse - time.Second)
		if id, _, _ := svc.Affinity(ctx, owner, ""); id != first {
			t.Fatalf("1 s inside the idle window: got %s, want reuse of %s", id, first)
		}
		if err := svc.Record(ctx, first, okEvent(), audit.Attribution{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(audit.IdleReuse - time.Second)
		if id, _, _ := svc.Affinity(ctx, owner, ""); id != first {
			t.Fatalf("activity did not restart the idle window: got %s", id)
		}
		time.Sleep(time.Second)
		second, _, err := svc.Affinity(ctx, owner, "")
		if err != nil || second == first {
			t.Fatalf("idle for exactly %s: got %s (%v), want a new session", audit.IdleReuse, second, err)
		}
		if id, _, _ := svc.Affinity(ctx, owner, ""); id != second {
			t.Fatalf("the new session is not reused: %s", id)
		}
	})
}

// gatedStore blocks the first AppendEvents until released, and records
// the size of every batch.
type gatedStore struct {
	audit.Store
	once    sync.Once
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	sizes   []int
}

// gatedService opens an audit.db in dir, closed when t ends, and starts a
// service on it behind a gatedStore.
func gatedService(t *testing.T, dir string) (*auditdb.Store, *gatedStore, *audit.Service) {
	t.Helper()
	st, err := auditdb.Open(ctx, filepath.Join(dir, auditdb.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g := &gatedStore{Store: st, entered: make(chan struct{}), release: make(chan struct{})}
	svc := audit.NewService(g, nil)
	svc.Start(nil)
	return st, g, svc
}

// submitter returns a function that Submits one event into session from
// a goroutine of wg and counts it in done once Submit returned.
func submitter(t *testing.T, svc *audit.Service, wg *sync.WaitGroup, session string, done *atomic.Int64) func() {
	return func() {
		wg.Go(func() {
			if err := svc.Submit(ctx, time.Minute, session, okEvent(), audit.Attribution{}); err != nil {
				t.Error(err)
			}
			done.Add(1)
		})
	}
}

func (g *gatedStore) AppendEvents(ctx context.Context, evs []audit.Event, max int, now time.Time) error {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.entered)
		<-g.release
	}
	g.mu.Lock()
	g.sizes = append(g.sizes, len(evs))
	g.mu.Unlock()
	return g.Store.AppendEvents(ctx, evs, max, now)
}

// TestBackgroundWriter: Submit returns only once its event is committed;
// what queues while a batch commits is committed as one batch (group
// commit); on a full queue Submit waits and then writes synchronously
// instead of dropping; Stop leaves nothing unwritten. The bubble's
// synctest.Wait says when every Submit is blocked (queued or waiting).
func TestBackgroundWriter(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		st, g, svc := gatedService(t, dir)
		var wg sync.WaitGroup
		var returned atomic.Int64
		submit := submitter(t, svc, &wg, "w", &returned)
		submit()
		<-g.entered // the writer holds the first event
		for i := 0; i < audit.QueueSize; i++ {
			submit()
		}
		synctest.Wait() // every Submit is blocked: the queue is full
		if n, r := countEvents(t, st), returned.Load(); n != 0 || r != 0 {
			t.Fatalf("while the writer is held: %d events written, %d Submits returned; want 0 and 0", n, r)
		}
		// The queue is full: Submit waits up to 50 ms for room, then
		// writes the event itself before returning.
		if err := svc.Submit(ctx, 50*time.Millisecond, "w", okEvent(), audit.Attribution{}); err != nil {
			t.Fatal(err)
		}
		if n := countEvents(t, st); n != 1 {
			t.Fatalf("full queue: %d events written, want the 1 synchronous one", n)
		}
		close(g.release)
		wg.Wait()
		// Every Submit has returned, so every event is durable, without
		// Stop. The session keeps at most MaxEventsPerSession; its
		// counter is cumulative.
		sess, _, err := svc.SessionWithEvents(ctx, "w", 1)
		if err != nil {
			t.Fatal(err)
		}
		// (The last batch took it past the bound: it holds exactly the
		// bound less the trim slack.)
		kept := audit.MaxEventsPerSession - auditrow.TrimSlack(audit.MaxEventsPerSession)
		if want := int64(audit.QueueSize + 2); sess.TotalActions != want || countEvents(t, st) != kept {
			t.Fatalf("after every Submit returned: total_actions %d (want %d), %d events kept", sess.TotalActions, want, countEvents(t, st))
		}
		// Batches: the held one, the synchronous one, then the queue
		// in full batches.
		g.mu.Lock()
		sizes := slices.Clone(g.sizes)
		g.mu.Unlock()
		want := []int{1, 1}
		for range audit.QueueSize / audit.MaxWriteBatch {
			want = append(want, audit.MaxWriteBatch)
		}
		if !slices.Equal(sizes, want) {
			t.Fatalf("batch sizes %v, want %v", sizes, want)
		}
		if err := svc.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if svc.WriteFailures() != 0 {
			t.Fatalf("write failures: %d", svc.WriteFailures())
		}
		// After Stop, Submit still writes (synchronously).
		if err := svc.Submit(ctx, time.Minute, "w", okEvent(), audit.Attribution{}); err != nil {
			t.Fatal(err)
		}
		if sess, _, _ := svc.SessionWithEvents(ctx, "w", 1); sess.TotalActions != int64(audit.QueueSize+3) {
			t.Fatalf("Submit after Stop: total_actions %d", sess.TotalActions)
		}
	})
}

// setPragma runs a PRAGMA on the store's only write connection.
func setPragma(t *testing.T, st *auditdb.Store, pragma string) {
	t.Helper()
	err := st.DB().Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "PRAGMA "+pragma)
		return err
	})
	if err != nil {
		t.Fatalf("PRAGMA %s: %v", pragma, err)
	}
}

// TestUnwritableDatabase: a read-only or full audit.db fails writes with
// a counted unavailable error, leaves the stored data unchanged, and
// reads keep working.
func TestUnwritableDatabase(t *testing.T) {
	for _, c := range []struct {
		name, pragma string
		// smallWritesFail: a full file may still take a tiny row in its
		// free space; a read-only one takes none.
		smallWritesFail bool
	}{
		{"read-only", "query_only = 1", true},
		{"full", "max_page_count = 1", false}, // clamps to the current size
	} {
		t.Run(c.name, func(t *testing.T) {
			st, _ := open(t)
			svc := audit.NewService(st, nil)
			svc.Start(nil)
			defer svc.Stop(ctx)
			if err := svc.Record(ctx, "kept", okEvent(), audit.Attribution{}); err != nil {
				t.Fatal(err)
			}
			setPragma(t, st, c.pragma)
			// ~50 KB of summary: more than the free space of the file's
			// pages, so that a full database must grow to take it.
			big := okEvent()
			big.Summary = map[string]any{}
			for i := range 60 {
				big.Summary[fmt.Sprintf("note_%02d", i)] = strings.Repeat("x", 900)
			}
			if err := svc.Record(ctx, "kept", big, audit.Attribution{}); !failure.Is(err, failure.Unavailable) {
				t.Fatalf("Record = %v, want unavailable", err)
			}
			// "kept" was made by its first event: it has no principal.
			if id, _, err := svc.Affinity(ctx, "", ""); err != nil || id != "kept" {
				t.Fatalf("idle reuse needs no write: %q %v", id, err)
			}
			if _, _, err := svc.Affinity(ctx, owner, "new-explicit"); c.smallWritesFail && !failure.Is(err, failure.Unavailable) {
				t.Fatalf("creating a session = %v, want unavailable", err)
			}
			if err := svc.Submit(ctx, time.Minute, "kept", big, audit.Attribution{}); !failure.Is(err, failure.Unavailable) {
				t.Fatalf("Submit = %v, want unavailable (the writer's commit failed)", err)
			}
			if got := svc.WriteFailures(); got != 2 {
				t.Fatalf("%d failures counted, want 2 (Record, Submit)", got)
			}
			sess, evs, err := svc.SessionWithEvents(ctx, "kept", 10)
			if err != nil || sess.TotalActions != 1 || len(evs) != 1 || evs[0].Summary["note_00"] != nil {
				t.Fatalf("the stored session changed or cannot be read: %+v %d %v", sess, len(evs), err)
			}
			if _, err := svc.ListSessions(ctx, "", 0); err != nil {
				t.Fatalf("sessions: %v", err)
			}
			if _, err := svc.Stats(ctx, "", 0); err != nil {
				t.Fatalf("stats: %v", err)
			}
		})
	}
}

// BenchmarkAppendBatch is the contract's append benchmark on audit.db
// (one fsync per batch).
func BenchmarkAppendBatch(b *testing.B) {
	storetest.BenchmarkAppendBatch(b, func(b *testing.B) audit.Store {
		st, _ := open(b)
		return st
	})
}

// TestStopWaitsForQueued: Stop while a batch is being written and events
// are queued behind it returns only once every one of them is committed
// (and its result handed to its Submit); a Submit after Stop writes its
// own event.
func TestStopWaitsForQueued(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		st, g, svc := gatedService(t, dir)
		var wg sync.WaitGroup
		var answered atomic.Int64
		submit := submitter(t, svc, &wg, "s", &answered)
		submit()
		<-g.entered // the first event's batch is being written
		for range 3 {
			submit()
		}
		synctest.Wait() // three Submits queued
		stopped := make(chan error, 1)
		go func() { stopped <- svc.Stop(ctx) }()
		synctest.Wait() // Stop waiting
		select {
		case err := <-stopped:
			t.Fatalf("Stop returned (%v) while a batch and 3 queued events were unwritten", err)
		default:
		}
		if n := answered.Load(); n != 0 {
			t.Fatalf("%d Submits answered before their batch was written", n)
		}
		close(g.release)
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		if n := countEvents(t, st); n != 4 {
			t.Fatalf("after Stop: %d events written, want 4", n)
		}
		wg.Wait()
		g.mu.Lock()
		sizes := slices.Clone(g.sizes)
		g.mu.Unlock()
		if !slices.Equal(sizes, []int{1, 3}) {
			t.Fatalf("batch sizes %v, want [1 3]: the one being written, then the three queued behind it", sizes)
		}
		if err := svc.Submit(ctx, time.Minute, "s", okEvent(), audit.Attribution{}); err != nil || countEvents(t, st) != 5 {
			t.Fatalf("Submit after Stop: %v, %d events", err, countEvents(t, st))
		}
	})
}

// panickyStore's first AppendEvents closes entered, waits for release
// and panics.
type panickyStore struct {
	audit.Store
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (p *panickyStore) AppendEvents(ctx context.Context, evs []audit.Event, max int, now time.Time) error {
	first := false
	p.once.Do(func() { first = true })
	if first {
		close(p.entered)
		<-p.release
		panic("store broke")
	}
	return p.Store.AppendEvents(ctx, evs, max, now)
}

// TestPanicFailsTheBatchOnly: a store that panics while a Submit writes
// a batch fails that batch's event, counted, and the Submits queued
// behind it are still written in the next batch, as are later ones: the
// group commit goes on.
func TestPanicFailsTheBatchOnly(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		st, err := auditdb.Open(ctx, filepath.Join(dir, auditdb.FileName))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		p := &panickyStore{Store: st, entered: make(chan struct{}), release: make(chan struct{})}
		svc := audit.NewService(p, nil)
		svc.Start(nil)
		defer svc.Stop(ctx)
		first := make(chan error, 1)
		go func() { first <- svc.Submit(ctx, time.Minute, "p", okEvent(), audit.Attribution{}) }()
		<-p.entered
		var wg sync.WaitGroup
		var failed atomic.Int64
		for range 3 {
			wg.Go(func() {
				if err := svc.Submit(ctx, time.Minute, "p", okEvent(), audit.Attribution{}); err != nil {
					failed.Add(1)
				}
			})
		}
		synctest.Wait() // three queued behind the batch being written
		close(p.release)
		if err := <-first; !failure.Is(err, failure.Internal) {
			t.Fatalf("the panicking batch's Submit = %v, want internal", err)
		}
		wg.Wait()
		if n := failed.Load(); n != 0 {
			t.Fatalf("%d of the queued Submits failed; the panic was the first batch's only", n)
		}
		if err := svc.Submit(ctx, time.Minute, "p", okEvent(), audit.Attribution{}); err != nil {
			t.Fatalf("Submit after the panic: %v", err)
		}
		if n, f := countEvents(t, st), svc.WriteFailures(); n != 4 || f != 1 {
			t.Fatalf("%d events written, %d failures counted; want 4 and 1", n, f)
		}
	})
}
