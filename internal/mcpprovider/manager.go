package mcpprovider

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
)

// Bounds of the manager.
const (
	// DefaultIdleTimeout is how long an instance is kept after its last
	// request before it is stopped.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultRequestTimeout bounds one request, the start of a cold
	// instance included; a provider that does not answer in time is
	// killed and the request fails timed_out.
	DefaultRequestTimeout = 60 * time.Second
	// MaxInstances bounds the instances running at once; starting one
	// more stops the one idle the longest.
	MaxInstances = 8
)

// Options configure a Manager.
type Options struct {
	// Providers are the configured providers by name.
	Providers map[string]Provider
	// Contain contains the providers (nil: runner.Setup's).
	Contain *runner.Containment
	// Sandbox confines them (nil: unconfined).
	Sandbox *runner.Policy
	// Getenv reads the environment (nil: os.Getenv).
	Getenv func(string) string
	// Version is the client version the providers are told.
	Version string
	// IdleTimeout and RequestTimeout (0: the defaults).
	IdleTimeout, RequestTimeout time.Duration
}

// A Manager runs the configured providers, one instance per provider and
// project, started on first use and stopped after the idle timeout.
type Manager struct {
	opt    Options
	getenv func(string) string

	mu      sync.Mutex
	slots   map[slotKey]*slot
	closed  bool
	started int
}

type slotKey struct{ provider, root string }

// slot holds one instance: started once (ready closes when in or err is
// set), its users and its idle timer.
type slot struct {
	ready chan struct{}
	in    *instance
	err   error
	users int
	last  time.Time
	timer *time.Timer
}

// NewManager returns a Manager with no provider running.
func NewManager(opt Options) *Manager {
	if opt.IdleTimeout == 0 {
		opt.IdleTimeout = DefaultIdleTimeout
	}
	if opt.RequestTimeout == 0 {
		opt.RequestTimeout = DefaultRequestTimeout
	}
	m := &Manager{opt: opt, getenv: opt.Getenv, slots: map[slotKey]*slot{}}
	if m.getenv == nil {
		m.getenv = os.Getenv
	}
	return m
}

// Names are the configured providers' names, sorted.
func (m *Manager) Names() []string {
	names := make([]string, 0, len(m.opt.Providers))
	for n := range m.opt.Providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// provider returns the provider name serving p and the directory it
// starts in; unknown_mcp_provider when none is configured by that name
// or its cwd lies outside p.
func (m *Manager) provider(p project.Project, name string) (Provider, string, error) {
	pv, ok := m.opt.Providers[name]
	if !ok {
		return Provider{}, "", failure.New(failure.UnknownMCPProvider, "no MCP provider %q is configured where this project's files are (configured: %v)", name, m.Names()).WithDetail("provider", name)
	}
	if pv.Cwd == "" {
		return pv, p.Root, nil
	}
	if !inside(pv.Cwd, p.Root) {
		return Provider{}, "", failure.New(failure.UnknownMCPProvider, "MCP provider %q serves another project (its cwd is outside this project's root)", name).WithDetail("provider", name)
	}
	return pv, pv.Cwd, nil
}

// acquire returns the running instance of name for p, starting one when
// there is none or the last one ended; the returned func ends the use.
func (m *Manager) acquire(ctx context.Context, p project.Project, name string) (*instance, func(), error) {
	pv, dir, err := m.provider(p, name)
	if err != nil {
		return nil, nil, err
	}
	k := slotKey{name, filepath.Clean(p.Root)}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, nil, failure.New(failure.Unavailable, "the MCP providers are shutting down")
	}
	s := m.slots[k]
	if s != nil && s.done() && (s.err != nil || !s.in.alive()) {
		m.remove(k, s)
		s = nil
	}
	first := s == nil
	if first {
		m.started++
		m.evictIdlest()
		s = &slot{ready: make(chan struct{})}
		m.slots[k] = s
	}
	s.users++
	if s.timer != nil {
		s.timer.Stop()
	}
	m.mu.Unlock()
	if first {
		s.in, s.err = m.start(ctx, name, pv, p.Root, dir, runner.Mode(p.Sandbox))
		close(s.ready)
		if s.err != nil {
			// A failed start leaves no slot: the next request tries again.
			m.mu.Lock()
			if m.slots[k] == s {
				delete(m.slots, k)
			}
			m.mu.Unlock()
		}
	}
	done := func() { m.leave(k, s) }
	select {
	case <-s.ready:
	case <-ctx.Done():
		done()
		return nil, nil, failure.Wrap(failure.Cancelled, ctx.Err(), "waiting for provider %s to start", name)
	}
	if s.err != nil {
		done()
		return nil, nil, s.err
	}
	return s.in, done, nil
}

// done reports whether the slot's start has finished.
func (s *slot) done() bool {
	select {
	case <-s.ready:
		return true
	default:
		return false
	}
}

// leave ends one use of s; the last one arms its idle timer.
func (m *Manager) leave(k slotKey, s *slot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s.users--
	s.last = time.Now()
	if s.users > 0 || m.slots[k] != s {
		return
	}
	if s.timer != nil {
		s.timer.Reset(m.opt.IdleTimeout)
		return
	}
	s.timer = time.AfterFunc(m.opt.IdleTimeout, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if s.users == 0 && m.slots[k] == s {
			m.remove(k, s)
		}
	})
}

// remove forgets s and stops its instance in the background; the caller
// holds m.mu.
func (m *Manager) remove(k slotKey, s *slot) {
	delete(m.slots, k)
	if s.timer != nil {
		s.timer.Stop()
	}
	go s.stop()
}

// stop waits for s's start and stops what it started.
func (s *slot) stop() {
	<-s.ready
	if s.in != nil {
		s.in.stop()
	}
}

// evictIdlest stops the instance idle the longest when MaxInstances run;
// the caller holds m.mu.
func (m *Manager) evictIdlest() {
	if len(m.slots) < MaxInstances {
		return
	}
	var victim *slot
	var vk slotKey
	for k, s := range m.slots {
		if s.users > 0 {
			continue
		}
		if victim == nil || s.last.Before(victim.last) {
			victim, vk = s, k
		}
	}
	if victim != nil {
		m.remove(vk, victim)
	}
}

// Running is how many instances are running or starting.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.slots)
}

// Started is how many starts were attempted since NewManager.
func (m *Manager) Started() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.started
}

// Close stops every instance and waits until they ended; later requests
// fail unavailable.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	all := m.slots
	m.slots = map[slotKey]*slot{}
	m.mu.Unlock()
	for _, s := range all {
		if s.timer != nil {
			s.timer.Stop()
		}
		s.stop()
	}
}
