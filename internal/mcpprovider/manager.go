package mcpprovider

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/warmpool"
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
	pool   *warmpool.Pool[slotKey, *instance]
}

type slotKey struct{ provider, root string }

// NewManager returns a Manager with no provider running.
func NewManager(opt Options) *Manager {
	if opt.IdleTimeout == 0 {
		opt.IdleTimeout = DefaultIdleTimeout
	}
	if opt.RequestTimeout == 0 {
		opt.RequestTimeout = DefaultRequestTimeout
	}
	m := &Manager{opt: opt, getenv: opt.Getenv}
	if m.getenv == nil {
		m.getenv = os.Getenv
	}
	m.pool = warmpool.New[slotKey](warmpool.Options[*instance]{Idle: opt.IdleTimeout, Max: MaxInstances,
		Alive: (*instance).alive, Stop: (*instance).stop,
		Closed: failure.New(failure.Unavailable, "the MCP providers are shutting down")})
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
	in, release, err := m.pool.Acquire(ctx, slotKey{name, filepath.Clean(p.Root)}, func() (*instance, error) {
		return m.start(ctx, name, pv, p.Root, dir, runner.Mode(p.Sandbox))
	})
	if err != nil {
		var ferr *failure.Error
		switch {
		case errors.As(err, &ferr):
		case errors.Is(err, context.DeadlineExceeded):
			err = failure.Wrap(failure.TimedOut, err, "provider %s did not start in time", name)
		default:
			err = failure.Wrap(failure.Cancelled, err, "the request was cancelled while provider %s started", name)
		}
		return nil, nil, err
	}
	return in, release, nil
}

// Running is how many instances are running or starting.
func (m *Manager) Running() int { return m.pool.Running() }

// Started is how many starts were attempted since NewManager.
func (m *Manager) Started() int { return m.pool.Started() }

// Close stops every instance and waits until they ended; later requests
// fail unavailable.
func (m *Manager) Close() { m.pool.Close() }
