package jobs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
)

// tick is a clock that advances one millisecond per reading, so that the
// records' StartedAt give the exact order of the manager's starts.
func tick() func() time.Time {
	var n atomic.Int64
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

// TestQueueFullAndFairTurn: one owner with a running job and a full queue
// of 300 gets queue_full for the next one, with nothing recorded; another
// owner's job queued behind all 300 gets the very next slot.
func TestQueueFullAndFairTurn(t *testing.T) {
	const queued = 300
	e := newEnv(t, jobs.Options{Concurrency: 1, QueuedPerOwner: queued, Now: tick()})
	ctx := context.Background()
	first := e.start("sleep 60")
	if first.State != jobs.Running {
		t.Fatalf("first job %s", first.State)
	}
	var mine []string
	for range queued {
		j := e.start("sleep 60")
		if j.State != jobs.Queued {
			t.Fatalf("job %d is %s, want queued", len(mine), j.State)
		}
		mine = append(mine, j.ID)
	}
	_, total, err := e.m.List(ctx, acc, jobs.ListFilter{Limit: jobs.MaxListLimit})
	if err != nil || total != queued+1 {
		t.Fatalf("list: %d jobs, %v", total, err)
	}
	cleaned := false
	spec := e.spec("exit 0")
	spec.Cleanup = func() { cleaned = true }
	_, err = e.m.Start(ctx, spec)
	wantKind(t, err, failure.QueueFull)
	if _, total, _ := e.m.List(ctx, acc, jobs.ListFilter{Limit: jobs.MaxListLimit}); total != queued+1 || !cleaned {
		t.Fatalf("after queue_full: %d jobs (want %d), cleanup called %v", total, queued+1, cleaned)
	}

	// A second owner is not limited by the first owner's queue, and its
	// job, queued last, runs before any of the 300.
	other := e.spec("exit 0")
	other.Principal = "fp-other"
	theirs, err := e.m.Start(ctx, other)
	if err != nil || theirs.State != jobs.Queued {
		t.Fatalf("other owner's job: %s %v", theirs.State, err)
	}
	if _, _, err := e.m.Stop(ctx, acc, first.ID); err != nil {
		t.Fatal(err)
	}
	done, err := e.m.Wait(ctx, theirs.ID, long)
	if err != nil || done.State != jobs.Succeeded {
		t.Fatalf("other owner's job: %s %v", done.State, err)
	}
	// The slot the other owner's run gave back goes to the first of the
	// 300; it started after that run finished.
	waitState(t, e, acc, mine[0], jobs.Running)
	next, err := e.m.Get(ctx, acc, mine[0])
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range mine {
		j, err := e.m.Get(ctx, acc, id)
		if err != nil {
			t.Fatal(err)
		}
		if !j.StartedAt.IsZero() && !j.StartedAt.After(done.StartedAt) {
			t.Fatalf("queued job %d started at %s, before the other owner's job (%s)", i, j.StartedAt, done.StartedAt)
		}
	}
	if !next.StartedAt.After(done.FinishedAt) {
		t.Fatalf("the first owner's next job started at %s, before the other owner's run finished at %s (one slot)", next.StartedAt, done.FinishedAt)
	}
}

// TestFairShareOfSlots: with two slots, an owner whose queue is long gets
// one of them while another owner has queued work: freed slots alternate.
func TestFairShareOfSlots(t *testing.T) {
	e := newEnv(t, jobs.Options{Concurrency: 2, Now: tick()})
	ctx := context.Background()
	a1, a2 := e.start("sleep 60"), e.start("sleep 60")
	var as []string
	for range 4 {
		as = append(as, e.start("sleep 60").ID)
	}
	b := e.spec("sleep 60")
	b.Principal = "fp-b"
	var bs []string
	for range 2 {
		j, err := e.m.Start(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, j.ID)
	}
	// Both slots held by A: the freed one goes to B (fewer running),
	// then always to the owner with fewer running jobs.
	bAcc := jobs.Access{Project: acc.Project, Fingerprint: "fp-b"}
	stop := func(a jobs.Access, id string) {
		t.Helper()
		if _, _, err := e.m.Stop(ctx, a, id); err != nil {
			t.Fatal(err)
		}
	}
	stop(acc, a1.ID)
	waitState(t, e, bAcc, bs[0], jobs.Running)
	stop(acc, a2.ID)
	// A has none running now, B one: A's oldest queued job goes next.
	waitState(t, e, acc, as[0], jobs.Running)
	for _, id := range append(as[1:], bs[1]) {
		j, err := e.m.Get(ctx, jobs.Access{Project: acc.Project, Fingerprint: ownerOf(id, bs)}, id)
		if err != nil || j.State != jobs.Queued {
			t.Fatalf("job %s: %s %v", id, j.State, err)
		}
	}
	stop(bAcc, bs[0])
	// A one running, B none: B's second job.
	waitState(t, e, bAcc, bs[1], jobs.Running)
}

func ownerOf(id string, bs []string) string {
	for _, b := range bs {
		if b == id {
			return "fp-b"
		}
	}
	return acc.Fingerprint
}

// waitState observes a job until it is in state st.
func waitState(t *testing.T, e *env, a jobs.Access, id string, st jobs.State) {
	t.Helper()
	deadline := time.Now().Add(long)
	for time.Now().Before(deadline) {
		obs, _, err := e.m.Observe(context.Background(), a, jobs.ObserveRequest{IDs: []string{id}, Wait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if obs[0].Job.State == st {
			return
		}
		if obs[0].Job.State.Terminal() {
			t.Fatalf("job %s is %s, want %s", id, obs[0].Job.State, st)
		}
	}
	t.Fatalf("job %s never became %s", id, st)
}
