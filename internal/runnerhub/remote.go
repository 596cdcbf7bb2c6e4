package runnerhub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/runnerwire"
)

// remote is the workspace.Remote of one runner.
type remote struct {
	hub      *Hub
	clientID string
}

// ID implements workspace.Runner.
func (r *remote) ID() string { return r.clientID }

// InForce is the sandbox the runner reported in its hello ("" when it is
// not connected).
func (r *remote) InForce(runner.Sandbox) runner.Mode {
	if c := r.hub.current(r.clientID); c != nil {
		return runner.Mode(c.sandbox)
	}
	return ""
}

// conn is the live connection of the runner serving p.
func (r *remote) conn(p project.Project) (*conn, error) {
	if p.Runner != r.clientID {
		return nil, failure.New(failure.Internal, "project %s is not served by runner %s", p.ID, r.clientID)
	}
	c := r.hub.current(r.clientID)
	if c == nil {
		return nil, unavailable(r.clientID)
	}
	return c, nil
}

// Invoke implements workspace.Remote.
func (r *remote) Invoke(ctx context.Context, p project.Project, op string, args []byte) ([]byte, error) {
	c, err := r.conn(p)
	if err != nil {
		return nil, err
	}
	id := newRequestID()
	ch, err := c.send(ctx, id, runnerwire.Request{Op: op, Project: p.Name, Args: args}, nil)
	if err != nil {
		return nil, err
	}
	select {
	case res, ok := <-ch:
		if !ok {
			return nil, outcomeUnknown(r.clientID, c.err)
		}
		if res.Error != nil {
			return nil, wireError(res.Error)
		}
		if len(res.Result) == 0 {
			return nil, failure.New(failure.OutcomeUnknown, "runner %s answered with an empty result", r.clientID)
		}
		return res.Result, nil
	case <-ctx.Done():
		c.cancel(id)
		return nil, failure.Wrap(failure.Cancelled, ctx.Err(), "the call ended before runner %s answered", r.clientID)
	}
}

// Start implements runner.Host: the process starts on the runner; its
// output comes back as Output frames into the tails and s's writers.
func (r *remote) Start(ctx context.Context, s runner.Spec) (runner.Process, error) {
	if len(s.Stdin) > runnerwire.MaxStdinBytes {
		return nil, fmt.Errorf("%w: stdin of %d bytes is over the %d bytes a runner accepts", runner.ErrNotStarted, len(s.Stdin), runnerwire.MaxStdinBytes)
	}
	if len(s.Script) > runnerwire.MaxScriptBytes {
		return nil, fmt.Errorf("%w: a script of %d bytes is over the %d bytes a runner accepts", runner.ErrNotStarted, len(s.Script), runnerwire.MaxScriptBytes)
	}
	c := r.hub.current(r.clientID)
	if c == nil {
		return nil, unavailable(r.clientID)
	}
	name, ok := c.projectOf(s.Sandbox.Project)
	if !ok {
		return nil, fmt.Errorf("%w: the working project is not one of runner %s's", runner.ErrNotStarted, r.clientID)
	}
	tail := s.TailBytes
	if tail == 0 {
		tail = runner.DefaultTailBytes
	}
	args, err := json.Marshal(runnerwire.FromSpec(s))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", runner.ErrNotStarted, err)
	}
	id := newRequestID()
	pr := &proc{c: c, id: id, stdout: runner.NewTail(tail), stderr: runner.NewTail(tail), outW: s.Stdout, errW: s.Stderr,
		done: make(chan struct{}), started: time.Now()}
	if s.Collect != "" {
		pr.repW = s.CollectTo
		if pr.repW == nil {
			pr.repW = io.Discard
		}
	}
	ch, err := c.send(ctx, id, runnerwire.Request{Op: runnerwire.OpProcStart, Project: name, Args: args}, func() { c.procs[id] = pr })
	if err != nil {
		return nil, err
	}
	var res runnerwire.Response
	select {
	case got, ok := <-ch:
		if !ok {
			return nil, outcomeUnknown(r.clientID, c.err)
		}
		res = got
	case <-ctx.Done():
		c.cancel(id)
		return nil, failure.Wrap(failure.OutcomeUnknown, ctx.Err(), "the call ended while runner %s was starting the process", r.clientID)
	}
	if res.Error != nil {
		c.mu.Lock()
		delete(c.procs, id)
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", runner.ErrNotStarted, wireError(res.Error))
	}
	var st runnerwire.ProcStarted
	if err := runnerwire.Strict(res.Result, &st); err != nil {
		c.cancel(id)
		return nil, failure.Wrap(failure.OutcomeUnknown, err, "runner %s answered the start with a result that does not decode", r.clientID)
	}
	pr.pid, pr.sandbox = st.PID, runner.Mode(st.Sandbox)
	go func() {
		select {
		case <-ctx.Done():
			c.cancel(id)
		case <-pr.done:
		}
	}()
	return pr, nil
}

