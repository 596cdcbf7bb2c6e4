package sshresource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

// Bounds of the ControlMaster connections.
const (
	// MaxMasters bounds the masters one Pool holds at once (starting ones
	// included), across all sessions.
	MaxMasters = 32
	// MaxSessionBytes bounds the session id of a Key.
	MaxSessionBytes = 128
	// MaxControlPathBytes bounds a control socket path. A unix socket
	// path holds 104 bytes on BSD and macOS (108 on Linux) with its NUL,
	// and a master first binds its path plus '.' and 16 random
	// characters, then renames it: 80 + 17 + 1 fits everywhere.
	MaxControlPathBytes = 80
	// ReadyTimeout bounds a master's start: its connection, host key
	// check and authentication, until `ssh -O check` answers.
	ReadyTimeout = 2 * ConnectTimeout
	// CloseTimeout bounds the `ssh -O exit` of Close, and then again the
	// wait for the master to exit before it is killed.
	CloseTimeout = 5 * time.Second
	// MaxStderrBytes is how much of a master's stderr is kept (its tail),
	// to classify a failed start; it is never shown.
	MaxStderrBytes = 8 << 10
	// readyPoll is the interval between readiness probes of a starting
	// master (a probe is a stat and, once the socket exists, one
	// `ssh -O check`).
	readyPoll = 5 * time.Millisecond
	// controlNameBytes is the length of a control socket's hashed name.
	controlNameBytes = 16
)

// Key names one master: the Workflow Session, the resource name and the
// generation (the runner's connection generation, or any counter the
// caller bumps to retire a master). Only Resource is ever shown.
type Key struct {
	Session    string
	Resource   string
	Generation uint64
}

func (k Key) validate() error {
	if k.Session == "" || len(k.Session) > MaxSessionBytes || strings.ContainsRune(k.Session, 0) {
		return failure.New(failure.InvalidArguments, "a master's session id must be 1 to %d bytes without NUL", MaxSessionBytes)
	}
	if !ValidName(k.Resource) {
		return failure.New(failure.InvalidArguments, "an ssh resource name must be 1 to %d characters of a-z, 0-9, '_' and '-'", MaxNameBytes)
	}
	return nil
}

// controlName is the socket's file name: a hash of the key, so that the
// path stays short whatever the session id and never shows it.
func (k Key) controlName() string {
	h := sha256.Sum256([]byte(k.Session + "\x00" + k.Resource + "\x00" + strconv.FormatUint(k.Generation, 10)))
	return hex.EncodeToString(h[:])[:controlNameBytes]
}

// Master is one ControlMaster connection to a resource, owned by the
// process that started it (a child `ssh -N`, never a daemon). Each command
// run through it (Argv) is its own `ssh` invocation and its own SSH
// channel on the shared, already authenticated connection.
//
// Contract: a Master is never reused once closed. A command already
// started through a master stays bound to it: when the master closes
// (Close, a generation change, Pool.Close) the command's channel is torn
// down and its `ssh` exits with ExitConnectionFailed; it is never
// redirected to another connection and never replayed. Its caller reports
// its outcome as unknown: the remote process is not stopped by the end of
// its channel (without a terminal, sshd only closes its input and output,
// and sends no signal), so a command that ignores them runs on, unmanaged. An argv built for a closed master but not yet
// started makes its own direct connection when started (OpenSSH's
// ControlMaster=no falls back), with the same options and checks.
//
// On systems without unix sockets (Windows) a Master holds no connection:
// ControlPath is "" and Argv is the resource's direct Argv.
type Master struct {
	key  Key
	res  Resource
	path string
	proc *masterProc

	closeOnce sync.Once
	closeErr  error
}

// Key returns the master's key.
func (m *Master) Key() Key { return m.key }

// ControlPath returns the master's control socket, or "" when commands
// connect directly (no multiplexing on this system).
func (m *Master) ControlPath() string { return m.path }

// Argv returns the argv of one command through the master: the resource's
// options, ControlMaster=no and the master's ControlPath, "--", the host
// and remote (the result of RemoteCommand).
func (m *Master) Argv(remote string) ([]string, error) {
	argv, err := m.res.Argv(remote)
	if err != nil || m.path == "" {
		return argv, err
	}
	n := len(argv) - 3 // before "--", host, remote
	out := make([]string, 0, len(argv)+4)
	out = append(out, argv[:n]...)
	out = append(out, "-o", "ControlMaster=no", "-o", "ControlPath="+m.path)
	return append(out, argv[n:]...), nil
}

// Close ends the master: `ssh -O exit`, then the process is killed if it
// has not exited within CloseTimeout (at once when it did not take the
// request), and its socket is removed. Commands
// running through it lose their channel. Close is idempotent.
func (m *Master) Close() error {
	m.closeOnce.Do(func() { m.closeErr = m.stop() })
	return m.closeErr
}

// Pool holds the masters of a runner, at most one per (session, resource)
// and at most MaxMasters in all, in one private directory (mode 0700) of
// control sockets.
type Pool struct {
	dir string

	mu      sync.Mutex
	closed  bool
	entries map[slot]*entry
}

