package lsp

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
)

// Bounds of the manager.
const (
	// DefaultIdleTimeout is how long a server is kept warm after its last
	// request before it is stopped.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultRequestTimeout bounds one navigation request, the start of a
	// cold server included; a server that does not answer in time is
	// killed and the call fails timed_out.
	DefaultRequestTimeout = 60 * time.Second
	// MaxServers bounds the servers running at once; starting one more
	// stops the one idle the longest.
	MaxServers = 8
)

// Options configure a Manager.
type Options struct {
	// Contain contains the servers (nil: runner.Setup's).
	Contain *runner.Containment
	// Sandbox confines the servers: read-only, their private directory
	// writable (nil: unconfined).
	Sandbox *runner.Policy
	// Getenv reads the environment a server may inherit (nil: os.Getenv).
	Getenv func(string) string
	// CacheRoot holds each server's private directory, kept across
	// restarts ("" gives each server a temporary one, removed when it
	// stops).
	CacheRoot string
	// Languages are the languages served (nil: Languages).
	Languages []Language
	// IdleTimeout and RequestTimeout (0: the defaults).
	IdleTimeout, RequestTimeout time.Duration
}

// A Manager runs language servers, one per project root and language,
// started on first use and stopped after the idle timeout.
type Manager struct {
	opt    Options
	getenv func(string) string

	mu      sync.Mutex
	servers map[key]*entry
	closed  bool
	started int
}

type key struct{ root, lang string }

// entry is a server slot: the server once started, its users and its
// idle timer.
type entry struct {
	ready    chan struct{} // closed once s or err is set
	s        *server
	err      error
	busy     int
	lastUsed time.Time
	idle     *time.Timer
}

// NewManager returns a Manager with no server running.
func NewManager(opt Options) *Manager {
	if opt.IdleTimeout == 0 {
		opt.IdleTimeout = DefaultIdleTimeout
	}
	if opt.Languages == nil {
		opt.Languages = Languages
	}
	if opt.RequestTimeout == 0 {
		opt.RequestTimeout = DefaultRequestTimeout
	}
	m := &Manager{opt: opt, getenv: opt.Getenv, servers: map[key]*entry{}}
	if m.getenv == nil {
		m.getenv = os.Getenv
	}
	return m
}

// acquire returns the running server for (root, l), starting it when
// there is none or the previous one ended; release must follow.
func (m *Manager) acquire(ctx context.Context, root string, l Language) (*server, *entry, error) {
	k := key{root, l.Name}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, nil, failure.New(failure.Unavailable, "the language servers are shutting down")
	}
	e := m.servers[k]
	if e != nil {
		select {
		case <-e.ready:
			if e.err != nil || !e.s.alive() {
				m.drop(k, e)
				e = nil
			}
		default:
		}
	}
	starter := e == nil
	if starter {
		m.started++
		m.evict()
		e = &entry{ready: make(chan struct{})}
		m.servers[k] = e
	}
	e.busy++
	if e.idle != nil {
		e.idle.Stop()
	}
	m.mu.Unlock()
	if starter {
		e.s, e.err = m.start(ctx, l, root)
		close(e.ready)
		if e.err != nil {
			// A failed start leaves no slot: the next call tries again.
			m.mu.Lock()
			if m.servers[k] == e {
				delete(m.servers, k)
			}
			m.mu.Unlock()
		}
	}
	select {
	case <-e.ready:
	case <-ctx.Done():
		m.release(k, e)
		return nil, nil, ctx.Err()
	}
	if e.err != nil {
		m.release(k, e)
		return nil, nil, e.err
	}
	return e.s, e, nil
}

// release ends one use of e; the last one arms its idle timer.
func (m *Manager) release(k key, e *entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.busy--
	e.lastUsed = time.Now()
	if e.busy > 0 || m.servers[k] != e {
		return
	}
	if e.idle == nil {
		e.idle = time.AfterFunc(m.opt.IdleTimeout, func() { m.expire(k, e) })
	} else {
		e.idle.Reset(m.opt.IdleTimeout)
	}
}

// expire stops e's server when it is still idle.
func (m *Manager) expire(k key, e *entry) {
	m.mu.Lock()
	if e.busy > 0 || m.servers[k] != e {
		m.mu.Unlock()
		return
	}
	m.drop(k, e)
	m.mu.Unlock()
}

// drop removes e and stops its server in the background; the caller
// holds m.mu.
func (m *Manager) drop(k key, e *entry) {
	delete(m.servers, k)
	if e.idle != nil {
		e.idle.Stop()
	}
	go func() {
		<-e.ready
		if e.s != nil {
			e.s.stop()
		}
	}()
}

// evict stops the server idle the longest when MaxServers run; the
// caller holds m.mu.
func (m *Manager) evict() {
	if len(m.servers) < MaxServers {
		return
	}
	var oldK key
	var old *entry
	for k, e := range m.servers {
		if e.busy == 0 && (old == nil || e.lastUsed.Before(old.lastUsed)) {
			oldK, old = k, e
		}
	}
	if old != nil {
		m.drop(oldK, old)
	}
}

// Running is how many servers are running or starting.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.servers)
}

// Started is how many server starts were attempted since NewManager.
func (m *Manager) Started() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.started
}

// Close stops every server and waits until they ended; later calls fail.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	all := m.servers
	m.servers = map[key]*entry{}
	m.mu.Unlock()
	for _, e := range all {
		if e.idle != nil {
			e.idle.Stop()
		}
		<-e.ready
		if e.s != nil {
			e.s.stop()
		}
	}
}
