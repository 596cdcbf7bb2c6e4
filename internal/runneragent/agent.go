package runneragent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/runnerwire"
	"github.com/webcodex/webcodex/internal/sshresource"
	"github.com/webcodex/webcodex/internal/workspace"
)

// Reconnect backoff: full jitter, doubling from MinBackoff to MaxBackoff.
const (
	MinBackoff = time.Second
	MaxBackoff = 60 * time.Second
	// DialTimeout bounds one connection attempt up to the welcome.
	DialTimeout = 30 * time.Second
	// WriteTimeout bounds one frame's write.
	WriteTimeout = 10 * time.Second
)

// ErrFatal marks an error the runner must stop on (an authentication
// failure, an incompatible server): retrying cannot help.
var ErrFatal = errors.New("runner: fatal")

// Options configure an Agent.
type Options struct {
	Config Config
	// Server is the server's base URL (http or https); the runner dials
	// its /api/runner/ws.
	Server string
	Token  string
	// Ops are the operations the runner serves.
	Ops     []workspace.Served
	Version string
	Logger  *slog.Logger
	// Policy confines the processes (nil: none; the hello then says off).
	Policy  *runner.Policy
	Contain *runner.Containment
}

// An Agent is one runner process.
type Agent struct {
	o          Options
	instanceID string
	ops        map[string]workspace.Served
	projects   map[string]project.Project
	host       *runner.Local
	sandbox    runner.Mode
	resources  map[string]sshresource.Resource

	poolMu sync.Mutex
	pool   *sshresource.Pool // the SSH masters, made at the first use
}

// New returns an Agent.
func New(o Options) *Agent {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	a := &Agent{o: o, instanceID: "ri_" + strconv.FormatUint(rand.Uint64(), 36), ops: map[string]workspace.Served{},
		projects: map[string]project.Project{}, host: &runner.Local{Policy: o.Policy, Contain: o.Contain}}
	for _, op := range o.Ops {
		a.ops[op.Name()] = op
	}
	for name, dir := range o.Config.Projects {
		a.projects[name] = project.Project{ID: project.LocalID(name), Name: name, Root: dir}
	}
	a.resources = map[string]sshresource.Resource{}
	for name, r := range o.Config.SSH.Resources {
		a.resources[name] = sshresource.Resource{Name: name, Host: r.Host, Port: r.Port, User: r.User,
			IdentityFile: r.IdentityFile, KnownHostsFile: r.KnownHostsFile, DefaultCwd: r.DefaultCwd}
	}
	a.sandbox = o.Policy.InForce(runner.Sandbox{})
	return a
}

// Sandbox is the sandbox mode in force for the runner's processes.
func (a *Agent) Sandbox() runner.Mode { return a.sandbox }

// Run connects and serves until ctx ends (nil) or a fatal error (wrapping
// ErrFatal). Between connections it waits a jittered backoff.
func (a *Agent) Run(ctx context.Context) error {
	defer a.closeMasters()
	backoff := MinBackoff
	for {
		served, err := a.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrFatal) {
			return err
		}
		if served {
			backoff = MinBackoff
		}
		wait := time.Duration(rand.Int64N(int64(backoff))) + time.Millisecond
		var retry *retryAfter
		if errors.As(err, &retry) && retry.d > wait {
			wait = retry.d
		}
		a.o.Logger.Warn("runner: disconnected; reconnecting", "err", err, "in", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		backoff = min(backoff*2, MaxBackoff)
	}
}

type retryAfter struct {
	d   time.Duration
	msg string
}

func (r *retryAfter) Error() string { return r.msg }

// endpoint is the WebSocket URL of the server's runner endpoint.
func (a *Agent) endpoint() string {
	u := strings.TrimRight(a.o.Server, "/")
	switch {
	case strings.HasPrefix(u, "https://"):
		u = "wss://" + strings.TrimPrefix(u, "https://")
	case strings.HasPrefix(u, "http://"):
		u = "ws://" + strings.TrimPrefix(u, "http://")
	}
	return u + "/api/runner/ws"
}

