package runnerhub

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runnerlink"
	"github.com/webcodex/webcodex/internal/runnerwire"
	"github.com/webcodex/webcodex/internal/workspace"
)

// The hub's collaborators are in memory here: these tests are about the
// connection (a real WebSocket or long-poll link on loopback), not about
// storage. Every connection test runs over both transports.

type tokens struct{ revoked atomic.Bool }

func (t *tokens) AuthenticateRunner(_ context.Context, raw string) (auth.Token, error) {
	if raw != "good" || t.revoked.Load() {
		return auth.Token{}, failure.New(failure.Unauthenticated, "unknown or revoked")
	}
	return auth.Token{ID: "tok_1", Owner: "local", Runner: "box"}, nil
}

type registry struct {
	mu sync.Mutex
	ps map[string]project.Project
}

func (r *registry) RegisterRunner(_ context.Context, clientID, owner, name, root string) (project.Project, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := project.Project{ID: project.RunnerID(clientID, name), Name: name, Root: root, Runner: clientID, Owner: owner}
	r.ps[p.ID] = p
	return p, nil
}

func (r *registry) Get(_ context.Context, id string) (project.Project, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.ps[id]; ok {
		return p, nil
	}
	return project.Project{}, failure.New(failure.UnknownProject, "no %s", id)
}

type records struct {
	mu  sync.Mutex
	all map[string]Record
}

func (s *records) NextGeneration(_ context.Context, r Record) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Generation = s.all[r.ClientID].Generation + 1
	s.all[r.ClientID] = r
	return r.Generation, nil
}

func (s *records) Seen(context.Context, string, time.Time) error { return nil }

func (s *records) Runners(context.Context) ([]Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Record
	for _, r := range s.all {
		out = append(out, r)
	}
	return out, nil
}

type fixture struct {
	hub       *Hub
	auth      *tokens
	url       string
	transport runnerlink.Transport
	p         project.Project
}

// overTransports runs test over each transport of a runner's link.
func overTransports(t *testing.T, test func(t *testing.T, tr runnerlink.Transport)) {
	for _, tr := range []runnerlink.Transport{runnerlink.WebSocket, runnerlink.LongPoll} {
		t.Run(string(tr), func(t *testing.T) { test(t, tr) })
	}
}

// newFixture serves a hub's endpoints (both transports) on loopback; the
// fixture's runner connects over tr.
func newFixture(t *testing.T, heartbeat time.Duration, tr runnerlink.Transport) *fixture {
	t.Helper()
	f := &fixture{auth: &tokens{}, transport: tr}
	reg := &registry{ps: map[string]project.Project{}}
	f.hub = New(Options{Auth: f.auth, Projects: reg, Store: &records{all: map[string]Record{}}, Heartbeat: heartbeat})
	mux := http.NewServeMux()
	mux.Handle(runnerlink.WebSocketPath, f.hub)
	mux.HandleFunc(runnerlink.PollPath, f.hub.ServePoll)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { f.hub.Close(); srv.Close() })
	f.url = srv.URL
	f.p = project.Project{ID: project.RunnerID("box", "demo"), Name: "demo", Root: "/src/demo", Runner: "box", Owner: "local"}
	return f
}

// connect dials as runner box, sends its hello and reads the welcome.
func (f *fixture) connect(t *testing.T) (runnerlink.Link, uint64) {
	t.Helper()
	return f.connectAs(t, "ri_1", nil)
}

// connectAs is connect as runner instance instance holding inv.
func (f *fixture) connectAs(t *testing.T, instance string, inv []runnerwire.Inventory) (runnerlink.Link, uint64) {
	t.Helper()
	ctx := context.Background()
	hello, _ := runnerwire.Encode(runnerwire.KindHello, 0, "", runnerwire.Hello{Major: runnerwire.Major, ClientID: "box", InstanceID: instance,
		Projects: []runnerwire.Project{{Name: "demo", Root: "/src/demo"}}, Processes: inv, MaxConcurrentJobs: 4})
	ws, err := runnerlink.Dial(ctx, f.transport, f.url, "good", hello)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close("") })
	_, b, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := runnerwire.Decode(b)
	if err != nil || w.Kind != runnerwire.KindWelcome {
		t.Fatalf("welcome: %v %s", err, b)
	}
	return ws, w.Gen
}

func (f *fixture) invoke(ctx context.Context) error {
	_, err := f.hub.Runner("box").(workspace.Remote).Invoke(ctx, f.p, "files.read", []byte(`{}`))
	return err
}

// readRequest reads frames until a request and returns its id.
func readRequest(t *testing.T, ws runnerlink.Link) string {
	t.Helper()
	_, b, err := ws.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f, err := runnerwire.Decode(b)
	if err != nil || f.Kind != runnerwire.KindRequest {
		t.Fatalf("want a request: %v %s", err, b)
	}
	return f.ID
}

func TestARunnerMissingItsHeartbeatsIsLost(t *testing.T) {
	overTransports(t, func(t *testing.T, tr runnerlink.Transport) {
		f := newFixture(t, 20*time.Millisecond, tr)
		ws, _ := f.connect(t)
		done := make(chan error, 1)
		go func() { done <- f.invoke(context.Background()) }()
		readRequest(t, ws)
		// The runner now says nothing: after MissedHeartbeats intervals it is
		// lost, and the request it was sent is outcome_unknown.
		if err := <-done; !failure.Is(err, failure.OutcomeUnknown) {
			t.Fatalf("a request to a lost runner: %v", err)
		}
		if err := f.invoke(context.Background()); !failure.Is(err, failure.RunnerUnavailable) {
			t.Fatalf("a call after the runner was lost: %v", err)
		}
	})
}

