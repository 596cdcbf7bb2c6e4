package retention_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/retention"
)

// memStore holds items by age; each Purge removes at most batch of the
// oldest before the cutoff, and records the batch sizes asked.
type memStore struct {
	mu      sync.Mutex
	items   []time.Time // oldest first
	batches []int
	fail    error
	// skipped is reported by the purge that removes nothing.
	skipped int64
}

func (m *memStore) Purge(_ context.Context, cutoff time.Time, batch int) (retention.Count, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.batches = append(m.batches, batch)
	if m.fail != nil {
		return retention.Count{}, m.fail
	}
	n := 0
	for n < len(m.items) && n < batch && m.items[n].Before(cutoff) {
		n++
	}
	m.items = m.items[n:]
	if n == 0 {
		return retention.Count{Skipped: m.skipped}, nil
	}
	return retention.Count{Items: int64(n), Owners: 1}, nil
}

func (m *memStore) Pending(_ context.Context, cutoff time.Time) (retention.Count, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var c retention.Count
	for _, t := range m.items {
		if t.Before(cutoff) {
			c.Items++
		}
	}
	return c, nil
}

func aged(now time.Time, days ...int) *memStore {
	m := &memStore{}
	for _, d := range days {
		m.items = append(m.items, now.Add(-retention.Days(d)))
	}
	return m
}

func TestPassPurgesInBatchesAndLogs(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	old := make([]int, retention.BatchSize*2+1)
	for i := range old {
		old[i] = 40
	}
	st := aged(now, append(old, 10, 5)...)
	var logs bytes.Buffer
	p := retention.New([]retention.Target{{Store: "workflow", Policy: "session_events_days", Age: retention.Days(30), Purger: st}},
		slog.New(slog.NewTextHandler(&logs, nil)), func() time.Time { return now })

	plan, err := p.Plan(context.Background())
	if err != nil || len(plan) != 1 || plan[0].Pending.Items != int64(len(old)) || !plan[0].Cutoff.Equal(now.Add(-retention.Days(30))) {
		t.Fatalf("plan = %+v, %v", plan, err)
	}
	if len(st.items) != len(old)+2 || len(st.batches) != 0 {
		t.Fatal("the plan changed the store")
	}
	runs := p.Pass(context.Background())
	if len(runs) != 1 || runs[0].Removed.Items != int64(len(old)) || runs[0].Batches != 3 || runs[0].Error != "" || runs[0].Incomplete {
		t.Fatalf("runs = %+v", runs)
	}
	for _, b := range st.batches {
		if b != retention.BatchSize {
			t.Fatalf("asked for a batch of %d, want %d", b, retention.BatchSize)
		}
	}
	if len(st.items) != 2 {
		t.Fatalf("%d items left, want the 2 younger than the policy", len(st.items))
	}
	for _, want := range []string{"retention: purged", "store=workflow", "policy=session_events_days", "removed=1001"} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("log %q lacks %q", logs.String(), want)
		}
	}
	if got := p.Runs(); len(got) != 1 || got[0].Removed != runs[0].Removed {
		t.Fatalf("Runs() = %+v", got)
	}
}

func TestPassRecordsAFailureAndGoesOn(t *testing.T) {
	now := time.Now()
	bad := aged(now, 40)
	bad.fail = errors.New("disk on fire")
	good := aged(now, 40)
	var logs bytes.Buffer
	p := retention.New([]retention.Target{
		{Store: "audit", Policy: "audit_events_days", Age: retention.Days(1), Purger: bad},
		{Store: "workflow", Policy: "session_events_days", Age: retention.Days(1), Purger: good},
	}, slog.New(slog.NewTextHandler(&logs, nil)), nil)
	runs := p.Pass(context.Background())
	if runs[0].Error != "disk on fire" || !runs[0].Incomplete || !runs[0].Removed.IsZero() {
		t.Fatalf("failed run = %+v", runs[0])
	}
	if runs[1].Removed.Items != 1 || len(good.items) != 0 {
		t.Fatalf("the next target did not run: %+v", runs[1])
	}
	if !strings.Contains(logs.String(), "retention: purge failed") {
		t.Fatalf("log %q lacks the failure", logs.String())
	}
}