// hello is this runner's hello.
func (a *Agent) hello() runnerwire.Hello {
	h := runnerwire.Hello{Major: runnerwire.Major, Minor: runnerwire.Minor, ClientID: a.o.Config.ClientID,
		InstanceID: a.instanceID, Version: a.o.Version, OS: runtime.GOOS, Arch: runtime.GOARCH,
		Sandbox: string(a.sandbox), Capabilities: []string{runnerwire.OpProcStart, runnerwire.OpSSHClose}, Projects: []runnerwire.Project{},
		Resources: []string{}, Processes: []runnerwire.Inventory{}, MaxConcurrentJobs: a.o.Config.Policy.MaxConcurrentJobs}
	for name := range a.ops {
		h.Capabilities = append(h.Capabilities, name)
	}
	sort.Strings(h.Capabilities)
	for name, p := range a.projects {
		h.Projects = append(h.Projects, runnerwire.Project{Name: name, Root: p.Root})
	}
	sort.Slice(h.Projects, func(i, j int) bool { return h.Projects[i].Name < h.Projects[j].Name })
	for name := range a.o.Config.SSH.Resources {
		h.Resources = append(h.Resources, name)
	}
	sort.Strings(h.Resources)
	return h
}

// session makes one connection and serves it until it ends. served says
// whether a welcome was received.
func (a *Agent) session(ctx context.Context) (served bool, err error) {
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(dctx, a.endpoint(), &websocket.DialOptions{
		HTTPHeader:   http.Header{"Authorization": []string{"Bearer " + a.o.Token}},
		Subprotocols: []string{runnerwire.Subprotocol},
	})
	if err != nil {
		if resp != nil {
			switch resp.StatusCode {
			case http.StatusUnauthorized, http.StatusForbidden:
				return false, fmt.Errorf("%w: the server refused the runner token (HTTP %d): check --token", ErrFatal, resp.StatusCode)
			case http.StatusTooManyRequests:
				return false, &retryAfter{d: 2 * time.Second, msg: "the server rate-limited this token's connection attempts"}
			}
		}
		return false, err
	}
	defer ws.CloseNow()
	ws.SetReadLimit(runnerwire.MaxFrameBytes)
	b, err := runnerwire.Encode(runnerwire.KindHello, 0, "", a.hello())
	if err != nil {
		return false, fmt.Errorf("%w: the hello does not fit a frame: %v", ErrFatal, err)
	}
	if err := ws.Write(dctx, websocket.MessageText, b); err != nil {
		return false, err
	}
	_, b, err = ws.Read(dctx)
	if err != nil {
		return false, err
	}
	f, err := runnerwire.Decode(b)
	if err != nil {
		return false, err
	}
	switch f.Kind {
	case runnerwire.KindReject:
		var rj runnerwire.Reject
		if err := runnerwire.DecodeBody(f, &rj); err != nil {
			return false, err
		}
		if rj.Fatal() {
			return false, fmt.Errorf("%w: the server rejected this runner (%s): %s", ErrFatal, rj.Code, rj.Message)
		}
		return false, &retryAfter{d: time.Duration(rj.RetryAfterSeconds) * time.Second, msg: "rejected (" + rj.Code + "): " + rj.Message}
	case runnerwire.KindWelcome:
	default:
		return false, errors.New("the server answered the hello with a " + string(f.Kind))
	}
	var w runnerwire.Welcome
	if err := runnerwire.DecodeBody(f, &w); err != nil {
		return false, err
	}
	a.o.Logger.Info("runner: connected", "generation", f.Gen, "projects", strings.Join(w.Projects, ","))
	s := &session{a: a, ws: ws, gen: f.Gen, procs: map[string]runner.Process{}, cancelled: map[string]bool{}}
	return true, s.serve(ctx, time.Duration(w.HeartbeatSeconds)*time.Second)
}

// session is one connection: one generation.
type session struct {
	a   *Agent
	ws  *websocket.Conn
	gen uint64

	mu       sync.Mutex
	procs    map[string]runner.Process
	starting int  // processes being started, counted against MaxInventory
	inflight int  // requests being handled, at most runnerwire.MaxInflight
	closed   bool // the connection ended: a process started now is stopped at once
	// cancelled holds cancels that arrived while their process started.
	cancelled map[string]bool
	wg        sync.WaitGroup
}

func (s *session) send(k runnerwire.Kind, id string, body any) error {
	b, err := runnerwire.Encode(k, s.gen, id, body)
	if err != nil {
		return err
	}
	return s.write(b)
}

func (s *session) writeBinary(b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), WriteTimeout)
	defer cancel()
	return s.ws.Write(ctx, websocket.MessageBinary, b)
}

