package runnerhub

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/runnerwire"
)

var _ runner.Reattacher = (*remote)(nil)

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
		return nil, r.hub.unavailable(r.clientID)
	}
	return c, nil
}

// Invoke implements workspace.Remote.
func (r *remote) Invoke(ctx context.Context, p project.Project, op string, args []byte) ([]byte, error) {
	c, err := r.conn(p)
	if err != nil {
		return nil, err
	}
	res, err := c.call(ctx, runnerwire.Request{Op: op, Project: p.Name, Args: args})
	return res.result, err
}

// Start implements runner.Host: the process starts on the runner; its
// output comes back as Output frames into the tails and s's writers. The
// process belongs to the runner, named by s.RunID (one is made when s has
// none): when the connection ends it runs on, and the next connection of
// the same runner process continues it (see Hub's reattach).
func (r *remote) Start(ctx context.Context, s runner.Spec) (runner.Process, error) {
	if len(s.Stdin) > runnerwire.MaxStdinBytes {
		return nil, fmt.Errorf("%w: stdin of %d bytes is over the %d bytes a runner accepts", runner.ErrNotStarted, len(s.Stdin), runnerwire.MaxStdinBytes)
	}
	if len(s.Script) > runnerwire.MaxScriptBytes {
		return nil, fmt.Errorf("%w: a script of %d bytes is over the %d bytes a runner accepts", runner.ErrNotStarted, len(s.Script), runnerwire.MaxScriptBytes)
	}
	c := r.hub.current(r.clientID)
	if c == nil {
		return nil, r.hub.unavailable(r.clientID)
	}
	name, ok := c.projectOf(s.Sandbox.Project)
	if !ok {
		name, ok = r.worktreeOf(ctx, s.Sandbox.Project)
	}
	if !ok {
		return nil, fmt.Errorf("%w: the working project is not one of runner %s's", runner.ErrNotStarted, r.clientID)
	}
	if s.RunID == "" {
		s.RunID = runner.NewRunID()
	}
	args, err := json.Marshal(runnerwire.FromSpec(s))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", runner.ErrNotStarted, err)
	}
	a := runner.Attach{Stdout: s.Stdout, Stderr: s.Stderr, TailBytes: s.TailBytes}
	if s.Collect != "" {
		a.Report = s.CollectTo
		if a.Report == nil {
			a.Report = io.Discard
		}
	}
	pr := r.hub.newProc(c, s.RunID, a)
	if !r.hub.hold(pr) {
		return nil, fmt.Errorf("%w: run id %s is running on runner %s already", runner.ErrNotStarted, s.RunID, r.clientID)
	}
	res, err := c.call(ctx, runnerwire.Request{Op: runnerwire.OpProcStart, Project: name, Args: args})
	switch {
	case err == nil:
	case res.answered: // the runner refused it: nothing ran
		r.hub.drop(pr)
		return nil, fmt.Errorf("%w: %w", runner.ErrNotStarted, err)
	case res.sent:
		c.cancel(s.RunID)
		r.hub.drop(pr)
		return nil, failure.Wrap(failure.OutcomeUnknown, err, "runner %s may have started the process: its outcome is unknown", r.clientID)
	default: // nothing was sent
		r.hub.drop(pr)
		return nil, err
	}
	var st runnerwire.ProcStarted
	if err := runnerwire.Strict(res.result, &st); err != nil {
		c.cancel(s.RunID)
		r.hub.drop(pr)
		return nil, failure.Wrap(failure.OutcomeUnknown, err, "runner %s answered the start with a result that does not decode", r.clientID)
	}
	pr.started(st.PID, runner.Mode(st.Sandbox))
	go func() {
		select {
		case <-ctx.Done():
			pr.Stop()
		case <-pr.done:
		}
	}()
	return pr, nil
}

// Adopt implements runner.Reattacher: the process of runID, started by an
// earlier server process, continues on the runner's live connection from
// a's offsets.
func (r *remote) Adopt(ctx context.Context, runID string, a runner.Attach) (runner.Process, error) {
	c := r.hub.current(r.clientID)
	if c == nil {
		return nil, r.hub.unavailable(r.clientID)
	}
	pr := r.hub.newProc(c, runID, a)
	if !r.hub.hold(pr) {
		return nil, failure.New(failure.Conflict, "process %s of runner %s is supervised already", runID, r.clientID)
	}
	if err := pr.attach(ctx, c); err != nil {
		r.hub.drop(pr)
		return nil, err
	}
	return pr, nil
}

// Release implements runner.Reattacher: the runner forgets runID (best
// effort, in the background; a runner not connected now is told at its
// next hello, where nothing claims the process).
func (r *remote) Release(runID string) {
	c := r.hub.current(r.clientID)
	if c == nil {
		return
	}
	args, _ := json.Marshal(runnerwire.ProcRelease{RunID: runID}) // a struct of one string always encodes
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), WriteTimeout)
		defer cancel()
		if _, err := c.call(ctx, runnerwire.Request{Op: runnerwire.OpProcRelease, Args: args}); err != nil && !failure.Is(err, failure.NotFound) {
			r.hub.o.Logger.Warn("runner: releasing a process", "client_id", r.clientID, "run_id", runID, "err", err)
		}
	}()
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
