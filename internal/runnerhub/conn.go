package runnerhub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runnerlink"
	"github.com/webcodex/webcodex/internal/runnerwire"
)

// conn is one accepted connection of a runner: one generation.
type conn struct {
	hub        *Hub
	link       runnerlink.Link
	clientID   string
	owner      string
	instanceID string
	token      string // raw, re-checked at every heartbeat (never logged)
	gen        uint64
	sandbox    string
	projects   map[string]string // the runner's projects: name → root there
	resources  []string          // its SSH resources' names

	lastSeen atomic.Int64

	mu      sync.Mutex
	pending map[string]chan runnerwire.Response
	parts   map[string][]byte // results arriving in binary pieces, by request
	done    chan struct{}
	err     error // why the connection ended, once done is closed

	// welcomed is closed once the welcome was written: every other
	// write waits for it.
	welcomed chan struct{}
}

func newConn(h *Hub, link runnerlink.Link, tok auth.Token, raw string, hello runnerwire.Hello, gen uint64) *conn {
	c := &conn{hub: h, link: link, clientID: hello.ClientID, owner: tok.Owner, instanceID: hello.InstanceID, token: raw,
		gen: gen, sandbox: hello.Sandbox, projects: map[string]string{},
		pending: map[string]chan runnerwire.Response{}, parts: map[string][]byte{}, done: make(chan struct{}), welcomed: make(chan struct{})}
	for _, p := range hello.Projects {
		c.projects[p.Name] = p.Root
	}
	c.resources = hello.Resources
	c.lastSeen.Store(h.o.Now().UnixNano())
	return c
}

func (c *conn) seen() time.Time { return time.Unix(0, c.lastSeen.Load()).UTC() }

// processes counts the processes whose output comes on c.
func (c *conn) processes() int {
	n := 0
	for _, p := range c.hub.procsOf(c.clientID) {
		p.mu.Lock()
		if p.c == c {
			n++
		}
		p.mu.Unlock()
	}
	return n
}

// ended reports whether c has ended.
func (c *conn) ended() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// run serves the connection until it ends.
func (c *conn) run() {
	defer c.hub.ran(c)
	go c.watch()
	for {
		typ, b, err := c.link.Read(context.Background())
		if err != nil {
			c.end(errors.New("the connection to the runner ended"))
			return
		}
		c.lastSeen.Store(c.hub.o.Now().UnixNano())
		handle := c.handle
		if typ == runnerlink.Binary {
			handle = c.binary
		}
		if err := handle(b); err != nil {
			c.hub.o.Logger.Warn("runner: frame refused", "client_id", c.clientID, "generation", c.gen, "err", err)
		}
	}
}

// watch ends the connection when the runner missed MissedHeartbeats
// intervals, and re-checks the token at every interval: a revoked token
// disconnects its runner within one heartbeat.
func (c *conn) watch() {
	t := time.NewTicker(c.hub.o.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		if c.hub.o.Now().Sub(c.seen()) > runnerwire.MissedHeartbeats*c.hub.o.Heartbeat {
			c.end(errors.New("the runner missed its heartbeats and is lost"))
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), WriteTimeout)
		_, err := c.hub.o.Auth.AuthenticateRunner(ctx, c.token)
		cancel()
		if failure.Is(err, failure.Unauthenticated) {
			c.end(errors.New("the runner's token was revoked"))
			return
		}
	}
}

// handle acts on one frame from the runner. A frame of another generation,
// of a kind the runner may not send, or for a request or process this
// connection does not know is refused (returned as an error, nothing done).
func (c *conn) handle(b []byte) error {
	f, err := runnerwire.Decode(b)
	if err != nil {
		return err
	}
	if f.Gen != c.gen {
		return errors.New("a frame of a stale generation")
	}
	switch f.Kind {
	case runnerwire.KindHeartbeat:
		var hb runnerwire.Heartbeat
		return runnerwire.DecodeBody(f, &hb)
	case runnerwire.KindResponse:
		var res runnerwire.Response
		if err := runnerwire.DecodeBody(f, &res); err != nil {
			return err
		}
		c.mu.Lock()
		ch, ok := c.pending[f.ID]
		delete(c.pending, f.ID)
		delete(c.parts, f.ID)
		c.mu.Unlock()
		if !ok {
			return errors.New("a response to no pending request")
		}
		ch <- res // buffered
		return nil
	case runnerwire.KindExit:
		var e runnerwire.Exit
		if err := runnerwire.DecodeBody(f, &e); err != nil {
			return err
		}
		p := c.hub.attached(c, f.ID)
		if p == nil {
			return errors.New("an exit for a process not attached to this connection")
		}
		p.exit(e)
		return nil
	}
	return errors.New("a frame of a kind the runner does not send")
}

