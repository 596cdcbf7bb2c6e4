package mcpprovider

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
)

// MaxMessageBytes bounds one message a provider sends (a tools/list page,
// a tool's answer): a longer one ends the connection, the instance is
// stopped and the request fails operation_failed with outcome
// answer_too_large. Nothing is truncated.
const MaxMessageBytes = 1 << 20

// Outcomes of a failed request (detail "outcome").
const (
	// OutcomeKilled: the provider did not answer in time and was killed.
	OutcomeKilled = "provider_killed"
	// OutcomeExited: the provider ended during the request.
	OutcomeExited = "provider_exited"
	// OutcomeTooLarge: the provider's answer was over MaxMessageBytes;
	// it was dropped and the provider stopped.
	OutcomeTooLarge = "answer_too_large"
)

// errTooLarge is the read error of a message over MaxMessageBytes.
var errTooLarge = errors.New("provider message over the size bound")

// boundedReader passes a provider's output through, failing once one
// line (one JSON-RPC message) passes max bytes.
type boundedReader struct {
	r    io.ReadCloser
	max  int
	line int
	over atomic.Bool
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.over.Load() {
		return 0, errTooLarge
	}
	n, err := b.r.Read(p)
	for _, c := range p[:n] {
		if c == '\n' {
			b.line = 0
			continue
		}
		b.line++
		if b.line > b.max {
			b.over.Store(true)
			return 0, errTooLarge
		}
	}
	return n, err
}

func (b *boundedReader) Close() error { return b.r.Close() }

// instance is one running provider for one project.
type instance struct {
	name    string
	cmd     *exec.Cmd
	unit    *runner.Unit
	out     *boundedReader
	session *mcp.ClientSession
	exited  chan struct{}
	private string

	mu        sync.Mutex  // guards tools, truncated, listed
	tools     []*mcp.Tool // nil until listed, dropped on list_changed
	truncated bool        // the listing left tools out
	listed    bool        // the provider answered tools/list once

	stopOnce sync.Once
}

// start starts provider name for a project rooted at root, in dir,
// confined to the project (workspace-write at most; read-only when the
// project is) with a private temporary directory writable, contained, and
// runs the MCP handshake.
func (m *Manager) start(ctx context.Context, name string, pv Provider, root, dir string, mode runner.Mode) (_ *instance, err error) {
	in := &instance{name: name, exited: make(chan struct{})}
	if in.private, err = os.MkdirTemp("", "webcodex-mcp-"); err != nil {
		return nil, failure.Wrap(failure.NotStarted, err, "cannot make provider %s's private directory", name)
	}
	defer func() {
		if err != nil {
			in.stop()
		}
	}()
	add := map[string]string{"TMPDIR": in.private}
	for _, k := range pv.Env {
		if v := m.getenv(k); v != "" {
			add[k] = v
		}
	}
	if mode != runner.ReadOnly {
		mode = runner.WorkspaceWrite
	}
	conf, err := m.opt.Sandbox.Confine(runner.Sandbox{Mode: mode, Project: root, Write: []string{in.private}, Exact: true})
	if err != nil {
		return nil, failure.Wrap(failure.NotStarted, err, "cannot confine provider %s", name)
	}
	defer conf.Close(m.opt.Sandbox)
	env := conf.Env(runner.ChildEnv(m.getenv, add))
	bin, err := lookCommand(pv.Command, env)
	if err != nil {
		return nil, failure.Wrap(failure.NotStarted, err, "provider %s: %s is not found", name, pv.Command).WithDetail("provider", name)
	}
	cmd := exec.Command(bin, pv.Args...)
	cmd.Dir, cmd.Env, cmd.SysProcAttr = dir, env, groupAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, failure.Wrap(failure.NotStarted, err, "cannot start provider %s", name)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, failure.Wrap(failure.NotStarted, err, "cannot start provider %s", name)
	}
	contain := m.opt.Contain
	if contain == nil {
		contain = runner.Setup()
	}
	if in.unit, err = contain.Start(cmd, runner.NewRunID(), conf.Start); err != nil {
		return nil, failure.Wrap(failure.NotStarted, err, "cannot start provider %s", name)
	}
	in.cmd = cmd
	in.out = &boundedReader{r: stdout, max: MaxMessageBytes}
	client := mcp.NewClient(&mcp.Implementation{Name: "webcodex", Version: m.opt.Version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { in.forget() },
	})
	cctx, cancel := context.WithTimeout(ctx, m.opt.RequestTimeout)
	defer cancel()
	in.session, err = client.Connect(cctx, &mcp.IOTransport{Reader: in.out, Writer: stdin, MaxLineLength: MaxMessageBytes + 1}, nil)
	if err != nil {
		in.watch(nil)
		return nil, in.failed(cctx, err, "initialize", failure.NotStarted)
	}
	in.watch(in.session)
	return in, nil
}

// watch reaps the process once its connection (or, before one, its
// output) ends.
func (in *instance) watch(s *mcp.ClientSession) {
	go func() {
		if s != nil {
			s.Wait()
		} else {
			in.out.Close()
		}
		in.cmd.Wait()
		in.unit.Release()
		close(in.exited)
	}()
}

// failed turns a request's error into the call's failure, stopping the
// instance when it can no longer serve: it answered too much, did not
// answer in time, or ended. kind is the kind of a plain failure (the
// provider answered with a protocol error, or the handshake failed).
func (in *instance) failed(ctx context.Context, err error, method string, kind failure.Kind) error {
	var ferr *failure.Error
	switch {
	case errors.As(err, &ferr):
		return err
	case in.out.over.Load():
		in.stop()
		return failure.Wrap(failure.OperationFailed, err, "provider %s answered %s with a message over %d bytes; the answer was dropped and the provider stopped", in.name, method, MaxMessageBytes).
			WithDetail("outcome", OutcomeTooLarge).WithDetail("provider", in.name)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		in.stop()
		return failure.Wrap(failure.TimedOut, err, "provider %s did not answer %s in time; it was killed and starts again on the next call", in.name, method).
			WithDetail("outcome", OutcomeKilled).WithDetail("provider", in.name)
	case errors.Is(ctx.Err(), context.Canceled):
		in.stop()
		return failure.Wrap(failure.Cancelled, err, "the %s request to provider %s was cancelled", method, in.name).WithDetail("provider", in.name)
	case !in.alive() || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed):
		in.stop()
		return failure.Wrap(kind, err, "provider %s ended during %s; it starts again on the next call", in.name, method).
			WithDetail("outcome", OutcomeExited).WithDetail("provider", in.name)
	}
	return failure.Wrap(kind, err, "provider %s: %s failed: %v", in.name, method, err).WithDetail("provider", in.name)
}

// alive reports whether the provider still serves.
func (in *instance) alive() bool {
	select {
	case <-in.exited:
		return false
	default:
		return true
	}
}

// forget drops the listed tools (the provider said its list changed).
func (in *instance) forget() {
	in.mu.Lock()
	in.tools = nil
	in.mu.Unlock()
}

// stop kills the provider and everything it started and removes its
// private directory; it may be called more than once.
func (in *instance) stop() {
	in.stopOnce.Do(func() {
		if in.unit != nil {
			if in.session != nil {
				in.session.Close()
			}
			in.unit.Kill()
			if in.cmd.Process != nil {
				in.cmd.Process.Kill()
			}
			<-in.exited
		}
		if in.private != "" {
			os.RemoveAll(in.private)
		}
	})
}
