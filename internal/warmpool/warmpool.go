// Package warmpool keeps long-lived child servers warm: one per key,
// started by the first user, shared by the users at once, stopped after
// an idle timeout, bounded in number (the longest idle is stopped to make
// room), and started again once the last one ended. It is what the
// language-server and MCP-provider Managers share; it knows nothing of
// what a server is beyond whether it is alive and how to stop it.
package warmpool

import (
	"context"
	"sync"
	"time"
)

// Options configure a Pool.
type Options[V any] struct {
	// Idle is how long a server is kept after its last use.
	Idle time.Duration
	// Max bounds the servers running or starting at once.
	Max int
	// Alive reports whether a started server still serves.
	Alive func(V) bool
	// Stop stops a server and waits until it ended.
	Stop func(V)
	// Closed is the error of an Acquire after Close.
	Closed error
}

// A Pool holds the servers by key.
type Pool[K comparable, V any] struct {
	opt Options[V]

	mu      sync.Mutex
	slots   map[K]*slot[V]
	closed  bool
	started int
}

// slot holds one server: started once (ready closes when v or err is
// set), its users and its idle timer.
type slot[V any] struct {
	ready chan struct{}
	v     V
	err   error
	users int
	last  time.Time
	timer *time.Timer
}

// New returns an empty Pool.
func New[K comparable, V any](opt Options[V]) *Pool[K, V] {
	return &Pool[K, V]{opt: opt, slots: map[K]*slot[V]{}}
}

func (s *slot[V]) done() bool {
	select {
	case <-s.ready:
		return true
	default:
		return false
	}
}

// Acquire returns the server for k, starting it with start when there is
// none or the last one ended or failed to start; release must be called
// once the use ends. A failed start leaves no slot: the next Acquire
// tries again. A wait for another user's start ends with ctx (its
// error).
func (p *Pool[K, V]) Acquire(ctx context.Context, k K, start func() (V, error)) (v V, release func(), err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return v, nil, p.opt.Closed
	}
	s := p.slots[k]
	if s != nil && s.done() && (s.err != nil || !p.opt.Alive(s.v)) {
		p.remove(k, s)
		s = nil
	}
	first := s == nil
	if first {
		p.started++
		p.evict()
		s = &slot[V]{ready: make(chan struct{})}
		p.slots[k] = s
	}
	s.users++
	if s.timer != nil {
		s.timer.Stop()
	}
	p.mu.Unlock()
	if first {
		s.v, s.err = start()
		close(s.ready)
		if s.err != nil {
			p.mu.Lock()
			if p.slots[k] == s {
				delete(p.slots, k)
			}
			p.mu.Unlock()
		}
	}
	release = func() { p.leave(k, s) }
	select {
	case <-s.ready:
	case <-ctx.Done():
		release()
		return v, nil, ctx.Err()
	}
	if s.err != nil {
		release()
		return v, nil, s.err
	}
	return s.v, release, nil
}

// leave ends one use of s; the last one arms its idle timer.
func (p *Pool[K, V]) leave(k K, s *slot[V]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.users--
	s.last = time.Now()
	if s.users > 0 || p.slots[k] != s {
		return
	}
	if s.timer != nil {
		s.timer.Reset(p.opt.Idle)
		return
	}
	s.timer = time.AfterFunc(p.opt.Idle, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if s.users == 0 && p.slots[k] == s {
			p.remove(k, s)
		}
	})
}

// remove forgets s and stops its server in the background; the caller
// holds p.mu.
func (p *Pool[K, V]) remove(k K, s *slot[V]) {
	delete(p.slots, k)
	if s.timer != nil {
		s.timer.Stop()
	}
	go p.stop(s)
}

// stop waits for s's start and stops what it started.
func (p *Pool[K, V]) stop(s *slot[V]) {
	<-s.ready
	if s.err == nil {
		p.opt.Stop(s.v)
	}
}

// evict stops the server idle the longest when Max run; the caller holds
// p.mu.
func (p *Pool[K, V]) evict() {
	if len(p.slots) < p.opt.Max {
		return
	}
	var victim *slot[V]
	var vk K
	for k, s := range p.slots {
		if s.users == 0 && (victim == nil || s.last.Before(victim.last)) {
			victim, vk = s, k
		}
	}
	if victim != nil {
		p.remove(vk, victim)
	}
}

// Get returns k's server when it has started and is alive; it starts
// nothing.
func (p *Pool[K, V]) Get(k K) (v V, ok bool) {
	p.mu.Lock()
	s := p.slots[k]
	p.mu.Unlock()
	if s == nil || !s.done() || s.err != nil || !p.opt.Alive(s.v) {
		return v, false
	}
	return s.v, true
}

// Each calls f with every started server (for inspection; f must not
// call the Pool).
func (p *Pool[K, V]) Each(f func(V)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.slots {
		if s.done() && s.err == nil {
			f(s.v)
		}
	}
}

// Running is how many servers are running or starting.
func (p *Pool[K, V]) Running() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.slots)
}

// Started is how many starts were attempted since New.
func (p *Pool[K, V]) Started() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started
}

// Close stops every server and waits until they ended; a later Acquire
// fails with Options.Closed.
func (p *Pool[K, V]) Close() {
	p.mu.Lock()
	p.closed = true
	all := p.slots
	p.slots = map[K]*slot[V]{}
	p.mu.Unlock()
	for _, s := range all {
		if s.timer != nil {
			s.timer.Stop()
		}
		p.stop(s)
	}
}