// binary takes one binary message: a process's output chunk or a piece of
// a request's result.
func (c *conn) binary(b []byte) error {
	m, err := runnerwire.DecodeBinary(b)
	if err != nil {
		return err
	}
	if m.Gen != c.gen {
		return errors.New("a binary message of a stale generation")
	}
	switch m.Type {
	case runnerwire.BinOutput, runnerwire.BinSkip:
		p := c.hub.attached(c, m.ID)
		if p == nil {
			return errors.New("output for a process not attached to this connection")
		}
		if m.Type == runnerwire.BinSkip {
			return p.skip(m.Stream, m.Offset)
		}
		return p.output(runnerwire.Output{Stream: m.Stream, Offset: m.Offset, Data: m.Data})
	}
	c.mu.Lock()
	ch, ok := c.pending[m.ID]
	if !ok {
		c.mu.Unlock()
		return errors.New("a result for no pending request")
	}
	if len(c.parts[m.ID])+len(m.Data) > runnerwire.MaxResultBytes {
		delete(c.pending, m.ID)
		delete(c.parts, m.ID)
		c.mu.Unlock()
		ch <- runnerwire.Response{Error: &runnerwire.Error{Kind: string(failure.OutcomeUnknown),
			Message: fmt.Sprintf("the runner's result is over the %d-byte bound: whether the request ran is known, its result is not", runnerwire.MaxResultBytes)}}
		return nil
	}
	if m.Type == runnerwire.BinPart {
		c.parts[m.ID] = append(c.parts[m.ID], m.Data...)
		c.mu.Unlock()
		return nil
	}
	res := append(c.parts[m.ID], m.Data...)
	delete(c.pending, m.ID)
	delete(c.parts, m.ID)
	c.mu.Unlock()
	ch <- runnerwire.Response{Result: res}
	return nil
}

// end closes the connection once: pending requests fail outcome_unknown;
// the processes whose output came on it are detached (they wait for their
// runner's next connection). The hub forgets c before done is closed, so
// whoever sees done sees a hub without c: Connected does not count it and
// a new process of the runner is not refused as a conflict with it.
func (c *conn) end(why error) {
	c.hub.forget(c)
	c.mu.Lock()
	select {
	case <-c.done:
		c.mu.Unlock()
		return
	default:
	}
	c.err = why
	close(c.done)
	pending := c.pending
	c.pending, c.parts = map[string]chan runnerwire.Response{}, map[string][]byte{}
	c.mu.Unlock()
	for _, ch := range pending {
		close(ch)
	}
	c.hub.detachAll(c)
	// No close handshake: it would wait for a peer that may be lost or
	// silent. A runner that reconnects learns why (a revoked token is
	// refused at the upgrade).
	c.link.Close("")
	c.hub.o.Logger.Info("runner disconnected", "client_id", c.clientID, "generation", c.gen, "reason", why.Error())
}

// write writes one frame within WriteTimeout. The caller's cancellation
// does not reach the write: a write given up half way closes the
// connection (coder/websocket), which would end every other request on it.
func (c *conn) write(ctx context.Context, b []byte) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), WriteTimeout)
	defer cancel()
	select {
	case <-c.welcomed:
	case <-c.done:
		return runnerlink.ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("%w: the welcome was not sent in time", runnerlink.ErrClosed)
	}
	return c.link.Write(ctx, runnerlink.Text, b)
}