// TestARunKeepsWhatItSkipped: what the store could not purge (another
// replica's job output), reported by the purge that removed nothing,
// ends the run without counting as removed, and is kept and logged.
func TestARunKeepsWhatItSkipped(t *testing.T) {
	now := time.Now()
	st := aged(now, 40, 40)
	st.skipped = 3
	var logs bytes.Buffer
	p := retention.New([]retention.Target{{Store: "jobs", Policy: "job_output_days", Age: retention.Days(1), Purger: st}},
		slog.New(slog.NewTextHandler(&logs, nil)), func() time.Time { return now })
	runs := p.Pass(context.Background())
	if len(runs) != 1 || runs[0].Removed != (retention.Count{Items: 2, Owners: 1, Skipped: 3}) || runs[0].Batches != 1 {
		t.Fatalf("runs = %+v", runs)
	}
	if !strings.Contains(logs.String(), "skipped=3") {
		t.Fatalf("log %q lacks what was skipped", logs.String())
	}
	if (retention.Count{Skipped: 3}).IsZero() != true {
		t.Fatal("a count that only skipped removed something")
	}
}

func TestRunsAreBounded(t *testing.T) {
	p := retention.New([]retention.Target{{Store: "s", Policy: "p", Age: time.Hour, Purger: &memStore{}}}, nil, nil)
	for range retention.MaxRuns + 3 {
		p.Pass(context.Background())
	}
	if n := len(p.Runs()); n != retention.MaxRuns {
		t.Fatalf("%d runs kept, want %d", n, retention.MaxRuns)
	}
}

func TestLoopStopsOnCancel(t *testing.T) {
	st := aged(time.Now(), 40)
	p := retention.New([]retention.Target{{Store: "s", Policy: "p", Age: retention.Days(1), Purger: st}}, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Loop(ctx, retention.Interval) }()
	<-p.FirstPass()
	if len(st.items) != 0 {
		t.Fatal("the first pass did not purge")
	}
	cancel()
	<-done
}

func TestLoopWithoutTargets(t *testing.T) {
	p := retention.New(nil, nil, nil)
	p.Loop(context.Background(), retention.Interval) // returns at once
	<-p.FirstPass()
	if p.Targets() != 0 {
		t.Fatal("targets without a policy")
	}
}

func TestBounds(t *testing.T) {
	if retention.BatchSize < 1 || retention.BatchSize > 10000 {
		t.Fatalf("BatchSize %d: a batch must be small", retention.BatchSize)
	}
	if retention.Interval < time.Minute {
		t.Fatalf("Interval %v", retention.Interval)
	}
	if retention.MaxRuns < 1 || retention.MaxBatchesPerRun < 1 {
		t.Fatal("bounds must be positive")
	}
}

// endless always has one more item to purge.
type endless struct{ calls int }

func (e *endless) Purge(context.Context, time.Time, int) (retention.Count, error) {
	e.calls++
	return retention.Count{Items: 1, Owners: 1}, nil
}

func (e *endless) Pending(context.Context, time.Time) (retention.Count, error) {
	return retention.Count{Items: 1}, nil
}

func TestARunStopsAtMaxBatches(t *testing.T) {
	e := &endless{}
	p := retention.New([]retention.Target{{Store: "s", Policy: "p", Age: time.Hour, Purger: e}}, nil, nil)
	r := p.Pass(context.Background())[0]
	if e.calls != retention.MaxBatchesPerRun || r.Batches != retention.MaxBatchesPerRun || !r.Incomplete {
		t.Fatalf("%d calls, run %+v; want %d batches and incomplete", e.calls, r, retention.MaxBatchesPerRun)
	}
}