func (s *session) write(b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), WriteTimeout)
	defer cancel()
	return s.ws.Write(ctx, websocket.MessageText, b)
}

// serve reads requests until the connection ends, sending heartbeats. When
// it ends, every process it started is stopped: their outcome is already
// unknown to the server, which never re-sends a request.
func (s *session) serve(ctx context.Context, hb time.Duration) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		t := time.NewTicker(hb)
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
				s.mu.Lock()
				n := len(s.procs)
				s.mu.Unlock()
				if err := s.send(runnerwire.KindHeartbeat, "", runnerwire.Heartbeat{Processes: n}); err != nil {
					cancel()
					return
				}
			}
		}
	}()
	defer func() {
		cancel()
		s.mu.Lock()
		s.closed = true
		for _, p := range s.procs {
			p.Stop()
		}
		s.mu.Unlock()
		s.wg.Wait()
	}()
	for {
		_, b, err := s.ws.Read(rctx)
		if err != nil {
			return err
		}
		f, err := runnerwire.Decode(b)
		if err != nil {
			s.a.o.Logger.Warn("runner: frame refused", "err", err)
			continue
		}
		if f.Gen != s.gen {
			s.a.o.Logger.Warn("runner: a frame of another generation refused", "gen", f.Gen)
			continue
		}
		switch f.Kind {
		case runnerwire.KindRequest:
			var req runnerwire.Request
			if err := runnerwire.DecodeBody(f, &req); err != nil {
				s.respond(f.ID, nil, failure.Wrap(failure.InvalidArguments, err, "the request does not decode"))
				continue
			}
			if !s.admit() {
				s.respond(f.ID, nil, failure.New(failure.TooManyRequests, "this runner serves at most %d requests at once", runnerwire.MaxInflight))
				continue
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer s.release()
				s.handle(rctx, f.ID, req)
			}()
		case runnerwire.KindCancel:
			s.mu.Lock()
			p := s.procs[f.ID]
			if p == nil && s.starting > 0 {
				// It may be starting: it is stopped once it has.
				if len(s.cancelled) >= runnerwire.MaxInventory {
					clear(s.cancelled)
				}
				s.cancelled[f.ID] = true
			}
			s.mu.Unlock()
			if p != nil {
				p.Stop()
			}
		default:
			s.a.o.Logger.Warn("runner: a frame of a kind the server does not send", "kind", f.Kind)
		}
	}
}

// admit takes one of the MaxInflight request slots, false when none is
// free.
func (s *session) admit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight >= runnerwire.MaxInflight {
		return false
	}
	s.inflight++
	return true
}

func (s *session) release() {
	s.mu.Lock()
	s.inflight--
	s.mu.Unlock()
}

// respond answers a request: its result as binary pieces, or its error as
// a Response.
func (s *session) respond(id string, result []byte, err error) {
	if err == nil && len(result) > runnerwire.MaxResultBytes {
		err = failure.New(failure.RequestTooLarge, "the result is over the runner protocol's %d-byte bound", runnerwire.MaxResultBytes)
	}
	if err != nil {
		msg := failure.MessageOf(err)
		if len(msg) > runnerwire.MaxMessageBytes {
			msg = msg[:runnerwire.MaxMessageBytes]
		}
		res := runnerwire.Response{Error: &runnerwire.Error{Kind: string(failure.KindOf(err)), Message: msg, Detail: failure.DetailOf(err)}}
		if s.send(runnerwire.KindResponse, id, res) != nil {
			res.Error.Detail = nil // detail too large for a frame
			s.send(runnerwire.KindResponse, id, res)
		}
		return
	}
	for {
		n := min(len(result), runnerwire.MaxBinaryDataBytes)
		typ := runnerwire.BinPart
		if n == len(result) {
			typ = runnerwire.BinResult
		}
		b, berr := runnerwire.EncodeBinary(runnerwire.Binary{Type: typ, Gen: s.gen, ID: id, Data: result[:n]})
		if berr != nil || s.writeBinary(b) != nil || typ == runnerwire.BinResult {
			return
		}
		result = result[n:]
	}
}