// send registers a request and writes it. The error is runner_unavailable
// when the connection had ended before the write began (nothing was sent)
// and outcome_unknown when the write failed (it may have reached the
// runner).
func (c *conn) send(ctx context.Context, id string, req runnerwire.Request, register func()) (chan runnerwire.Response, error) {
	b, err := runnerwire.Encode(runnerwire.KindRequest, c.gen, id, req)
	if err != nil {
		return nil, failure.Wrap(failure.RequestTooLarge, err, "the request does not fit the runner protocol's frame")
	}
	if err := ctx.Err(); err != nil {
		return nil, failure.Wrap(failure.Cancelled, err, "the call ended before its request to runner %s was sent; nothing was sent", c.clientID)
	}
	ch := make(chan runnerwire.Response, 1)
	c.mu.Lock()
	select {
	case <-c.done:
		c.mu.Unlock()
		return nil, c.hub.unavailable(c.clientID)
	default:
	}
	if len(c.pending) >= MaxPending {
		c.mu.Unlock()
		return nil, failure.New(failure.TooManyRequests, "runner %s has %d requests in flight", c.clientID, MaxPending)
	}
	c.pending[id] = ch
	if register != nil {
		register()
	}
	c.mu.Unlock()
	if err := c.write(ctx, b); err != nil {
		c.end(errors.New("a write to the runner failed"))
		if errors.Is(err, runnerlink.ErrClosed) {
			// The link had ended before it took the request.
			return nil, c.hub.unavailable(c.clientID)
		}
		return nil, failure.Wrap(failure.OutcomeUnknown, err, "the request to runner %s may or may not have reached it: its outcome is unknown", c.clientID)
	}
	return ch, nil
}

// welcome writes the welcome, which opens c to every other write.
func (c *conn) welcome(b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), WriteTimeout)
	defer cancel()
	err := c.link.Write(ctx, runnerlink.Text, b)
	close(c.welcomed)
	return err
}

// answer is the outcome of a call: sent says the request was written (its
// effect may have happened), answered that the runner answered it.
type answer struct {
	result         []byte
	sent, answered bool
}

// call sends req and waits for its answer. A runner's error comes back
// with its kind (answered); a connection that ends first gives
// outcome_unknown and a ctx that ends first cancelled (sent: the effect
// may have happened either way).
func (c *conn) call(ctx context.Context, req runnerwire.Request) (answer, error) {
	ch, err := c.send(ctx, newRequestID(), req, nil)
	if err != nil {
		return answer{sent: failure.Is(err, failure.OutcomeUnknown)}, err
	}
	select {
	case res, ok := <-ch:
		switch {
		case !ok:
			return answer{sent: true}, outcomeUnknown(c.clientID, c.err)
		case res.Error != nil:
			return answer{sent: true, answered: true}, wireError(res.Error)
		case len(res.Result) == 0:
			return answer{sent: true}, failure.New(failure.OutcomeUnknown, "runner %s answered with an empty result", c.clientID)
		}
		return answer{result: res.Result, sent: true, answered: true}, nil
	case <-ctx.Done():
		return answer{sent: true}, failure.Wrap(failure.Cancelled, ctx.Err(), "the call ended before runner %s answered", c.clientID)
	}
}

// cancel asks the runner to stop the process of run id (best effort).
func (c *conn) cancel(id string) {
	b, err := runnerwire.Encode(runnerwire.KindCancel, c.gen, id, nil)
	if err == nil {
		c.write(context.Background(), b)
	}
}

// unavailable is the failure of a call for a runner with no connection
// here. With several replicas it says that the runner may well be
// connected to another one, and how to reach every replica.
func (h *Hub) unavailable(clientID string) error {
	if h.o.Replica != "" {
		return failure.New(failure.RunnerUnavailable, "runner %s is not connected to this replica (%s); nothing was sent to it. "+
			"A runner serves every replica only when it is given each replica's own address (one --server each)", clientID, h.o.Replica)
	}
	return failure.New(failure.RunnerUnavailable, "runner %s is not connected; nothing was sent to it", clientID)
}

func outcomeUnknown(clientID string, why error) error {
	return failure.New(failure.OutcomeUnknown, "the connection to runner %s ended before it answered (%v): whether the request ran is unknown", clientID, why)
}
