// Package admission bounds how much of a shared capacity one caller may
// hold: a [Pool] of slots with a global bound and a per-key share, and the
// hook ([BeginWait]) by which a call moves out of its request slot into a
// bounded waiter share before a long wait.
//
// A Pool never blocks: a caller over its share, or a request when the pool
// is full, is refused at once, so that nothing queues behind a caller who
// holds its slots.
package admission

import (
	"context"
	"sync"

	"github.com/webcodex/webcodex/internal/failure"
)

// A Pool hands out slots: at most global at once, of which at most share
// to one key (a principal). Its zero value is not usable; see NewPool.
type Pool struct {
	name   string
	global int
	share  int

	mu   sync.Mutex
	held int
	by   map[string]int
}

// NewPool returns a Pool of global slots with a per-key share; name says
// what a slot is (in refusal messages, e.g. "request slots"). share <= 0
// means no per-key share (only the global bound).
func NewPool(name string, global, share int) *Pool {
	return &Pool{name: name, global: global, share: share, by: map[string]int{}}
}

// Acquire takes one slot for key without waiting. It returns the function
// that gives the slot back (only its first call counts), or an error:
// kind too_many_requests when key already holds its share (the caller
// alone is over its bound), unavailable when every slot is held.
func (p *Pool) Acquire(key string) (release func(), err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.share > 0 && p.by[key] >= p.share {
		return nil, failure.New(failure.TooManyRequests, "this caller already holds its %d %s; retry when one of its calls has finished", p.share, p.name)
	}
	if p.held >= p.global {
		return nil, failure.New(failure.Unavailable, "all %d %s are in use; retry shortly", p.global, p.name)
	}
	p.held++
	p.by[key]++
	var once sync.Once
	return func() { once.Do(func() { p.put(key) }) }, nil
}

func (p *Pool) put(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held--
	if p.by[key]--; p.by[key] == 0 {
		delete(p.by, key)
	}
}

// Held returns the slots held in all and by key.
func (p *Pool) Held(key string) (all, byKey int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held, p.by[key]
}

// A Waiter moves the call it belongs to out of its request slot into a
// bounded waiter share (see BeginWait). A transport that bounds requests
// puts one in each request's context (WithWaiter).
type Waiter interface {
	// BeginWait takes a slot of the caller's waiter share and then gives
	// back the call's request slot; the waiter slot is held until the
	// request ends. A second call does nothing. Over the share it returns
	// an error (too_many_requests, or unavailable when every waiter slot
	// is held) and the call keeps its request slot.
	BeginWait() error
}

type waiterKey struct{}

// WithWaiter returns ctx carrying w.
func WithWaiter(ctx context.Context, w Waiter) context.Context {
	return context.WithValue(ctx, waiterKey{}, w)
}

// BeginWait is called by a tool right before a bounded wait (observe_jobs'
// wait_seconds, the message board's waits): it moves the call out of its
// request slot into the caller's waiter share, so that waiting never holds
// the slots other calls need. An error (too_many_requests or unavailable)
// means the caller already waits as much as it may: the tool fails the
// call without waiting. A context without a Waiter (stdio, a direct
// kernel call) has no request slots to leave: BeginWait returns nil.
func BeginWait(ctx context.Context) error {
	if w, ok := ctx.Value(waiterKey{}).(Waiter); ok {
		return w.BeginWait()
	}
	return nil
}
