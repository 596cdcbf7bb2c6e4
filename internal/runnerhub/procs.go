// Processes on runners, as the server supervises them. A process belongs
// to the runner process that started it (its instance), not to a
// connection: when a connection ends, the process is detached and waits
// ReattachWindow for that runner to connect again. The next hello of the
// same instance that lists it attaches it again (proc.attach from the
// offsets received so far, so no byte is lost or doubled); a hello of
// another instance (the runner restarted) or the end of the window makes it
// lost, its outcome unknown.

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
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/runnerwire"
)

// ReattachWindow is how long a detached process waits for its runner: the
// heartbeat-loss window, MissedHeartbeats intervals.
func (h *Hub) ReattachWindow() time.Duration { return runnerwire.MissedHeartbeats * h.o.Heartbeat }

type procKey struct{ clientID, runID string }

// proc is a process on a runner.
type proc struct {
	hub      *Hub
	clientID string
	runID    string
	instance string // the runner process that holds it
	stdout   *runner.Tail
	stderr   *runner.Tail
	outW     io.Writer
	errW     io.Writer
	// repW takes the collected report; nil when the start collects none.
	repW io.Writer

	mu      sync.Mutex
	c       *conn // the connection its output comes on; nil while detached
	pid     int
	sandbox runner.Mode
	offsets [3]int64    // stdout, stderr, report
	stopReq bool        // Stop was called while detached
	timer   *time.Timer // the reattach window, while detached
	once    sync.Once
	done    chan struct{}
	result  runner.Result
	err     error
}

// newProc returns the proc of runID on c's runner.
func (h *Hub) newProc(c *conn, runID string, a runner.Attach) *proc {
	tail := a.TailBytes
	if tail == 0 {
		tail = runner.DefaultTailBytes
	}
	return &proc{hub: h, clientID: c.clientID, runID: runID, instance: c.instanceID,
		stdout: runner.NewTail(tail), stderr: runner.NewTail(tail), outW: a.Stdout, errW: a.Stderr, repW: a.Report,
		c: c, offsets: [3]int64{a.StdoutOffset, a.StderrOffset, a.ReportOffset}, done: make(chan struct{})}
}

// hold registers p; false when its run id is held already.
func (h *Hub) hold(p *proc) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := procKey{p.clientID, p.runID}
	if h.procs[k] != nil {
		return false
	}
	h.procs[k] = p
	return true
}

// drop forgets p.
func (h *Hub) drop(p *proc) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if k := (procKey{p.clientID, p.runID}); h.procs[k] == p {
		delete(h.procs, k)
	}
}

// attached returns the process of runID whose output comes on c, or nil.
func (h *Hub) attached(c *conn, runID string) *proc {
	h.mu.Lock()
	p := h.procs[procKey{c.clientID, runID}]
	h.mu.Unlock()
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c != c {
		return nil
	}
	return p
}

// procsOf returns the processes of clientID's runner.
func (h *Hub) procsOf(clientID string) []*proc {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*proc
	for k, p := range h.procs {
		if k.clientID == clientID {
			out = append(out, p)
		}
	}
	return out
}

// detachAll detaches the processes whose output came on c, which ended.
func (h *Hub) detachAll(c *conn) {
	for _, p := range h.procsOf(c.clientID) {
		p.detach(c)
	}
}

// reattach attaches again, on c, the detached processes its runner holds
// (inv, from its hello), and makes lost those it no longer holds. It
// returns the run ids of inv no process of this server claims.
func (h *Hub) reattach(c *conn, inv []runnerwire.Inventory) []string {
	held := map[string]bool{}
	for _, e := range inv {
		held[e.ID] = true
	}
	for _, p := range h.procsOf(c.clientID) {
		p.mu.Lock()
		cur := p.c
		p.mu.Unlock()
		if cur != nil && cur != c && cur.ended() {
			p.detach(cur) // its connection ended and c is already here
			cur = nil
		}
		switch {
		case cur != nil:
			delete(held, p.runID) // a process c started or adopted
		case p.instance != c.instanceID:
			p.lost(fmt.Errorf("%w (instance %s, now %s)", runner.ErrHostRestarted, p.instance, c.instanceID))
		case !held[p.runID]:
			p.lost(errors.New("the runner no longer holds the process"))
		default:
			delete(held, p.runID)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), WriteTimeout)
				defer cancel()
				if err := p.attach(ctx, c); err != nil {
					p.lost(err)
				}
			}()
		}
	}
	var free []string
	for _, e := range inv {
		if held[e.ID] {
			free = append(free, e.ID)
		}
	}
	return free
}

