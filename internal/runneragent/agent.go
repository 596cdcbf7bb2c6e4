package runneragent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/lsp"
	"github.com/webcodex/webcodex/internal/mcpprovider"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/runnerlink"
	"github.com/webcodex/webcodex/internal/runnerwire"
	"github.com/webcodex/webcodex/internal/shell"
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
	// Servers are the base URLs (http or https) of the server's replicas:
	// one for a single server, each replica's own address when several
	// replicas serve one database (decision 0075). The runner keeps one
	// connection to each, dialling its /api/runner/ws.
	Servers []string
	Token   string
	// Ops are the operations the runner serves.
	Ops     []workspace.Served
	Version string
	Logger  *slog.Logger
	// Policy confines the processes (nil: none; the hello then says off).
	Policy  *runner.Policy
	Contain *runner.Containment

	// Transport carries the links to Servers ("": runnerlink.Auto).
	Transport runnerlink.Transport
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
	// shells are the persistent shells this runner holds (shell ops): they
	// live in this process, across reconnects, until it ends.
	shells *shell.Manager
	// navigator runs the language servers of this runner's projects (the
	// lsp ops), stopped when the runner ends.
	navigator *lsp.Manager
	// providers run the configured MCP providers of this runner's
	// projects (the mcp ops), stopped when the runner ends.
	providers *mcpprovider.Manager

	poolMu sync.Mutex
	pool   *sshresource.Pool // the SSH masters, made at the first use

	hold *holding // the processes it holds for the server
}

// upstream is one server (replica) the runner keeps a connection to.
type upstream struct {
	url     string
	polling atomic.Bool // auto fell back to long-poll (dial.go)
}

// New returns an Agent.
func New(o Options) *Agent {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	a := &Agent{o: o, instanceID: "ri_" + strconv.FormatUint(rand.Uint64(), 36), ops: map[string]workspace.Served{},
		projects: map[string]project.Project{}, host: &runner.Local{Policy: o.Policy, Contain: o.Contain}, hold: newHolding()}
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
	a.shells = shell.NewManager(shell.Options{Sandbox: o.Policy, Contain: o.Contain, Holder: "runner",
		CapTimeout: time.Duration(o.Config.Policy.MaxTimeoutSecs) * time.Second})
	a.navigator = lsp.NewManager(lsp.Options{Sandbox: o.Policy, Contain: o.Contain})
	a.providers = mcpprovider.NewManager(mcpprovider.Options{Providers: o.Config.MCP.Providers, Sandbox: o.Policy, Contain: o.Contain, Version: o.Version})
	return a
}

// Sandbox is the sandbox mode in force for the runner's processes.
func (a *Agent) Sandbox() runner.Mode { return a.sandbox }

