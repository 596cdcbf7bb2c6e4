// Package runnerhub is the server's side of the runners: it accepts the
// connections `webcodex runner` processes dial out to (runnerwire over a
// runnerlink: a WebSocket, or long-poll HTTP), registers their projects,
// and serves as the [workspace.Runner] of those projects.
//
// Each accepted hello starts a connection with a new generation, stored
// before the welcome, so a restarted server never hands one out again.
// Frames of another generation are refused. A runner that sends nothing for
// MissedHeartbeats heartbeat intervals is lost and its connection closed.
// When a connection ends, every request it carried that was not answered
// fails outcome_unknown (it was sent; whether it ran is not known); nothing
// is re-sent. Processes belong to the runner, not the connection: they
// continue on the runner's next connection (procs.go). A call
// for a runner with no connection fails runner_unavailable before anything
// is sent.
package runnerhub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/runnerlink"
	"github.com/webcodex/webcodex/internal/runnerwire"
	"github.com/webcodex/webcodex/internal/workspace"
)

// Bounds of the hub.
const (
	// MaxRunners bounds the runners connected at once.
	MaxRunners = 256
	// HelloRate and HelloBurst bound the hellos one token may attempt: a
	// storm of reconnects is refused with 429 before any work.
	HelloRate  = rate.Limit(1.0 / 2) // one every 2 s on average
	HelloBurst = 5
	// MaxLimiters bounds the per-token limiters kept; beyond it the
	// oldest are forgotten.
	MaxLimiters = 1024
	// MaxPending bounds the requests in flight on one connection (the
	// protocol's bound).
	MaxPending = runnerwire.MaxInflight
	// WriteTimeout bounds one frame's write.
	WriteTimeout = 10 * time.Second
	// ReconcileTimeout bounds the reconciliation of a runner's
	// inventory after its hello.
	ReconcileTimeout = time.Minute
)

// Authenticator checks a runner token.
type Authenticator interface {
	AuthenticateRunner(ctx context.Context, raw string) (auth.Token, error)
}

// Registry registers the projects a runner announces.
type Registry interface {
	RegisterRunner(ctx context.Context, clientID, owner, name, root string) (project.Project, error)
	Get(ctx context.Context, id string) (project.Project, error)
}

// Store keeps each runner's generation and last hello.
type Store interface {
	// NextGeneration durably stores r with a generation one above the
	// runner's last (1 for a new runner) and returns it.
	NextGeneration(ctx context.Context, r Record) (uint64, error)
	// Seen records the time a runner was last heard from.
	Seen(ctx context.Context, clientID string, at time.Time) error
	// Runners returns every runner ever connected, ordered by client id.
	Runners(ctx context.Context) ([]Record, error)
}

// Record is what the server keeps of a runner.
type Record struct {
	ClientID    string    `json:"client_id"`
	Owner       string    `json:"owner"`
	Generation  uint64    `json:"generation"`
	InstanceID  string    `json:"instance_id"`
	Hello       Hello     `json:"hello"`
	ConnectedAt time.Time `json:"connected_at"`
	LastSeen    time.Time `json:"last_seen"`
}

// Hello is the part of a runner's hello the server keeps and shows.
type Hello struct {
	Version           string   `json:"version"`
	OS                string   `json:"os"`
	Arch              string   `json:"arch"`
	Sandbox           string   `json:"sandbox"`
	Capabilities      []string `json:"capabilities"`
	Resources         []string `json:"resources"`
	Projects          []string `json:"projects"`
	MaxConcurrentJobs int      `json:"max_concurrent_jobs"`
}

// Options configure a Hub.
type Options struct {
	Auth     Authenticator
	Projects Registry
	Store    Store
	// Heartbeat is the interval runners are told to keep (0:
	// runnerwire.HeartbeatInterval); tests shorten it.
	Heartbeat time.Duration
	Logger    *slog.Logger
	Now       func() time.Time
	// Replica is this server's replica id when several replicas serve one
	// database ("" otherwise): a runner connects to each replica it is
	// given the address of, and a call for a runner not connected here
	// says so.
	Replica string
	// Reconcile, when set, is called after a runner connected with the
	// run ids of the processes it holds that no process of this hub
	// claims (a previous server process started them): the jobs adopt
	// the ones they recorded and release the others.
	Reconcile func(ctx context.Context, r runner.Reattacher, held []string)
}