// handle serves one request.
func (s *session) handle(ctx context.Context, id string, req runnerwire.Request) {
	p, ok := s.a.projects[req.Project]
	if !ok {
		s.respond(id, nil, failure.New(failure.UnknownProject, "this runner serves no project %q", req.Project))
		return
	}
	switch req.Op {
	case runnerwire.OpProcStart:
		s.start(ctx, id, p, req.Args)
		return
	case runnerwire.OpSSHClose:
		s.respond(id, []byte("{}"), s.a.closeSession(req.Args))
		return
	}
	op, ok := s.a.ops[req.Op]
	if !ok {
		s.respond(id, nil, failure.New(failure.Unavailable, "this runner does not serve %s", req.Op))
		return
	}
	res, err := op.Serve(ctx, workspace.Env{Host: s.a.host}, p, req.Args)
	s.respond(id, res, err)
}

// start validates a process start against this runner's policy, starts it
// and streams its output.
func (s *session) start(ctx context.Context, id string, p project.Project, args json.RawMessage) {
	var ps runnerwire.ProcStart
	if err := runnerwire.Strict(args, &ps); err != nil {
		s.respond(id, nil, failure.Wrap(failure.InvalidArguments, err, "the process start does not decode"))
		return
	}
	if err := ps.Validate(); err != nil {
		s.respond(id, nil, failure.Wrap(failure.InvalidArguments, err, "the process start is invalid"))
		return
	}
	spec, err := s.a.confine(p, ps)
	if err == nil && ps.SSH != nil {
		err = s.a.overSSH(ctx, s.gen, &spec, *ps.SSH)
	}
	if err != nil {
		s.respond(id, nil, err)
		return
	}
	spec.Stdout = &chunker{s: s, id: id, stream: runnerwire.Stdout}
	spec.Stderr = &chunker{s: s, id: id, stream: runnerwire.Stderr}
	if spec.Collect != "" {
		spec.CollectTo = &chunker{s: s, id: id, stream: runnerwire.Report}
	}
	s.mu.Lock()
	if len(s.procs)+s.starting >= runnerwire.MaxInventory {
		s.mu.Unlock()
		s.respond(id, nil, failure.New(failure.QueueFull, "this runner runs %d processes already", runnerwire.MaxInventory))
		return
	}
	s.starting++ // a slot held while it starts
	s.mu.Unlock()
	proc, err := s.a.host.Start(context.WithoutCancel(ctx), spec)
	s.mu.Lock()
	s.starting--
	if err != nil {
		s.mu.Unlock()
		s.respond(id, nil, failure.Wrap(failure.NotStarted, err, "%s", strings.TrimPrefix(err.Error(), runner.ErrNotStarted.Error()+": ")))
		return
	}
	s.procs[id] = proc
	if s.closed || s.cancelled[id] { // the connection ended, or the server cancelled it, while it started
		delete(s.cancelled, id)
		proc.Stop()
	}
	s.mu.Unlock()
	b, _ := json.Marshal(runnerwire.ProcStarted{PID: proc.PID(), Sandbox: string(proc.Sandbox())})
	s.respond(id, b, nil)
	res, _ := proc.Wait(context.Background())
	s.mu.Lock()
	delete(s.procs, id)
	s.mu.Unlock()
	res.Stdout, res.Stderr = runner.Output{TotalBytes: res.Stdout.TotalBytes, Truncated: res.Stdout.Truncated},
		runner.Output{TotalBytes: res.Stderr.TotalBytes, Truncated: res.Stderr.Truncated}
	s.send(runnerwire.KindExit, id, runnerwire.Exit{Result: res, DurationMS: res.Duration.Milliseconds()})
}

// confine turns a process start into a Spec this runner accepts: the
// working directory and every sandbox path in the project (resolved on this
// machine), the timeout and tail within the policy, a sandbox in force
// unless the config opted out.
func (a *Agent) confine(p project.Project, ps runnerwire.ProcStart) (runner.Spec, error) {
	spec := ps.Spec(p.Root)
	if err := spec.Validate(); err != nil {
		return spec, failure.New(failure.InvalidArguments, "%v", err)
	}
	inside := func(what, dir string) error {
		rel, err := filepath.Rel(p.Root, dir)
		if err != nil || !filepath.IsAbs(dir) {
			return failure.New(failure.PermissionDenied, "%s is not in project %s", what, p.Name)
		}
		if _, _, err := p.Resolve(filepath.ToSlash(rel)); err != nil {
			return failure.New(failure.PermissionDenied, "%s is not in project %s", what, p.Name)
		}
		return nil
	}
	if err := inside("the working directory", spec.Dir); err != nil {
		return spec, err
	}
	for _, w := range append(append([]string{}, spec.Sandbox.Write...), spec.Sandbox.ProjectWrite...) {
		if err := inside("a writable path", w); err != nil {
			return spec, err
		}
	}
	pol := a.o.Config.Policy
	if pol.MaxTimeoutSecs > 0 && spec.Timeout > time.Duration(pol.MaxTimeoutSecs)*time.Second {
		spec.Timeout = time.Duration(pol.MaxTimeoutSecs) * time.Second
	}
	if pol.MaxOutputBytes > 0 && spec.TailBytes > pol.MaxOutputBytes {
		spec.TailBytes = pol.MaxOutputBytes
	}
	if pol.Sandbox == string(runner.Off) {
		spec.Sandbox.Mode = runner.Off
	}
	if m := runner.InForce(a.host, spec.Sandbox); m == runner.Unavailable || m == "" {
		return spec, failure.New(failure.NotStarted, "this runner has no sandbox on %s; it runs processes only with [policy] sandbox = \"off\" in runner.toml", runtime.GOOS)
	}
	return spec, nil
}