type slot struct{ session, resource string }

type entry struct {
	gen   uint64
	ready chan struct{} // closed when the start has ended
	m     *Master       // set when ready and the start succeeded
	err   error         // set when ready and the start failed
}

// NewPool makes a Pool whose control sockets live in a new private
// directory under parent ("" = os.TempDir(), or /tmp when that would make
// socket paths longer than MaxControlPathBytes).
func NewPool(parent string) (*Pool, error) {
	dir, err := newControlDir(parent)
	if err != nil {
		return nil, err
	}
	return &Pool{dir: dir, entries: map[slot]*entry{}}, nil
}

// Master returns the live master of key, starting it if needed.
//
//   - The same key returns the same master while it lives; a master whose
//     process has died is replaced by a new one on the next call.
//   - A newer generation for the same session and resource closes the
//     old master first (its running commands lose their channel) and
//     starts a new one; the old master is never used again.
//   - An older generation than the pool's is refused (failure.Conflict).
//   - failure.Unavailable: the pool holds MaxMasters masters or is
//     closed, or the connection failed; failure.PermissionDenied: the
//     host key or the identity was refused (see Classify);
//     failure.InvalidArguments: a bad key or resource, or key.Resource
//     is not r.Name.
//
// Concurrent calls for one key share one start.
func (p *Pool) Master(ctx context.Context, key Key, r Resource) (*Master, error) {
	if err := key.validate(); err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if key.Resource != r.Name {
		return nil, failure.New(failure.InvalidArguments, "master key names ssh resource %q, not %q", key.Resource, r.Name)
	}
	s := slot{key.Session, key.Resource}
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, failure.New(failure.Unavailable, "ssh resource %q: the runner's ssh masters are closed", key.Resource)
		}
		e := p.entries[s]
		if e == nil || e.gen != key.Generation {
			break
		}
		select {
		case <-e.ready:
		default:
			p.mu.Unlock()
			select {
			case <-e.ready:
			case <-ctx.Done():
				return nil, failure.Wrap(failure.Cancelled, ctx.Err(), "ssh resource %q: cancelled while its master started", key.Resource)
			}
			p.mu.Lock()
			if e.err != nil {
				p.mu.Unlock()
				return nil, e.err
			}
			continue
		}
		if e.err == nil && e.m.alive() {
			p.mu.Unlock()
			return e.m, nil
		}
		break // failed or died: replaced below
	}
	var old *Master
	if e := p.entries[s]; e != nil {
		if key.Generation < e.gen {
			p.mu.Unlock()
			return nil, failure.New(failure.Conflict, "ssh resource %q: generation %d is older than the master's (%d)", key.Resource, key.Generation, e.gen)
		}
		old = e.m // nil while a start is under way: that starter closes its own
		delete(p.entries, s)
	}
	if len(p.entries) >= MaxMasters {
		p.mu.Unlock()
		closeMaster(old)
		return nil, failure.New(failure.Unavailable, "ssh resource %q: the runner already holds %d ssh masters (the most allowed); nothing was started", key.Resource, MaxMasters)
	}
	e := &entry{gen: key.Generation, ready: make(chan struct{})}
	p.entries[s] = e
	p.mu.Unlock()

	closeMaster(old)
	m, err := startMaster(ctx, r, key, filepath.Join(p.dir, key.controlName()))

	p.mu.Lock()
	e.m, e.err = m, err
	close(e.ready)
	current := p.entries[s] == e
	if !current || err != nil {
		if current {
			delete(p.entries, s)
		}
		p.mu.Unlock()
		if err == nil {
			closeMaster(m)
			err = failure.New(failure.Conflict, "ssh resource %q: its master was retired while it started", key.Resource)
		}
		return nil, err
	}
	p.mu.Unlock()
	return m, nil
}

// Len returns the number of masters held, starting ones included.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.entries)
}

// Close closes every master of session (a closed or ended Workflow
// Session) and waits for them to end. A master still starting is closed
// by its starter.
func (p *Pool) Close(session string) {
	p.mu.Lock()
	var ms []*Master
	for s, e := range p.entries {
		if s.session == session {
			ms = append(ms, e.m)
			delete(p.entries, s)
		}
	}
	p.mu.Unlock()
	closeAll(ms)
}

// CloseAll closes every master, refuses new ones and removes the
// directory of control sockets.
func (p *Pool) CloseAll() error {
	p.mu.Lock()
	p.closed = true
	var ms []*Master
	for s, e := range p.entries {
		ms = append(ms, e.m)
		delete(p.entries, s)
	}
	p.mu.Unlock()
	closeAll(ms)
	if p.dir == "" {
		return nil
	}
	return os.RemoveAll(p.dir)
}

func closeAll(ms []*Master) {
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() { closeMaster(m) })
	}
	wg.Wait()
}

// closeMaster closes m when it is not nil (a start under way has none).
func closeMaster(m *Master) {
	if m != nil {
		_ = m.Close()
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.b...)
}
