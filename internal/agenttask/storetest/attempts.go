package storetest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/agenttask"
	"github.com/webcodex/webcodex/internal/failure"
)

func params(a agenttask.Attempt, session string) agenttask.AttemptParams {
	return agenttask.AttemptParams{Owner: alice, AttemptID: a.ID, SessionID: session, Fence: a.Fence}
}

func completion(a agenttask.Attempt, outcome agenttask.Outcome, summary, key string) agenttask.CompleteParams {
	return agenttask.CompleteParams{AttemptParams: params(a, a.SessionID), Outcome: outcome, Summary: summary, CompletionKey: key}
}

func heartbeat(t *testing.T, open Open) {
	ctx := context.Background()
	svc, st := service(t, open)
	tk := create(t, svc, alice, "beat")
	a := start(t, svc, tk.ID, sess1, t0)
	got, err := svc.Heartbeat(ctx, params(a, sess1), 2*time.Minute, at(4*time.Minute))
	if err != nil || !got.LeaseUntil.Equal(at(6*time.Minute)) || got.State != agenttask.Live {
		t.Fatalf("heartbeat %+v %v", got, err)
	}
	before := raw(t, st, tk.ID)
	// A heartbeat from another session.
	_, err = svc.Heartbeat(ctx, params(a, sess2), 0, at(5*time.Minute))
	wantRefused(t, st, tk.ID, before, err, failure.SessionAuthorityDenied, "")
	// A stale fence.
	stale := params(a, sess1)
	stale.Fence++
	_, err = svc.Heartbeat(ctx, stale, 0, at(5*time.Minute))
	wantRefused(t, st, tk.ID, before, err, failure.StalePrecondition, agenttask.ReasonStaleFence)
	// The lease lapses at exactly lease_until: a heartbeat then is refused
	// and the attempt is not revived.
	_, err = svc.Heartbeat(ctx, params(a, sess1), 0, at(6*time.Minute))
	wantRefused(t, st, tk.ID, before, err, failure.StalePrecondition, agenttask.ReasonLeaseExpired)
	if _, err := svc.Heartbeat(ctx, params(a, sess1), 0, at(6*time.Minute-time.Millisecond)); err != nil {
		t.Fatalf("a heartbeat a millisecond before the lease lapses: %v", err)
	}
}

func leaseExpiryReopens(t *testing.T, open Open) {
	ctx := context.Background()
	svc, st := service(t, open)
	tk := create(t, svc, alice, "crashy")
	first := start(t, svc, tk.ID, sess1, t0)
	// Before the lease lapses another session cannot start.
	before := raw(t, st, tk.ID)
	_, _, err := svc.StartAttempt(ctx, agenttask.StartParams{Owner: alice, TaskID: tk.ID, SessionID: sess2}, at(agenttask.DefaultLease-time.Millisecond))
	wantRefused(t, st, tk.ID, before, err, failure.Conflict, "")
	second := start(t, svc, tk.ID, sess2, at(agenttask.DefaultLease))
	if second.Fence != first.Fence+1 {
		t.Fatalf("fences %d then %d", first.Fence, second.Fence)
	}
	as, err := svc.Attempts(ctx, alice, tk.ID)
	if err != nil || len(as) != 2 || as[0].State != agenttask.AttemptExpired || as[0].EndedAt == nil || as[1].State != agenttask.Live {
		t.Fatalf("attempts %+v %v", as, err)
	}
	// The expired attempt's late heartbeat and completion are refused:
	// its fence was superseded.
	before = raw(t, st, tk.ID)
	_, err = svc.Heartbeat(ctx, params(first, sess1), 0, at(agenttask.DefaultLease))
	wantRefused(t, st, tk.ID, before, err, failure.StalePrecondition, agenttask.ReasonStaleFence)
	_, _, _, err = svc.Complete(ctx, completion(first, agenttask.OutcomeDone, "late", "k"), at(agenttask.DefaultLease))
	wantRefused(t, st, tk.ID, before, err, failure.StalePrecondition, agenttask.ReasonStaleFence)
	if _, _, _, err := svc.Complete(ctx, completion(second, agenttask.OutcomeDone, "finished", "k"), at(agenttask.DefaultLease)); err != nil {
		t.Fatal(err)
	}
}