// projectOf returns the name of the runner's project rooted at root, as
// its hello announced it.
func (c *conn) projectOf(root string) (string, bool) {
	for name, r := range c.projects {
		if r == root {
			return name, true
		}
	}
	return "", false
}

// proc is a process running on a runner.
type proc struct {
	c       *conn
	id      string
	pid     int
	sandbox runner.Mode
	started time.Time
	stdout  *runner.Tail
	stderr  *runner.Tail
	outW    io.Writer
	errW    io.Writer
	// repW takes the collected file (the Report stream); nil when the
	// start collects none.
	repW io.Writer

	mu      sync.Mutex
	offsets [3]int64
	once    sync.Once
	done    chan struct{}
	result  runner.Result
	err     error
}

// output takes one chunk; a chunk that is not contiguous with the last is
// refused (a gap or a resend never lands in the output), and so is a
// report the start did not ask for or one over runner.MaxCollectBytes.
func (p *proc) output(o runnerwire.Output) error {
	i, tail, w := 0, p.stdout, p.outW
	switch o.Stream {
	case runnerwire.Stderr:
		i, tail, w = 1, p.stderr, p.errW
	case runnerwire.Report:
		i, tail, w = 2, nil, p.repW
		if w == nil {
			return errors.New("a report the process start did not collect")
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if o.Offset != p.offsets[i] {
		return fmt.Errorf("an output chunk at offset %d, expected %d", o.Offset, p.offsets[i])
	}
	if i == 2 && o.Offset+int64(len(o.Data)) > runner.MaxCollectBytes {
		return fmt.Errorf("a report over the %d-byte bound", runner.MaxCollectBytes)
	}
	p.offsets[i] += int64(len(o.Data))
	if tail != nil {
		tail.Write(o.Data)
	}
	if w != nil {
		w.Write(o.Data)
	}
	return nil
}

func (p *proc) exit(e runnerwire.Exit) {
	p.once.Do(func() {
		p.result = e.Result
		p.result.Duration = time.Duration(e.DurationMS) * time.Millisecond
		p.result.Stdout, p.result.Stderr = p.stdout.Snapshot(), p.stderr.Snapshot()
		close(p.done)
	})
}

func (p *proc) lost(why error) {
	p.once.Do(func() {
		p.err = outcomeUnknown(p.c.clientID, why)
		close(p.done)
	})
}

// Done implements runner.Process.
func (p *proc) Done() <-chan struct{} { return p.done }

// Wait implements runner.Process: outcome_unknown when the connection
// ended before the runner reported the exit.
func (p *proc) Wait(ctx context.Context) (runner.Result, error) {
	select {
	case <-p.done:
		return p.result, p.err
	case <-ctx.Done():
		return runner.Result{}, ctx.Err()
	}
}

// Snapshot implements runner.Process.
func (p *proc) Snapshot() (stdout, stderr runner.Output) {
	return p.stdout.Snapshot(), p.stderr.Snapshot()
}

// Stop implements runner.Process.
func (p *proc) Stop() { p.c.cancel(p.id) }

// Sandbox implements runner.Process.
func (p *proc) Sandbox() runner.Mode { return p.sandbox }

// PID implements runner.Process.
func (p *proc) PID() int { return p.pid }

// Identity implements runner.Process: none on this machine.
func (p *proc) Identity() runner.Identity { return runner.Identity{} }