func TestARevokedTokenDisconnectsItsRunner(t *testing.T) {
	overTransports(t, func(t *testing.T, tr runnerlink.Transport) {
		f := newFixture(t, 20*time.Millisecond, tr)
		ws, gen := f.connect(t)
		// Heartbeats keep it alive ...
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			hb, _ := runnerwire.Encode(runnerwire.KindHeartbeat, gen, "", runnerwire.Heartbeat{})
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if ws.Write(context.Background(), runnerlink.Text, hb) != nil {
						return
					}
				}
			}
		}()
		// ... until its token is revoked: within a heartbeat the connection
		// ends (the read below fails: the hub marks the connection ended
		// before it closes it) and calls fail runner_unavailable.
		f.auth.revoked.Store(true)
		for {
			if _, _, err := ws.Read(context.Background()); err != nil {
				break
			}
		}
		if err := f.invoke(context.Background()); !failure.Is(err, failure.RunnerUnavailable) {
			t.Fatalf("a call after revocation: %v", err)
		}
	})
}

func TestPendingRequestsAreBounded(t *testing.T) {
	overTransports(t, func(t *testing.T, tr runnerlink.Transport) {
		f := newFixture(t, 0, tr)
		ws, _ := f.connect(t) // a runner that never answers
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range MaxPending {
			wg.Add(1)
			go func() { defer wg.Done(); f.invoke(ctx) }()
		}
		for range MaxPending { // each request is registered before it is sent
			readRequest(t, ws)
		}
		if err := f.invoke(ctx); !failure.Is(err, failure.TooManyRequests) {
			t.Fatalf("request %d: %v", MaxPending+1, err)
		}
		cancel()
		wg.Wait()
	})
}

func TestAResultOverTheBoundIsOutcomeUnknown(t *testing.T) {
	overTransports(t, func(t *testing.T, tr runnerlink.Transport) {
		f := newFixture(t, 0, tr)
		ws, gen := f.connect(t)
		done := make(chan error, 1)
		go func() { done <- f.invoke(context.Background()) }()
		id := readRequest(t, ws)
		piece := make([]byte, runnerwire.MaxBinaryDataBytes)
		for i := range piece {
			piece[i] = 'x'
		}
		part, _ := runnerwire.EncodeBinary(runnerwire.Binary{Type: runnerwire.BinPart, Gen: gen, ID: id, Data: piece})
		for sent := 0; sent <= runnerwire.MaxResultBytes; sent += len(piece) {
			if err := ws.Write(context.Background(), runnerlink.Binary, part); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-done; !failure.Is(err, failure.OutcomeUnknown) {
			t.Fatalf("a result over %d bytes: %v", runnerwire.MaxResultBytes, err)
		}
		// The connection is still there for the next call.
		go func() { done <- f.invoke(context.Background()) }()
		id = readRequest(t, ws)
		res, _ := runnerwire.EncodeBinary(runnerwire.Binary{Type: runnerwire.BinResult, Gen: gen, ID: id, Data: []byte(`{"ok":true}`)})
		ws.Write(context.Background(), runnerlink.Binary, res)
		if err := <-done; err != nil {
			t.Fatalf("the next call: %v", err)
		}
	})
}

func TestMaxRunnersIsEnforced(t *testing.T) {
	f := newFixture(t, 0, runnerlink.WebSocket)
	f.hub.mu.Lock()
	for i := range MaxRunners {
		f.hub.conns[fmt.Sprintf("r%d", i)] = &conn{done: make(chan struct{})}
	}
	f.hub.mu.Unlock()
	_, code, err := f.hub.admit(context.Background(), nil, auth.Token{Owner: "local", Runner: "box"}, "good",
		runnerwire.Hello{ClientID: "box", InstanceID: "ri_1"})
	if err == nil || code != runnerwire.RejectConflict || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("runner %d: %v %s", MaxRunners+1, err, code)
	}
	f.hub.mu.Lock()
	clear(f.hub.conns)
	f.hub.mu.Unlock()
}

// TestACallerGoingAwayLeavesTheConnection: a call whose caller is gone
// sends nothing and a call cancelled while it waits ends alone; the
// connection serves the next call.
func TestACallerGoingAwayLeavesTheConnection(t *testing.T) {
	overTransports(t, func(t *testing.T, tr runnerlink.Transport) {
		f := newFixture(t, 0, tr)
		ws, gen := f.connect(t)
		gone, cancel := context.WithCancel(context.Background())
		cancel()
		if err := f.invoke(gone); !failure.Is(err, failure.Cancelled) {
			t.Fatalf("a call whose caller is gone: %v", err)
		}
		waiting, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f.invoke(waiting) }()
		readRequest(t, ws) // the first request the runner sees is this one: nothing was sent before
		stop()
		if err := <-done; !failure.Is(err, failure.Cancelled) {
			t.Fatalf("a call cancelled while it waits: %v", err)
		}
		go func() { done <- f.invoke(context.Background()) }()
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				t.Fatalf("the connection ended: %v", err)
			}
			if fr, _ := runnerwire.Decode(b); fr.Kind == runnerwire.KindRequest {
				res, _ := runnerwire.EncodeBinary(runnerwire.Binary{Type: runnerwire.BinResult, Gen: gen, ID: fr.ID, Data: []byte(`{}`)})
				ws.Write(context.Background(), runnerlink.Binary, res)
				break
			}
		}
		if err := <-done; err != nil {
			t.Fatalf("the next call: %v", err)
		}
	})
}
