// Package admission bounds how much of a shared capacity one caller may
// hold: a [Pool] of slots with a global bound and a per-key share, and the
// hook ([BeginWait]) by which a call moves out of its request slot into a
// bounded waiter share before a long wait.
//
// Acquire never blocks: a caller over its share, or a request when the
// pool is full, is refused at once. AcquireWait lets a caller over its own
// share wait in a short queue of that caller's own (see [Queue]): it waits
// only behind itself, so nothing queues behind another caller who holds
// its slots.
package admission

import (
	"context"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

// A Pool hands out slots: at most global at once, of which at most share
// to one key (a principal). Its zero value is not usable; see NewPool.
type Pool struct {
	name   string
	global int
	share  int
	queue  Queue

	mu   sync.Mutex
	held int
	by   map[string]int
	// waiting are the calls of each key queued in AcquireWait, oldest
	// first; a slot key gives back goes to the first of them.
	waiting map[string][]*waiter
}

// Queue bounds the calls of one key that wait in AcquireWait for a slot of
// the key's share: at most Depth of them wait at once, each at most Wait.
// The zero Queue waits for nothing (AcquireWait is Acquire).
type Queue struct {
	Depth int
	Wait  time.Duration
}

// A waiter is one call queued in AcquireWait; granted is closed when a
// slot was handed to it (under the pool's mu).
type waiter struct {
	granted chan struct{}
}

// NewPool returns a Pool of global slots with a per-key share; name says
// what a slot is (in refusal messages, e.g. "request slots"). share <= 0
// means no per-key share (only the global bound).
func NewPool(name string, global, share int) *Pool {
	return NewQueuedPool(name, global, share, Queue{})
}

// NewQueuedPool is NewPool whose AcquireWait queues a call over its key's
// share as q allows.
func NewQueuedPool(name string, global, share int, q Queue) *Pool {
	return &Pool{name: name, global: global, share: share, queue: q, by: map[string]int{}, waiting: map[string][]*waiter{}}
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
	return p.releaser(key), nil
}

// AcquireWait takes one slot for key like Acquire, except that a call
// over key's share waits for one of key's slots in key's queue (see
// Queue): first come, first served, for at most the queue's Wait. It is
// refused with too_many_requests when the queue already holds its Depth
// calls or the wait ends without a slot, and with ctx's error when ctx
// ends first. A full pool is refused at once (unavailable), as by Acquire.
func (p *Pool) AcquireWait(ctx context.Context, key string) (release func(), err error) {
	p.mu.Lock()
	if p.share <= 0 || p.by[key] < p.share || p.queue.Depth <= 0 || p.queue.Wait <= 0 {
		p.mu.Unlock()
		return p.Acquire(key)
	}
	if len(p.waiting[key]) >= p.queue.Depth {
		p.mu.Unlock()
		return nil, failure.New(failure.TooManyRequests, "this caller already holds its %d %s and has %d calls waiting for one; retry when one of its calls has finished", p.share, p.name, p.queue.Depth)
	}
	w := &waiter{granted: make(chan struct{})}
	p.waiting[key] = append(p.waiting[key], w)
	p.mu.Unlock()

	timer := time.NewTimer(p.queue.Wait)
	defer timer.Stop()
	var why error
	select {
	case <-w.granted:
		return p.releaser(key), nil
	case <-timer.C:
		why = failure.New(failure.TooManyRequests, "this caller already holds its %d %s and none came free within %s; retry when one of its calls has finished", p.share, p.name, p.queue.Wait)
	case <-ctx.Done():
		why = ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-w.granted: // handed a slot as the wait ended: keep it
		return p.releaser(key), nil
	default:
	}
	q := p.waiting[key]
	for i, x := range q {
		if x == w {
			p.waiting[key] = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(p.waiting[key]) == 0 {
		delete(p.waiting, key)
	}
	return nil, why
}

// releaser returns the function that gives back one of key's slots (only
// its first call counts).
func (p *Pool) releaser(key string) func() {
	var once sync.Once
	return func() { once.Do(func() { p.put(key) }) }
}

// put gives back one of key's slots: to key's oldest waiting call when
// there is one (the slot changes hands, the counts stay), else to the
// pool.
func (p *Pool) put(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if q := p.waiting[key]; len(q) > 0 {
		close(q[0].granted)
		if p.waiting[key] = q[1:]; len(q) == 1 {
			delete(p.waiting, key)
		}
		return
	}
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

// Waiting returns how many of key's calls wait in AcquireWait.
func (p *Pool) Waiting(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiting[key])
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
