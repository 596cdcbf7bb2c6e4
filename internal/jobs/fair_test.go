package jobs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/runner"
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

// TestFairShareOfSlots: with two slots that one owner may both hold, an
// owner whose queue is long gets one of them while another owner has
// queued work: freed slots alternate.
func TestFairShareOfSlots(t *testing.T) {
	e := newEnv(t, jobs.Options{Concurrency: 2, RunningPerOwner: 2, Now: tick()})
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

// TestOneOwnerCannotHoldEverySlot reproduces issue 24: one owner's 300
// day-long run_job calls held every running slot (4), so another owner's
// run_process echo queued behind them for up to a day. With the default
// share (Concurrency - ReservedSlots) the first owner holds 3 slots and
// queues the rest; the other owner's echo runs to its end while all 300
// are still running or queued, and the slot it frees goes to a third
// owner at once, not back to the first owner's queue.
func TestOneOwnerCannotHoldEverySlot(t *testing.T) {
	const jobsOfOne = 300
	e := newEnv(t, jobs.Options{QueuedPerOwner: jobsOfOne})
	ctx := context.Background()
	share := jobs.DefaultConcurrency - jobs.ReservedSlots
	dayLong := e.spec("exec sleep 86400")
	dayLong.Run.Timeout = runner.MaxTimeout
	ids := make([]string, jobsOfOne)
	for i := range ids {
		j, err := e.m.Start(ctx, dayLong)
		if err != nil {
			t.Fatalf("run_job %d: %v", i, err)
		}
		if want := map[bool]jobs.State{true: jobs.Running, false: jobs.Queued}[i < share]; j.State != want {
			t.Fatalf("run_job %d is %s, want %s", i, j.State, want)
		}
		ids[i] = j.ID
	}
	// All 300 are live and the first owner holds its share, no more.
	states := func() map[jobs.State]int {
		n := map[jobs.State]int{}
		for _, id := range ids {
			j, err := e.m.Get(ctx, acc, id)
			if err != nil {
				t.Fatal(err)
			}
			n[j.State]++
		}
		return n
	}
	if n := states(); n[jobs.Running] != share || n[jobs.Queued] != jobsOfOne-share {
		t.Fatalf("the first owner's jobs: %v, want %d running", n, share)
	}

	echo := e.spec("echo fair-turn")
	echo.Principal, echo.Tool, echo.Background = "fp-other", "run_process", false
	j, res, err := e.m.RunSync(ctx, echo, long)
	if err != nil || res == nil || j.State != jobs.Succeeded || res.Stdout.Text != "fair-turn\n" {
		t.Fatalf("the other owner's run_process echo: %s %+v %v", j.State, res, err)
	}
	if n := states(); n[jobs.Running] != share || n[jobs.Queued] != jobsOfOne-share {
		t.Fatalf("after the echo: the first owner's jobs %v, want %d running, the rest queued", n, share)
	}
	// The slot the echo freed stays out of the first owner's reach.
	third := e.spec("exec sleep 86400")
	third.Principal = "fp-third"
	if j, err := e.m.Start(ctx, third); err != nil || j.State != jobs.Running {
		t.Fatalf("a third owner's run: %s %v, want running at once", j.State, err)
	}
	// A slot the first owner frees goes to its own oldest queued job.
	if _, _, err := e.m.Stop(ctx, acc, ids[0]); err != nil {
		t.Fatal(err)
	}
	waitState(t, e, acc, ids[share], jobs.Running)
	if n := states(); n[jobs.Running] != share || n[jobs.Stopped] != 1 {
		t.Fatalf("after a stop: the first owner's jobs %v, want %d running", n, share)
	}
}

// TestRunningPerOwnerBounds: the share is 1 to Concurrency, and its
// default never drops below one slot.
func TestRunningPerOwnerBounds(t *testing.T) {
	// One slot: its one owner may hold it (nothing is reserved).
	e := newEnv(t, jobs.Options{Concurrency: 1})
	for _, o := range []jobs.Options{
		{Concurrency: 2, RunningPerOwner: 3},
		{Concurrency: 4, RunningPerOwner: -1},
	} {
		o.Store, o.Host, o.Dir = e.store, &runner.Local{}, t.TempDir()
		if m, err := jobs.NewManager(o); err == nil || m != nil {
			t.Errorf("concurrency %d, running per owner %d: accepted", o.Concurrency, o.RunningPerOwner)
		}
	}
	if j := e.start("exec sleep 86400"); j.State != jobs.Running {
		t.Fatalf("the only slot: %s", j.State)
	}
}
