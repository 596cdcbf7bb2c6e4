package admission_test

import (
	"context"
	"testing"

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