// started records what the runner answered a start.
func (p *proc) started(pid int, sandbox runner.Mode) {
	p.mu.Lock()
	p.pid, p.sandbox = pid, sandbox
	p.mu.Unlock()
}

// attach asks c's runner to send the output from the offsets received so
// far, then the exit.
func (p *proc) attach(ctx context.Context, c *conn) error {
	p.mu.Lock()
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.c = c // before the request: the output may follow the answer at once
	args, _ := json.Marshal(runnerwire.ProcAttach{RunID: p.runID, StdoutOffset: p.offsets[0], StderrOffset: p.offsets[1], ReportOffset: p.offsets[2]})
	stop := p.stopReq
	p.mu.Unlock()
	res, err := c.call(ctx, runnerwire.Request{Op: runnerwire.OpProcAttach, Args: args})
	if err != nil {
		p.mu.Lock()
		if p.c == c {
			p.c = nil
		}
		p.mu.Unlock()
		if failure.Is(err, failure.NotFound) {
			return failure.Wrap(failure.OutcomeUnknown, err, "runner %s no longer holds the process: its outcome is unknown", p.clientID)
		}
		return err
	}
	var st runnerwire.ProcAttached
	if err := runnerwire.Strict(res.result, &st); err != nil {
		return failure.Wrap(failure.OutcomeUnknown, err, "runner %s answered the attach with a result that does not decode", p.clientID)
	}
	p.started(st.PID, runner.Mode(st.Sandbox))
	if stop {
		c.cancel(p.runID)
	}
	return nil
}

// detach notes that c, which carried p's output, ended: p waits the
// reattach window for its runner.
func (p *proc) detach(c *conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c != c {
		return
	}
	p.c = nil
	if p.timer == nil {
		p.timer = time.AfterFunc(p.hub.ReattachWindow(), func() {
			p.lost(fmt.Errorf("runner %s did not come back within %s", p.clientID, p.hub.ReattachWindow()))
		})
	}
}

// output takes one chunk; a chunk that is not contiguous with the last is
// refused (a gap or a resend never lands in the output), and so is a
// report the start did not collect or one over runner.MaxCollectBytes.
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

// skip takes a skip: the bytes up to offset that were not received never
// will be; a writer that can count them (runner.Skipper) is told.
func (p *proc) skip(stream string, offset int64) error {
	i, w := 0, p.outW
	switch stream {
	case runnerwire.Stderr:
		i, w = 1, p.errW
	case runnerwire.Report:
		// A report's spool holds the whole of it: a part of a report is
		// never passed on as one.
		return errors.New("a skip in a report")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if offset <= p.offsets[i] {
		return fmt.Errorf("a skip to offset %d, already at %d", offset, p.offsets[i])
	}
	n := offset - p.offsets[i]
	p.offsets[i] = offset
	if s, ok := w.(runner.Skipper); ok {
		s.Skip(n)
	}
	return nil
}

func (p *proc) exit(e runnerwire.Exit) {
	p.once.Do(func() {
		p.hub.drop(p)
		p.stopTimer()
		p.result = e.Result
		p.result.Duration = time.Duration(e.DurationMS) * time.Millisecond
		p.result.Stdout, p.result.Stderr = p.stdout.Snapshot(), p.stderr.Snapshot()
		p.result.Stdout.TotalBytes, p.result.Stderr.TotalBytes = e.Result.Stdout.TotalBytes, e.Result.Stderr.TotalBytes
		close(p.done)
	})
}

// lost ends p with its outcome unknown.
func (p *proc) lost(why error) {
	p.once.Do(func() {
		p.hub.drop(p)
		p.stopTimer()
		p.err = outcomeUnknown(p.clientID, why)
		if errors.Is(why, runner.ErrHostRestarted) {
			p.err = fmt.Errorf("%w: %w", runner.ErrHostRestarted, p.err)
		}
		close(p.done)
	})
}

func (p *proc) stopTimer() {
	p.mu.Lock()
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.mu.Unlock()
}

// Done implements runner.Process.
func (p *proc) Done() <-chan struct{} { return p.done }

// Wait implements runner.Process: outcome_unknown when the runner did not
// report the exit (it restarted, or did not come back in time).
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

// Stop implements runner.Process: the runner stops the process; while no
// connection carries it, once one does.
func (p *proc) Stop() {
	p.mu.Lock()
	c := p.c
	if c == nil {
		p.stopReq = true
	}
	p.mu.Unlock()
	if c != nil {
		c.cancel(p.runID)
	}
}

// Sandbox implements runner.Process.
func (p *proc) Sandbox() runner.Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sandbox
}

// PID implements runner.Process.
func (p *proc) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

// Identity implements runner.Process: none on this machine.
func (p *proc) Identity() runner.Identity { return runner.Identity{} }