// A Hub holds the runners' connections.
type Hub struct {
	o Options

	mu       sync.Mutex
	conns    map[string]*conn // client id → current connection
	procs    map[procKey]*proc
	limiters map[string]*rate.Limiter
	poll     *runnerlink.Poller // the long-poll links
	closed   bool
	wg       sync.WaitGroup
}

// New returns a Hub.
func New(o Options) *Hub {
	if o.Heartbeat <= 0 {
		o.Heartbeat = runnerwire.HeartbeatInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Hub{o: o, conns: map[string]*conn{}, procs: map[procKey]*proc{}, limiters: map[string]*rate.Limiter{},
		poll: runnerlink.NewPoller(runnerwire.MissedHeartbeats*o.Heartbeat, 0)}
}

// Close ends every connection (their pending requests become
// outcome_unknown) and waits for them.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	cs := make([]*conn, 0, len(h.conns))
	for _, c := range h.conns {
		cs = append(cs, c)
	}
	h.mu.Unlock()
	for _, c := range cs {
		c.end(errors.New("the server is shutting down"))
	}
	h.wg.Wait()
}

// Runner returns the workspace.Runner of the runner clientID, connected or
// not (a call fails runner_unavailable while it is not).
func (h *Hub) Runner(clientID string) workspace.Runner { return &remote{hub: h, clientID: clientID} }

// current returns the live connection of clientID, or nil.
func (h *Hub) current(clientID string) *conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conns[clientID]
}

// Info describes one runner for list_runners.
type Info struct {
	Record
	Connected bool `json:"connected"`
	// ActiveProcesses counts the processes the server has running there.
	ActiveProcesses int `json:"active_processes"`
}

// List returns the runners of the authority group owner ("" for all),
// ordered by client id.
func (h *Hub) List(ctx context.Context, owner string) ([]Info, error) {
	recs, err := h.o.Store.Runners(ctx)
	if err != nil {
		return nil, err
	}
	out := []Info{}
	for _, r := range recs {
		if owner != "" && r.Owner != owner {
			continue
		}
		i := Info{Record: r}
		if c := h.current(r.ClientID); c != nil {
			i.Connected = true
			i.LastSeen = c.seen()
			i.ActiveProcesses = c.processes()
		}
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ClientID < out[b].ClientID })
	return out, nil
}

// allow takes one hello attempt of the token hash key.
func (h *Hub) allow(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.limiters[key]
	if l == nil {
		if len(h.limiters) >= MaxLimiters {
			clear(h.limiters)
		}
		l = rate.NewLimiter(HelloRate, HelloBurst)
		h.limiters[key] = l
	}
	return l.Allow()
}

// ServeHTTP is the runner endpoint: it authenticates the runner token,
// upgrades to a WebSocket, takes the hello and serves the connection until
// it ends.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, raw, status := h.authenticate(w, r, true)
	if status != 0 {
		return
	}
	link, err := runnerlink.Accept(w, r)
	if err != nil {
		return // Accept answered the request
	}
	h.serve(link, tok, raw)
}