// chunker sends what a process writes as binary output messages of at most
// runnerwire.MaxBinaryDataBytes of data, in order.
type chunker struct {
	s      *session
	id     string
	stream string
	off    int64
}

func (c *chunker) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), runnerwire.MaxBinaryDataBytes)
		b, err := runnerwire.EncodeBinary(runnerwire.Binary{Type: runnerwire.BinOutput, Gen: c.s.gen, ID: c.id, Stream: c.stream, Offset: c.off, Data: p[:k]})
		if err == nil {
			err = c.s.writeBinary(b)
		}
		if err != nil {
			return n - len(p), err
		}
		c.off += int64(k)
		p = p[k:]
	}
	return n, nil
}

// overSSH turns spec (a shell and its -c command) into the ssh client
// command that runs it on the resource, through the master of the session,
// resource and connection generation (on Unix). The remote cwd is the
// call's or session's, else the resource's default, else the login
// directory; nothing about the resource but its name leaves this machine.
func (a *Agent) overSSH(ctx context.Context, gen uint64, spec *runner.Spec, ssh runnerwire.ProcSSH) error {
	r, ok := a.resources[ssh.Resource]
	if !ok {
		return failure.New(failure.ResourceNotAllowed, "this runner has no SSH resource %q", ssh.Resource)
	}
	if len(spec.Argv) != 3 || spec.Argv[1] != "-c" {
		return failure.New(failure.ResourceNotAllowed, "only a shell command runs on an SSH resource")
	}
	remote, err := sshresource.RemoteCommand(sshresource.RemoteCwd(ssh.Cwd, "", r.DefaultCwd),
		spec.Argv[0]+" -c "+sshresource.Quote(spec.Argv[2]))
	if err != nil {
		return err
	}
	var argv []string
	if sshresource.Multiplexed {
		pool, err := a.masters()
		if err != nil {
			return err
		}
		m, err := pool.Master(ctx, sshresource.Key{Session: ssh.Session, Resource: r.Name, Generation: gen}, r)
		if err != nil {
			return err
		}
		argv, err = m.Argv(remote)
		if err != nil {
			return err
		}
	} else if argv, err = r.Argv(remote); err != nil {
		return err
	}
	spec.Argv = argv
	return nil
}

func (a *Agent) masters() (*sshresource.Pool, error) {
	a.poolMu.Lock()
	defer a.poolMu.Unlock()
	if a.pool == nil {
		p, err := sshresource.NewPool("")
		if err != nil {
			return nil, failure.Wrap(failure.Unavailable, err, "the SSH control directory cannot be made")
		}
		a.pool = p
	}
	return a.pool, nil
}

// closeSession closes the SSH masters of a session (OpSSHClose).
func (a *Agent) closeSession(args []byte) error {
	var in runnerwire.SSHClose
	if err := runnerwire.Strict(args, &in); err != nil || in.Session == "" {
		return failure.New(failure.InvalidArguments, "ssh.close needs a session")
	}
	a.poolMu.Lock()
	pool := a.pool
	a.poolMu.Unlock()
	if pool != nil {
		pool.Close(in.Session)
	}
	return nil
}

func (a *Agent) closeMasters() {
	a.poolMu.Lock()
	defer a.poolMu.Unlock()
	if a.pool != nil {
		a.pool.CloseAll()
		a.pool = nil
	}
}