// Run connects to every server and serves each until ctx ends (nil) or
// a fatal error (wrapping ErrFatal), which ends every connection. Between
// connections to one server it waits a jittered backoff; the processes it
// holds run on meanwhile. When it returns, every process it holds has
// been stopped: they are lost with the runner.
func (a *Agent) Run(ctx context.Context) error {
	defer a.closeMasters()
	defer a.hold.closeAll()
	defer a.shells.Close()
	defer a.navigator.Close()
	defer a.providers.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, u := range a.o.Servers {
		up := &upstream{url: u}
		wg.Go(func() {
			if err := a.serveUpstream(ctx, up); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); errors.Is(err, ErrFatal) {
		return err
	}
	return nil
}

// serveUpstream keeps a connection to up until ctx ends (nil) or a fatal
// error.
func (a *Agent) serveUpstream(ctx context.Context, up *upstream) error {
	backoff := MinBackoff
	for {
		served, err := a.session(ctx, up)
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
		a.o.Logger.Warn("runner: disconnected; reconnecting", "server", up.url, "err", err, "in", wait.Round(time.Millisecond))
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

// hello is this runner's hello. Its inventory lists only the processes no
// live connection streams: a process another server (replica) started and
// still streams is that server's, and the server greeted now must neither
// adopt nor release it. In a single server's reconnect every process is
// detached by then (serve detaches them as it ends).
func (a *Agent) hello() runnerwire.Hello {
	h := runnerwire.Hello{Major: runnerwire.Major, Minor: runnerwire.Minor, ClientID: a.o.Config.ClientID,
		InstanceID: a.instanceID, Version: a.o.Version, OS: runtime.GOOS, Arch: runtime.GOARCH,
		Sandbox: string(a.sandbox), Capabilities: []string{runnerwire.OpProcStart, runnerwire.OpProcAttach, runnerwire.OpProcRelease, runnerwire.OpSSHClose},
		Projects: []runnerwire.Project{}, Resources: []string{}, Processes: a.hold.inventory(true), MaxConcurrentJobs: a.o.Config.Policy.MaxConcurrentJobs}
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
func (a *Agent) session(ctx context.Context, up *upstream) (served bool, err error) {
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	b, err := runnerwire.Encode(runnerwire.KindHello, 0, "", a.hello())
	if err != nil {
		return false, fmt.Errorf("%w: the hello does not fit a frame: %v", ErrFatal, err)
	}
	link, err := a.dial(dctx, up, b)
	if err != nil {
		return false, err
	}
	defer link.Close("")
	_, b, err = link.Read(dctx)
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
	a.o.Logger.Info("runner: connected", "server", up.url, "generation", f.Gen, "projects", strings.Join(w.Projects, ","))
	s := &session{a: a, link: link, gen: f.Gen}
	return true, s.serve(ctx, time.Duration(w.HeartbeatSeconds)*time.Second)
}

// session is one connection: one generation.
type session struct {
	a    *Agent
	link runnerlink.Link
	gen  uint64

	mu       sync.Mutex
	inflight int // requests being handled, at most runnerwire.MaxInflight
	// wg counts the request handlers and the output streamers.
	wg sync.WaitGroup
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
	return s.link.Write(ctx, runnerlink.Binary, b)
}

func (s *session) write(b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), WriteTimeout)
	defer cancel()
	return s.link.Write(ctx, runnerlink.Text, b)
}

// serve reads requests until the connection ends, sending heartbeats. When
// it ends, the processes it streamed run on, detached, until a later
// connection attaches to them or the server releases them; a request it
// carried is never re-sent by the server.
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
				n := s.a.hold.running()
				if err := s.send(runnerwire.KindHeartbeat, "", runnerwire.Heartbeat{Processes: n}); err != nil {
					cancel()
					return
				}
			}
		}
	}()
	defer func() {
		cancel()
		s.a.hold.detach(s)
		s.link.Close("")
		s.wg.Wait()
	}()
	for {
		_, b, err := s.link.Read(rctx)
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
			// A cancel names a process by its run id.
			s.a.hold.stop(f.ID)
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
	switch req.Op {
	case runnerwire.OpProcAttach:
		s.attach(id, req.Args)
		return
	case runnerwire.OpProcRelease:
		var in runnerwire.ProcRelease
		err := runnerwire.Strict(req.Args, &in)
		if err != nil {
			err = failure.Wrap(failure.InvalidArguments, err, "proc.release does not decode")
		} else {
			err = s.a.hold.release(in.RunID)
		}
		s.respond(id, []byte("{}"), err)
		return
	case runnerwire.OpSSHClose:
		s.respond(id, []byte("{}"), s.a.closeSession(req.Args))
		return
	}
	p, ok := s.a.projects[req.Project]
	if !ok {
		p, ok = s.a.worktreeProject(req.Project)
	}
	if !ok {
		s.respond(id, nil, failure.New(failure.UnknownProject, "this runner serves no project %q", req.Project))
		return
	}
	if req.Op == runnerwire.OpProcStart {
		s.start(ctx, id, p, req.Args)
		return
	}
	op, ok := s.a.ops[req.Op]
	if !ok {
		s.respond(id, nil, failure.New(failure.Unavailable, "this runner does not serve %s", req.Op))
		return
	}
	res, err := op.Serve(ctx, workspace.Env{Host: s.a.host, Shells: s.a.shells, RemoteShell: s.a.remoteShell(s.gen), Navigator: s.a.navigator, Providers: s.a.providers,
		SkillRoots: s.a.o.Config.Skills.Roots}, p, req.Args)
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
	grantWorktree(p, &spec)
	if err == nil && ps.SSH != nil {
		err = s.a.overSSH(ctx, s.gen, &spec, *ps.SSH)
	}
	if err != nil {
		s.respond(id, nil, err)
		return
	}
	h, err := s.a.hold.reserve(ps.RunID, s, spec.Collect != "")
	if err != nil {
		s.respond(id, nil, err)
		return
	}
	spec.Stdout, spec.Stderr = writer{h: h, i: 0}, writer{h: h, i: 1}
	if spec.Collect != "" {
		spec.CollectTo = writer{h: h, i: 2}
	}
	proc, err := s.a.host.Start(context.WithoutCancel(ctx), spec)
	if err != nil {
		s.a.hold.started(h, nil)
		s.respond(id, nil, failure.Wrap(failure.NotStarted, err, "%s", strings.TrimPrefix(err.Error(), runner.ErrNotStarted.Error()+": ")))
		return
	}
	s.a.hold.started(h, proc)
	b, _ := json.Marshal(runnerwire.ProcStarted{PID: proc.PID(), Sandbox: string(proc.Sandbox())})
	s.respond(id, b, nil)
	s.stream(h, 1)
}

// attach continues a held process on this connection (OpProcAttach).
func (s *session) attach(id string, args json.RawMessage) {
	var in runnerwire.ProcAttach
	if err := runnerwire.Strict(args, &in); err != nil {
		s.respond(id, nil, failure.Wrap(failure.InvalidArguments, err, "proc.attach does not decode"))
		return
	}
	h := s.a.hold.get(in.RunID)
	if h == nil {
		s.respond(id, nil, failure.New(failure.NotFound, "this runner holds no process %s", in.RunID))
		return
	}
	st, tok, err := h.attach(s, [3]int64{in.StdoutOffset, in.StderrOffset, in.ReportOffset})
	if err != nil {
		s.respond(id, nil, err)
		return
	}
	b, _ := json.Marshal(st)
	s.respond(id, b, nil)
	s.stream(h, tok)
}

// stream sends h's output, then its exit, on this connection while h
// stays attached to it with token tok.
func (s *session) stream(h *held, tok uint64) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		h.stream(s, tok)
	}()
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
	via, err := a.connection(ctx, gen, r, ssh.Session)
	if err != nil {
		return err
	}
	spec.Argv, err = via(remote)
	return err
}

// connection returns the argv builder of ssh commands on r for session
// over the master of the session, resource and generation (started if
// needed; on Unix), or over their own connections where there are no
// masters.
func (a *Agent) connection(ctx context.Context, gen uint64, r sshresource.Resource, session string) (func(remote string) ([]string, error), error) {
	if !sshresource.Multiplexed {
		return r.Argv, nil
	}
	pool, err := a.masters()
	if err != nil {
		return nil, err
	}
	m, err := pool.Master(ctx, sshresource.Key{Session: session, Resource: r.Name, Generation: gen}, r)
	if err != nil {
		return nil, err
	}
	return m.Argv, nil
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