// serve takes the hello on link and runs the connection.
func (h *Hub) serve(link runnerlink.Link, tok auth.Token, raw string) {
	ctx, cancel := context.WithTimeout(context.Background(), runnerwire.HelloTimeout)
	defer cancel()
	_, b, err := link.Read(ctx)
	if err != nil {
		link.Close("")
		return
	}
	reject := func(code, msg string, retry int) {
		out, _ := runnerwire.Encode(runnerwire.KindReject, 0, "", runnerwire.Reject{Code: code, Message: clip(msg), RetryAfterSeconds: retry})
		wctx, wcancel := context.WithTimeout(context.Background(), WriteTimeout)
		defer wcancel()
		link.Write(wctx, runnerlink.Text, out)
		link.Close(code)
	}
	f, err := runnerwire.Decode(b)
	if err != nil {
		reject(runnerwire.RejectInvalid, err.Error(), 0)
		return
	}
	if f.Kind != runnerwire.KindHello {
		reject(runnerwire.RejectInvalid, "the first frame must be a hello", 0)
		return
	}
	var hello runnerwire.Hello
	if err := runnerwire.Strict(f.Body, &hello); err != nil {
		reject(runnerwire.RejectInvalid, err.Error(), 0)
		return
	}
	if err := runnerwire.Compatible(hello.Major, hello.Minor); err != nil {
		reject(runnerwire.RejectVersion, err.Error(), 0)
		return
	}
	if err := hello.Validate(); err != nil {
		reject(runnerwire.RejectInvalid, err.Error(), 0)
		return
	}
	if hello.ClientID != tok.Runner {
		reject(runnerwire.RejectAuth, fmt.Sprintf("this token is for runner %q, not %q", tok.Runner, hello.ClientID), 0)
		return
	}
	c, code, err := h.admit(ctx, link, tok, raw, hello)
	if err != nil {
		retry := 0
		if code != runnerwire.RejectInvalid && code != runnerwire.RejectAuth {
			retry = int(h.o.Heartbeat / time.Second)
		}
		reject(code, err.Error(), max(retry, 1))
		return
	}
	h.o.Logger.Info("runner connected", "client_id", c.clientID, "generation", c.gen, "projects", len(hello.Projects))
	c.run()
}

// admit checks the hello against the current connection and the registry,
// stores the new generation, registers the projects and installs the
// connection, replacing a previous one of the same instance. Nothing is
// changed when it fails.
func (h *Hub) admit(ctx context.Context, link runnerlink.Link, tok auth.Token, raw string, hello runnerwire.Hello) (*conn, string, error) {
	h.mu.Lock()
	old := h.conns[hello.ClientID]
	full := old == nil && len(h.conns) >= MaxRunners
	closed := h.closed
	h.mu.Unlock()
	switch {
	case closed:
		return nil, runnerwire.RejectConflict, errors.New("the server is shutting down")
	case full:
		return nil, runnerwire.RejectConflict, fmt.Errorf("the server serves at most %d runners", MaxRunners)
	case old != nil && old.instanceID != hello.InstanceID:
		return nil, runnerwire.RejectConflict, fmt.Errorf("another process of runner %q is connected (instance %s)", hello.ClientID, old.instanceID)
	}
	// Every announced project must be free for this runner before any is
	// registered.
	for _, p := range hello.Projects {
		got, err := h.o.Projects.Get(ctx, project.RunnerID(hello.ClientID, p.Name))
		if err == nil && (got.Runner != hello.ClientID || got.Owner != tok.Owner) {
			return nil, runnerwire.RejectAuth, fmt.Errorf("project %s belongs to another runner or owner", got.ID)
		}
		if err != nil && !failure.Is(err, failure.UnknownProject) {
			return nil, runnerwire.RejectConflict, errors.New("the project registry is unavailable")
		}
	}
	now := h.o.Now().UTC().Round(0)
	rec := Record{ClientID: hello.ClientID, Owner: tok.Owner, InstanceID: hello.InstanceID, ConnectedAt: now, LastSeen: now,
		Hello: Hello{Version: hello.Version, OS: hello.OS, Arch: hello.Arch, Sandbox: hello.Sandbox,
			Capabilities: nonNil(hello.Capabilities), Resources: nonNil(hello.Resources), MaxConcurrentJobs: hello.MaxConcurrentJobs}}
	ids := make([]string, 0, len(hello.Projects))
	for _, p := range hello.Projects {
		ids = append(ids, project.RunnerID(hello.ClientID, p.Name))
		rec.Hello.Projects = append(rec.Hello.Projects, p.Name)
	}
	rec.Hello.Projects = nonNil(rec.Hello.Projects)
	gen, err := h.o.Store.NextGeneration(ctx, rec)
	if err != nil {
		return nil, runnerwire.RejectConflict, errors.New("the runner store is unavailable")
	}
	for _, p := range hello.Projects {
		if _, err := h.o.Projects.RegisterRunner(ctx, hello.ClientID, tok.Owner, p.Name, p.Root); err != nil {
			return nil, runnerwire.RejectInvalid, fmt.Errorf("project %s: %s", p.Name, failure.MessageOf(err))
		}
	}
	c := newConn(h, link, tok, raw, hello, gen)
	welcome, err := runnerwire.Encode(runnerwire.KindWelcome, gen, "", runnerwire.Welcome{Major: runnerwire.Major, Minor: runnerwire.Minor,
		HeartbeatSeconds: max(1, int(h.o.Heartbeat/time.Second)), Projects: ids})
	if err != nil {
		return nil, runnerwire.RejectInvalid, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, runnerwire.RejectConflict, errors.New("the server is shutting down")
	}
	prev := h.conns[hello.ClientID]
	h.conns[hello.ClientID] = c
	h.wg.Add(1)
	h.mu.Unlock()
	if prev != nil {
		prev.end(errors.New("the runner connected again"))
	}
	// Installed first, so that a runner that read its welcome can be
	// called at once; the welcome still goes before any request (c's
	// writes wait for it).
	if err := c.welcome(welcome); err != nil {
		c.end(err)
		return c, "", nil
	}
	free := h.reattach(c, hello.Processes)
	if h.o.Reconcile != nil {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), ReconcileTimeout)
			defer cancel()
			h.o.Reconcile(ctx, h.Runner(c.clientID).(runner.Reattacher), free)
		}()
	} else {
		for _, id := range free {
			h.Runner(c.clientID).(runner.Reattacher).Release(id)
		}
	}
	return c, "", nil
}

