package lsp

import (
	"context"
	"os"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/warmpool"
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
	pool   *warmpool.Pool[key, *server]
}

type key struct{ root, lang string }

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
	m := &Manager{opt: opt, getenv: opt.Getenv}
	if m.getenv == nil {
		m.getenv = os.Getenv
	}
	m.pool = warmpool.New[key](warmpool.Options[*server]{Idle: opt.IdleTimeout, Max: MaxServers,
		Alive: (*server).alive, Stop: (*server).stop,
		Closed: failure.New(failure.Unavailable, "the language servers are shutting down")})
	return m
}

// acquire returns the running server for (root, l), starting it when
// there is none or the previous one ended; release must follow.
func (m *Manager) acquire(ctx context.Context, root string, l Language) (*server, func(), error) {
	return m.pool.Acquire(ctx, key{root, l.Name}, func() (*server, error) { return m.start(ctx, l, root) })
}

// Running is how many servers are running or starting.
func (m *Manager) Running() int { return m.pool.Running() }

// Started is how many server starts were attempted since NewManager.
func (m *Manager) Started() int { return m.pool.Started() }

// Close stops every server and waits until they ended; later calls fail.
func (m *Manager) Close() { m.pool.Close() }
