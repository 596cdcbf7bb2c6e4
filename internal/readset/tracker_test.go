package readset_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/readset"
	"github.com/webcodex/webcodex/internal/readset/readsetdb"
)

// TestBounds pins the read set's bounds.
func TestBounds(t *testing.T) {
	if readset.MaxReadsPerSession != 512 || readset.MaxNoticesPerResult != 20 || readset.MaxObservationsPerCall != 64 ||
		readset.QueueCalls != 1024 || readset.ReadRefresh != time.Minute {
		t.Fatalf("bounds changed: %d %d %d %d %s", readset.MaxReadsPerSession, readset.MaxNoticesPerResult, readset.MaxObservationsPerCall,
			readset.QueueCalls, readset.ReadRefresh)
	}
}

// gated is a real store whose Record waits for release after telling
// entered, so a test can hold the Tracker's writer.
type gated struct {
	readset.Store
	entered chan struct{}
	release chan struct{}
}

func (g *gated) Record(ctx context.Context, obs []readset.Observation) (bool, error) {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.release
	return g.Store.Record(ctx, obs)
}

func openStore(t *testing.T) readset.Store {
	st, err := readsetdb.Open(context.Background(), filepath.Join(t.TempDir(), readsetdb.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func obs(session, path string, n int) readset.Observation {
	return readset.Observation{Owner: "fp", Project: "agent:local:p", Session: session, Path: path,
		SHA256: fmt.Sprintf("%064x", n), At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestTrackerDropsWhenFull: with the writer held, QueueCalls calls wait in
// the queue and the next is dropped and counted instead of waiting; a
// call over MaxObservationsPerCall keeps its first ones; released, Flush
// returns once all queued observations are stored.
func TestTrackerDropsWhenFull(t *testing.T) {
	g := &gated{Store: openStore(t), entered: make(chan struct{}, 1), release: make(chan struct{})}
	tr := readset.NewTracker(g, quiet)
	defer tr.Close()
	if !tr.Record([]readset.Observation{obs("wc_sess_a", "first", 1)}) {
		t.Fatal("first call dropped")
	}
	<-g.entered
	for i := range readset.QueueCalls {
		if !tr.Record([]readset.Observation{obs("wc_sess_a", fmt.Sprintf("q%04d", i), 1)}) {
			t.Fatalf("call %d dropped before the queue was full", i)
		}
	}
	if tr.Record([]readset.Observation{obs("wc_sess_b", "late", 1), obs("wc_sess_b", "late2", 1)}) || tr.Dropped() != 2 {
		t.Fatalf("a full queue took a call (dropped %d)", tr.Dropped())
	}
	close(g.release)
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var many []readset.Observation
	for i := range readset.MaxObservationsPerCall + 3 {
		many = append(many, obs("wc_sess_c", fmt.Sprintf("m%03d", i), 1))
	}
	if !tr.Record(many) || tr.Dropped() != 5 {
		t.Fatalf("over the per-call bound: dropped %d, want 5", tr.Dropped())
	}
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, _ := g.Reads(ctx, "wc_sess_a", "agent:local:p")
	b, _ := g.Reads(ctx, "wc_sess_b", "agent:local:p")
	c, _ := g.Reads(ctx, "wc_sess_c", "agent:local:p")
	if len(a) != readset.MaxReadsPerSession || len(b) != 0 || len(c) != readset.MaxObservationsPerCall || tr.Failed() != 0 {
		t.Fatalf("stored %d/%d/%d reads, failed %d", len(a), len(b), len(c), tr.Failed())
	}
}

// TestTrackerTake: a notice is delivered once, in a block with the hint;
// a notice for a path the call itself observed is removed unshown.
func TestTrackerTake(t *testing.T) {
	tr := readset.NewTracker(openStore(t), quiet)
	defer tr.Close()
	ctx := context.Background()
	tr.Record([]readset.Observation{obs("wc_sess_a", "x.go", 1), obs("wc_sess_a", "y.go", 1)})
	w1, w2 := obs("wc_sess_b", "x.go", 2), obs("wc_sess_b", "y.go", 2)
	w1.Wrote, w2.Wrote = true, true
	tr.Record([]readset.Observation{w1, w2})
	if err := tr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := tr.Take(ctx, "", "agent:local:p", nil); n != nil || err != nil {
		t.Fatalf("a call without a session got %+v %v", n, err)
	}
	n, err := tr.Take(ctx, "wc_sess_a", "agent:local:p", map[string]bool{"y.go": true})
	if err != nil || n == nil || len(n.Files) != 1 || n.Files[0].Path != "x.go" || n.Files[0].ChangedBy != "wc_sess_b" ||
		n.Total != 1 || n.Truncated || n.Hint != readset.NoticeHint {
		t.Fatalf("took %+v %v", n, err)
	}
	if n, err := tr.Take(ctx, "wc_sess_a", "agent:local:p", nil); n != nil || err != nil {
		t.Fatalf("delivered again: %+v %v", n, err)
	}
}

// TestTrackerSkipsInvalid: an invalid observation is dropped and counted
// alone; the call's valid ones are recorded.
func TestTrackerSkipsInvalid(t *testing.T) {
	st := openStore(t)
	tr := readset.NewTracker(st, quiet)
	defer tr.Close()
	bad := obs("wc_sess_a", "bad", 1)
	bad.SHA256 = "not a digest"
	tr.Record([]readset.Observation{bad, obs("wc_sess_a", "x.go", 1)})
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rs, err := st.Reads(context.Background(), "wc_sess_a", "agent:local:p")
	if err != nil || len(rs) != 1 || rs[0].Path != "x.go" || tr.Dropped() != 1 || tr.Failed() != 0 {
		t.Fatalf("reads %v %v, dropped %d failed %d", rs, err, tr.Dropped(), tr.Failed())
	}
}

// TestTrackerForget: a forgotten session's read set is removed behind the
// caller, after the observations queued before it.
func TestTrackerForget(t *testing.T) {
	st := openStore(t)
	tr := readset.NewTracker(st, quiet)
	defer tr.Close()
	tr.Record([]readset.Observation{obs("wc_sess_a", "x.go", 1), obs("wc_sess_b", "x.go", 1)})
	if !tr.Forget("wc_sess_a") || tr.Forget("") {
		t.Fatal("Forget refused a session, or took none")
	}
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	a, _ := st.Reads(context.Background(), "wc_sess_a", "agent:local:p")
	b, _ := st.Reads(context.Background(), "wc_sess_b", "agent:local:p")
	if len(a) != 0 || len(b) != 1 {
		t.Fatalf("after Forget: %v %v", a, b)
	}
}

// TestTrackerClose: Close applies what is queued; a call after it is
// dropped.
func TestTrackerClose(t *testing.T) {
	st := openStore(t)
	tr := readset.NewTracker(st, quiet)
	tr.Record([]readset.Observation{obs("wc_sess_a", "x.go", 1)})
	tr.Close()
	if rs, err := st.Reads(context.Background(), "wc_sess_a", "agent:local:p"); err != nil || len(rs) != 1 {
		t.Fatalf("after Close: %v %v", rs, err)
	}
	if tr.Record([]readset.Observation{obs("wc_sess_a", "y.go", 1)}) || tr.Dropped() != 1 || tr.Flush(context.Background()) != nil {
		t.Fatal("a closed Tracker took a call")
	}
}

// TestTrackerSkipsSessionsWithNothingPending: a session Take found clean
// costs no store read until a notice may exist: one made by the
// Tracker's own writer, one another process signals (WatchChanges), or
// Changed. A notice another process made without a signal is, by
// contract, seen only after one.
func TestTrackerSkipsSessionsWithNothingPending(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	tr := readset.NewTracker(st, quiet)
	defer tr.Close()
	signal := make(chan struct{})
	subscriptions := 0
	tr.WatchChanges(func() (<-chan struct{}, func()) { subscriptions++; return signal, func() {} })
	const project = "agent:local:p"
	wrote := func(session string, n int) readset.Observation {
		o := obs(session, "x.go", n)
		o.Wrote = true
		return o
	}
	take := func(wantFiles, wantProbes int) {
		t.Helper()
		n, err := tr.Take(ctx, "s1", project, nil)
		if err != nil {
			t.Fatal(err)
		}
		files := 0
		if n != nil {
			files = len(n.Files)
		}
		if files != wantFiles || tr.Probes() != int64(wantProbes) {
			t.Fatalf("took %d files with %d probes, want %d with %d", files, tr.Probes(), wantFiles, wantProbes)
		}
	}
	take(0, 1)
	take(0, 1) // clean: no read

	// A notice made by the Tracker's own writer.
	tr.Record([]readset.Observation{obs("s1", "x.go", 1)})
	tr.Record([]readset.Observation{wrote("s2", 2)})
	if err := tr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	take(1, 2)
	take(0, 3)
	take(0, 3)

	// A notice another process made: unseen until its signal arrives.
	tr.Record([]readset.Observation{obs("s1", "x.go", 2)})
	if err := tr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	take(0, 3)
	if _, err := st.Record(ctx, []readset.Observation{wrote("s3", 3)}); err != nil {
		t.Fatal(err)
	}
	take(0, 3)
	close(signal)
	signal = make(chan struct{})
	take(1, 4)
	if subscriptions != 2 {
		t.Fatalf("%d subscriptions, want the first and one after the signal", subscriptions)
	}
	take(0, 5)
	tr.Changed()
	take(0, 6)
}

// TestMaxCleanScopes pins the bound on the sessions a Tracker remembers
// as clean.
func TestMaxCleanScopes(t *testing.T) {
	if readset.MaxCleanScopes != 4096 {
		t.Fatalf("MaxCleanScopes = %d, want 4096", readset.MaxCleanScopes)
	}
}
