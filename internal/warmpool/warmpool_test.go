package warmpool_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/warmpool"
)

// srv is a fake server: alive until stopped.
type srv struct {
	id      int
	stopped chan struct{}
}

func (s *srv) alive() bool {
	select {
	case <-s.stopped:
		return false
	default:
		return true
	}
}

func (s *srv) stop() {
	select {
	case <-s.stopped:
	default:
		close(s.stopped)
	}
}

var errClosed = errors.New("closed")

func newPool(max int) *warmpool.Pool[string, *srv] {
	return warmpool.New[string](warmpool.Options[*srv]{Idle: time.Hour, Max: max, Alive: (*srv).alive, Stop: (*srv).stop, Closed: errClosed})
}

func TestReuseRestartEvictClose(t *testing.T) {
	p := newPool(2)
	ctx, n := context.Background(), 0
	start := func() (*srv, error) { n++; return &srv{id: n, stopped: make(chan struct{})}, nil }
	a, rel, err := p.Acquire(ctx, "a", start)
	if err != nil {
		t.Fatal(err)
	}
	rel()
	a2, rel, _ := p.Acquire(ctx, "a", start)
	rel()
	if a2 != a || p.Started() != 1 {
		t.Fatalf("a warm server was not reused: %d starts", p.Started())
	}
	// A server that ended is started again.
	a.stop()
	a3, rel, _ := p.Acquire(ctx, "a", start)
	rel()
	if a3 == a || p.Started() != 2 {
		t.Fatal("an ended server was reused")
	}
	// A failed start leaves no slot.
	if _, _, err := p.Acquire(ctx, "b", func() (*srv, error) { return nil, errors.New("no") }); err == nil || p.Running() != 1 {
		t.Fatalf("failed start: %v, %d running", err, p.Running())
	}
	// At Max, the idle one is stopped to make room.
	_, relB, _ := p.Acquire(ctx, "b", start)
	_, relC, _ := p.Acquire(ctx, "c", start)
	<-a3.stopped
	if p.Running() != 2 {
		t.Fatalf("%d running, want Max 2", p.Running())
	}
	relB()
	relC()
	p.Close()
	if _, _, err := p.Acquire(ctx, "a", start); !errors.Is(err, errClosed) {
		t.Fatalf("after Close: %v", err)
	}
}
