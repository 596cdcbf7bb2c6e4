package admission_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/admission"
	"github.com/webcodex/webcodex/internal/failure"
)

func TestPoolShares(t *testing.T) {
	p := admission.NewPool("slots", 3, 2)
	a1, err := p.Acquire("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Acquire("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Acquire("a"); failure.KindOf(err) != failure.TooManyRequests {
		t.Fatalf("over the share: %v", err)
	}
	if _, err := p.Acquire("b"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Acquire("c"); failure.KindOf(err) != failure.Unavailable {
		t.Fatalf("pool full: %v", err)
	}
	a1()
	a1() // a second release gives nothing back
	if all, byA := p.Held("a"); all != 2 || byA != 1 {
		t.Fatalf("held %d, by a %d; want 2, 1", all, byA)
	}
	if _, err := p.Acquire("c"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Acquire("c"); failure.KindOf(err) != failure.Unavailable {
		t.Fatalf("pool full again: %v", err)
	}
}

type waiter struct{ err error }

func (w *waiter) BeginWait() error { return w.err }

func TestBeginWait(t *testing.T) {
	if err := admission.BeginWait(context.Background()); err != nil {
		t.Fatalf("without a Waiter: %v", err)
	}
	refused := failure.New(failure.TooManyRequests, "no")
	ctx := admission.WithWaiter(context.Background(), &waiter{err: refused})
	if err := admission.BeginWait(ctx); err != refused {
		t.Fatalf("BeginWait: %v", err)
	}
}

// TestAcquireWaitQueue: calls over a key's share wait in that key's queue
// and get its slots first come, first served as they are given back; one
// more than the queue's depth is refused at once; another key is not
// held up by the queue. The wait is an hour, so only releases free slots.
func TestAcquireWaitQueue(t *testing.T) {
	p := admission.NewQueuedPool("slots", 4, 2, admission.Queue{Depth: 2, Wait: time.Hour})
	ctx := context.Background()
	var held []func()
	for range 2 {
		r, err := p.AcquireWait(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, r)
	}
	got := make(chan int, 2)
	for i := range 2 {
		go func() {
			r, err := p.AcquireWait(ctx, "a")
			if err != nil {
				t.Error(err)
				got <- -1
				return
			}
			got <- i
			r()
		}()
		for p.Waiting("a") < i+1 { // queue them in order
			runtime.Gosched()
		}
	}
	if _, err := p.AcquireWait(ctx, "a"); failure.KindOf(err) != failure.TooManyRequests {
		t.Fatalf("beyond the queue: %v", err)
	}
	if r, err := p.AcquireWait(ctx, "b"); err != nil {
		t.Fatalf("another key: %v", err)
	} else {
		r()
	}
	held[0]()
	if first := <-got; first != 0 {
		t.Fatalf("call %d got the first slot, want the oldest (0)", first)
	}
	if second := <-got; second != 1 {
		t.Fatalf("second slot went to %d", second)
	}
	held[1]()
	if all, byA := p.Held("a"); all != 0 || byA != 0 || p.Waiting("a") != 0 {
		t.Fatalf("held %d, by a %d, waiting %d; want none", all, byA, p.Waiting("a"))
	}
}

// TestAcquireWaitEnds: a wait that ends (the queue's bound, or the
// caller's context) without a slot is refused and leaves the queue; the
// counts are those of the held slots.
func TestAcquireWaitEnds(t *testing.T) {
	p := admission.NewQueuedPool("slots", 4, 1, admission.Queue{Depth: 4, Wait: time.Nanosecond})
	r, err := p.AcquireWait(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AcquireWait(context.Background(), "a"); failure.KindOf(err) != failure.TooManyRequests {
		t.Fatalf("wait ended: %v", err)
	}
	q := admission.NewQueuedPool("slots", 4, 1, admission.Queue{Depth: 4, Wait: time.Hour})
	rq, _ := q.AcquireWait(context.Background(), "a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := q.AcquireWait(ctx, "a"); err != context.Canceled {
		t.Fatalf("cancelled: %v", err)
	}
	for _, c := range []struct {
		p *admission.Pool
		r func()
	}{{p, r}, {q, rq}} {
		if all, byA := c.p.Held("a"); all != 1 || byA != 1 || c.p.Waiting("a") != 0 {
			t.Fatalf("held %d, by a %d, waiting %d; want 1, 1, 0", all, byA, c.p.Waiting("a"))
		}
		c.r()
		if all, _ := c.p.Held("a"); all != 0 {
			t.Fatalf("held %d after release", all)
		}
	}
}

// TestAcquireWaitWithoutQueue: a pool without a queue refuses at once, as
// Acquire does.
func TestAcquireWaitWithoutQueue(t *testing.T) {
	p := admission.NewPool("slots", 2, 1)
	if _, err := p.AcquireWait(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AcquireWait(context.Background(), "a"); failure.KindOf(err) != failure.TooManyRequests || p.Waiting("a") != 0 {
		t.Fatalf("over the share: %v", err)
	}
}