func complete(t *testing.T, open Open) {
	ctx := context.Background()
	svc, st := service(t, open)
	tk := create(t, svc, alice, "finish")
	a := start(t, svc, tk.ID, sess1, t0)
	done, task, replayed, err := svc.Complete(ctx, completion(a, agenttask.OutcomeDone, "all good", "key-1"), at(time.Minute))
	if err != nil || replayed || done.State != agenttask.AttemptDone || task.State != agenttask.Done || done.Summary != "all good" ||
		done.EndedAt == nil || !done.EndedAt.Equal(at(time.Minute)) {
		t.Fatalf("complete %+v %+v %v %v", done, task, replayed, err)
	}
	before := raw(t, st, tk.ID)
	// The same key and payload replays, also after the lease lapsed.
	again, task2, replayed, err := svc.Complete(ctx, completion(a, agenttask.OutcomeDone, "all good", "key-1"), at(time.Hour))
	if err != nil || !replayed || again.ID != done.ID || task2.Revision != task.Revision || raw(t, st, tk.ID) != before {
		t.Fatalf("replay %+v %v %v", again, replayed, err)
	}
	_, _, _, err = svc.Complete(ctx, completion(a, agenttask.OutcomeFailed, "all good", "key-1"), at(2*time.Minute))
	wantRefused(t, st, tk.ID, before, err, failure.IdempotencyConflict, "")
	_, _, _, err = svc.Complete(ctx, completion(a, agenttask.OutcomeDone, "other words", "key-1"), at(2*time.Minute))
	wantRefused(t, st, tk.ID, before, err, failure.IdempotencyConflict, "")
	_, _, _, err = svc.Complete(ctx, completion(a, agenttask.OutcomeDone, "all good", "key-2"), at(2*time.Minute))
	wantRefused(t, st, tk.ID, before, err, failure.AlreadyCompleted, "")
	_, err = svc.Heartbeat(ctx, params(a, sess1), 0, at(2*time.Minute))
	wantRefused(t, st, tk.ID, before, err, failure.StalePrecondition, agenttask.ReasonNotLive)
	// A finished task takes no new attempt.
	_, _, err = svc.StartAttempt(ctx, agenttask.StartParams{Owner: alice, TaskID: tk.ID, SessionID: sess2}, at(2*time.Minute))
	wantRefused(t, st, tk.ID, before, err, failure.Conflict, "")
	// Outcome failed fails the task.
	ft := create(t, svc, alice, "doomed")
	fa := start(t, svc, ft.ID, sess1, t0)
	if _, task, _, err := svc.Complete(ctx, completion(fa, agenttask.OutcomeFailed, "broke", "k"), t0); err != nil || task.State != agenttask.Failed {
		t.Fatalf("failed outcome: %+v %v", task, err)
	}
	for name, p := range map[string]agenttask.CompleteParams{
		"outcome":      completion(fa, "maybe", "", "k"),
		"empty key":    completion(fa, agenttask.OutcomeDone, "", ""),
		"long summary": completion(fa, agenttask.OutcomeDone, strings.Repeat("s", agenttask.SummaryMaxChars+1), "k"),
		"no fence":     {AttemptParams: agenttask.AttemptParams{Owner: alice, AttemptID: fa.ID, SessionID: sess1}, Outcome: agenttask.OutcomeDone, CompletionKey: "k"},
	} {
		if _, _, _, err := svc.Complete(ctx, p, t0); !failure.Is(err, failure.InvalidArguments) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func completeAfterExpiry(t *testing.T, open Open) {
	ctx := context.Background()
	svc, st := service(t, open)
	tk := create(t, svc, alice, "slow")
	a := start(t, svc, tk.ID, sess1, t0)
	before := raw(t, st, tk.ID)
	_, _, _, err := svc.Complete(ctx, completion(a, agenttask.OutcomeDone, "too late", "k"), a.LeaseUntil)
	wantRefused(t, st, tk.ID, before, err, failure.StalePrecondition, agenttask.ReasonLeaseExpired)
	stale := completion(a, agenttask.OutcomeDone, "wrong fence", "k")
	stale.Fence = a.Fence + 1
	_, _, _, err = svc.Complete(ctx, stale, t0)
	wantRefused(t, st, tk.ID, before, err, failure.StalePrecondition, agenttask.ReasonStaleFence)
	other := completion(a, agenttask.OutcomeDone, "not mine", "k")
	other.SessionID = sess2
	_, _, _, err = svc.Complete(ctx, other, t0)
	wantRefused(t, st, tk.ID, before, err, failure.SessionAuthorityDenied, "")
	// After Expire the attempt is expired, the task open, and the late
	// completion refused still.
	if ex, err := svc.Expire(ctx, a.LeaseUntil); err != nil || len(ex) != 1 || ex[0].ID != a.ID {
		t.Fatalf("expire %+v %v", ex, err)
	}
	before = raw(t, st, tk.ID)
	_, _, _, err = svc.Complete(ctx, completion(a, agenttask.OutcomeDone, "too late", "k"), a.LeaseUntil)
	wantRefused(t, st, tk.ID, before, err, failure.StalePrecondition, agenttask.ReasonNotLive)
}

func cancel(t *testing.T, open Open) {
	ctx := context.Background()
	svc, st := service(t, open)
	open1 := create(t, svc, alice, "open")
	if c, err := svc.Cancel(ctx, alice, open1.ID, t0); err != nil || c.State != agenttask.Cancelled {
		t.Fatalf("cancel open: %+v %v", c, err)
	}
	claimed := create(t, svc, alice, "claimed")
	a := start(t, svc, claimed.ID, sess1, t0)
	if c, err := svc.Cancel(ctx, alice, claimed.ID, at(time.Second)); err != nil || c.State != agenttask.Cancelled {
		t.Fatalf("cancel claimed: %+v %v", c, err)
	}
	as, _ := svc.Attempts(ctx, alice, claimed.ID)
	if len(as) != 1 || as[0].State != agenttask.AttemptCancelled || as[0].EndedAt == nil {
		t.Fatalf("attempts after cancel %+v", as)
	}
	before := raw(t, st, claimed.ID)
	_, err := svc.Cancel(ctx, alice, claimed.ID, at(2*time.Second))
	wantRefused(t, st, claimed.ID, before, err, failure.Conflict, "")
	_, _, _, err = svc.Complete(ctx, completion(a, agenttask.OutcomeDone, "", "k"), at(2*time.Second))
	wantRefused(t, st, claimed.ID, before, err, failure.StalePrecondition, agenttask.ReasonNotLive)
	_, _, err = svc.StartAttempt(ctx, agenttask.StartParams{Owner: alice, TaskID: claimed.ID, SessionID: sess1}, at(2*time.Second))
	wantRefused(t, st, claimed.ID, before, err, failure.Conflict, "")
}

func startNext(t *testing.T, open Open) {
	ctx := context.Background()
	svc, _ := service(t, open)
	next := func(label string, now time.Time) (agenttask.Task, bool) {
		t.Helper()
		_, tk, found, err := svc.StartNextAttempt(ctx, agenttask.NextParams{Owner: alice, Project: proj, Label: label, SessionID: sess1}, now)
		if err != nil {
			t.Fatal(err)
		}
		return tk, found
	}
	if _, found := next("", t0); found {
		t.Fatal("a task started on an empty project")
	}
	mk := func(title string, prio int, labels []string, now time.Time, deps ...string) agenttask.Task {
		tk, _, err := svc.Create(ctx, agenttask.CreateParams{Owner: alice, Project: proj, Title: title, Priority: prio, Labels: labels, DependsOn: deps}, now)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	old := mk("old", 0, nil, t0)
	young := mk("young", 0, []string{"ui"}, at(time.Second))
	blocked := mk("blocked but urgent", 9, nil, t0, old.ID)
	urgent := mk("urgent", 5, nil, at(2*time.Second))
	if _, _, err := svc.Create(ctx, agenttask.CreateParams{Owner: bob, Project: proj, Title: "bob's", Priority: 100}, t0); err != nil {
		t.Fatal(err)
	}
	for _, want := range []agenttask.Task{urgent, old, young} {
		if got, found := next("", at(3*time.Second)); !found || got.ID != want.ID {
			t.Fatalf("started %q, want %q", got.Title, want.Title)
		}
	}
	if got, found := next("", at(3*time.Second)); found {
		t.Fatalf("started %q while every ready task is claimed (blocked: %s)", got.Title, blocked.ID)
	}
	// After the leases lapse the tasks are ready again; a label filters.
	if got, found := next("ui", at(time.Hour)); !found || got.ID != young.ID {
		t.Fatalf("label ui started %q", got.Title)
	}
}

func expire(t *testing.T, open Open) {
	ctx := context.Background()
	svc, st := service(t, open)
	a1 := start(t, svc, create(t, svc, alice, "one").ID, sess1, t0)
	a2 := start(t, svc, create(t, svc, alice, "two").ID, sess2, at(time.Minute))
	if ex, err := svc.Expire(ctx, at(agenttask.DefaultLease-time.Millisecond)); err != nil || len(ex) != 0 {
		t.Fatalf("expired early: %+v %v", ex, err)
	}
	ex, err := svc.Expire(ctx, at(agenttask.DefaultLease))
	if err != nil || len(ex) != 1 || ex[0].ID != a1.ID || ex[0].State != agenttask.AttemptExpired {
		t.Fatalf("expire %+v %v", ex, err)
	}
	if tk, _ := svc.Get(ctx, alice, a1.TaskID); tk.State != agenttask.Open {
		t.Fatalf("task after expiry %+v", tk)
	}
	before := raw(t, st, a1.TaskID)
	if ex, err := svc.Expire(ctx, at(agenttask.DefaultLease)); err != nil || len(ex) != 0 || raw(t, st, a1.TaskID) != before {
		t.Fatalf("a second Expire changed %+v %v", ex, err)
	}
	if ex, _ := svc.Expire(ctx, at(time.Hour)); len(ex) != 1 || ex[0].ID != a2.ID {
		t.Fatalf("second expiry %+v", ex)
	}
	if ex, _ := svc.Expire(ctx, at(2*time.Hour)); len(ex) != 0 {
		t.Fatalf("expired twice %+v", ex)
	}
}

// racingStartsOneWins: n goroutines on two handles of one database (two
// pools, as two replicas hold) start the same open task at once: exactly
// one attempt is live, every other start is failure.Conflict.
func racingStartsOneWins(t *testing.T, open Open) {
	ctx := context.Background()
	a, b := open(t)
	svcs := []*agenttask.Service{agenttask.NewService(a), agenttask.NewService(b)}
	tk := create(t, svcs[0], alice, "contested")
	const n = 8
	type res struct {
		a   agenttask.Attempt
		err error
	}
	out := make(chan res, n)
	var ready sync.WaitGroup
	ready.Add(n)
	go1 := make(chan struct{})
	for i := range n {
		go func() {
			ready.Done()
			<-go1
			at, _, err := svcs[i%2].StartAttempt(ctx, agenttask.StartParams{Owner: alice, TaskID: tk.ID, SessionID: sess1}, t0)
			out <- res{at, err}
		}()
	}
	ready.Wait()
	close(go1)
	var wins []agenttask.Attempt
	for range n {
		r := <-out
		if r.err == nil {
			wins = append(wins, r.a)
		} else {
			wantKind(t, r.err, failure.Conflict)
		}
	}
	as, err := svcs[1].Attempts(ctx, alice, tk.ID)
	if len(wins) != 1 || err != nil || len(as) != 1 || as[0].ID != wins[0].ID || as[0].Fence != 1 {
		t.Fatalf("%d starts won; stored %+v %v", len(wins), as, err)
	}
}

// batchBounds: Expire expires at most ExpireBatchMax attempts a call, and
// Ready returns at most the limit it is given (StartNextAttempt passes
// NextScanMax).
func batchBounds(t *testing.T, open Open) {
	ctx := context.Background()
	svc, st := service(t, open)
	for range agenttask.ExpireBatchMax + 1 {
		start(t, svc, create(t, svc, alice, "lapsing").ID, sess1, t0)
	}
	later := at(agenttask.DefaultLease)
	ids, err := st.Ready(ctx, agenttask.ReadyFilter{Owner: alice, Project: proj, Now: later, Limit: agenttask.NextScanMax})
	if err != nil || len(ids) != agenttask.NextScanMax {
		t.Fatalf("Ready gave %d ids (%v), want %d", len(ids), err, agenttask.NextScanMax)
	}
	if ex, err := svc.Expire(ctx, later); err != nil || len(ex) != agenttask.ExpireBatchMax {
		t.Fatalf("the first Expire expired %d (%v), want %d", len(ex), err, agenttask.ExpireBatchMax)
	}
	if ex, err := svc.Expire(ctx, later); err != nil || len(ex) != 1 {
		t.Fatalf("the second Expire expired %d (%v), want 1", len(ex), err)
	}
}