// forget removes c from the hub when it is still the current connection
// of its runner (a later connection of the runner stays).
func (h *Hub) forget(c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conns[c.clientID] == c {
		delete(h.conns, c.clientID)
	}
}

// ran is the end of c's run, which ended c (end forgot it): it records
// when the runner was last heard from and releases Close's wait.
func (h *Hub) ran(c *conn) {
	ctx, cancel := context.WithTimeout(context.Background(), WriteTimeout)
	defer cancel()
	if err := h.o.Store.Seen(ctx, c.clientID, c.seen()); err != nil {
		h.o.Logger.Warn("runner: recording last seen", "client_id", c.clientID, "err", err)
	}
	h.wg.Done()
}

func newRequestID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return "rq_" + hex.EncodeToString(b)
}

func clip(s string) string {
	if len(s) > runnerwire.MaxMessageBytes {
		return s[:runnerwire.MaxMessageBytes]
	}
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// wireError turns a runner's error into a failure with its kind (an unknown
// kind is internal: the runner cannot invent kinds).
func wireError(e *runnerwire.Error) error {
	k := failure.Kind(e.Kind)
	known := false
	for _, x := range failure.Kinds {
		if x == k {
			known = true
			break
		}
	}
	if !known {
		return failure.New(failure.Internal, "the runner reported an unknown failure kind")
	}
	fe := failure.New(k, "%s", e.Message)
	for key, v := range e.Detail {
		fe.WithDetail(key, v)
	}
	return fe
}

// HasResource reports whether the runner serving p announced an SSH
// resource called name: in its live connection's hello, else in the last
// hello the server stored.
func (h *Hub) HasResource(ctx context.Context, p project.Project, name string) bool {
	if p.Runner == "" {
		return false
	}
	if c := h.current(p.Runner); c != nil {
		return slices.Contains(c.resources, name)
	}
	recs, err := h.o.Store.Runners(ctx)
	if err != nil {
		return false
	}
	for _, r := range recs {
		if r.ClientID == p.Runner {
			return slices.Contains(r.Hello.Resources, name)
		}
	}
	return false
}

// CloseSession asks the runner serving p to close the SSH masters it holds
// for the session (best effort: a runner that is not connected holds none
// of this generation's).
func (h *Hub) CloseSession(ctx context.Context, p project.Project, sessionID string) {
	c := h.current(p.Runner)
	if p.Runner == "" || c == nil || len(c.resources) == 0 {
		return
	}
	args, _ := json.Marshal(runnerwire.SSHClose{Session: sessionID}) // a struct of one string always encodes
	if _, err := h.Runner(p.Runner).(*remote).Invoke(ctx, p, runnerwire.OpSSHClose, args); err != nil {
		h.o.Logger.Warn("runner: closing a session's SSH masters", "client_id", p.Runner, "err", err)
	}
}

// Connected returns how many runners are connected to this hub now (a
// gauge for /metrics).
func (h *Hub) Connected() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}
