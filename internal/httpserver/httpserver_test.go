package httpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/admission"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/httpserver"
)

// tokens maps a bearer credential to its principal's owner.
type tokens map[string]string

func (ts tokens) Authenticate(_ context.Context, raw string) (auth.Principal, error) {
	owner, ok := ts[raw]
	if !ok {
		return auth.Principal{}, failure.New(failure.Unauthenticated, "bad token")
	}
	return auth.Principal{Kind: auth.KindAPIToken, ID: raw, Owner: owner}, nil
}

// stack is a Mux on a real server with routes that block until released:
// /block holds its request; /wait begins a bounded wait and then holds.
type stack struct {
	mux     *httpserver.Mux
	url     string
	addr    string
	entered chan string
	release chan struct{}
}

func newStack(t *testing.T, o httpserver.Options) *stack {
	t.Helper()
	s := &stack{entered: make(chan string, 1024), release: make(chan struct{})}
	o.Auth = tokens{"tok-a": "owner-a", "tok-b": "owner-b", "tok-c": "owner-c", "tok-d": "owner-d", "tok-e": "owner-e"}
	m := httpserver.NewMux(o)
	m.Always("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	m.Authenticated("POST /block", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.entered <- "block"
		<-s.release
	}))
	m.Authenticated("POST /wait", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := admission.BeginWait(r.Context()); err != nil {
			httpserver.WriteError(w, httpserver.StatusFor(failure.KindOf(err)), err)
			return
		}
		s.entered <- "wait"
		<-s.release
	}))
	m.AuthenticatedTransport(httpserver.TransportMCP, "POST /mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.entered <- "mcp"
		<-s.release
	}))
	m.Authenticated("POST /ok", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%d", len(httpserver.Body(r)))
	}))
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(func() {
		select {
		case <-s.release:
		default:
			close(s.release)
		}
		srv.Close()
	})
	s.mux, s.url, s.addr = m, srv.URL, strings.TrimPrefix(srv.URL, "http://")
	return s
}

type answer struct {
	status     int
	kind       failure.Kind
	retryAfter string
	err        error
}

func (s *stack) post(token, path, body string) answer {
	req, _ := http.NewRequest("POST", s.url+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{err: err}
	}
	return read(resp)
}

func read(resp *http.Response) answer {
	defer resp.Body.Close()
	var eb httpserver.ErrorBody
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &eb)
	return answer{status: resp.StatusCode, kind: eb.Error.Kind, retryAfter: resp.Header.Get("Retry-After")}
}

// hold sends n requests that block and waits until all are inside.
func (s *stack) hold(t *testing.T, token, path string, n int) chan answer {
	t.Helper()
	out := make(chan answer, n)
	for range n {
		go func() { out <- s.post(token, path, "{}") }()
	}
	for range n {
		select {
		case <-s.entered:
		case a := <-out:
			t.Fatalf("a held request was answered: %+v", a)
		}
	}
	return out
}

func (s *stack) healthz(t *testing.T) {
	t.Helper()
	resp, err := http.Get(s.url + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	resp.Body.Close()
}

func wantRefused(t *testing.T, a answer, status int, kind failure.Kind) {
	t.Helper()
	if a.err != nil || a.status != status || a.kind != kind || a.retryAfter != "1" {
		t.Fatalf("got %+v, want %d %s with Retry-After 1", a, status, kind)
	}
}

// TestPrincipalShare: one principal holding its MaxPerPrincipal slots is
// refused the next one at once (429); another principal and /healthz are
// served.
func TestPrincipalShare(t *testing.T) {
	s := newStack(t, httpserver.Options{})
	s.hold(t, "tok-a", "/block", httpserver.MaxPerPrincipal)
	wantRefused(t, s.post("tok-a", "/ok", "{}"), 429, failure.TooManyRequests)
	if a := s.post("tok-b", "/ok", "{}"); a.status != 200 {
		t.Fatalf("other principal: %+v", a)
	}
	s.healthz(t)
}

// TestQueueOverTheShare: 32 concurrent calls of one principal (twice its
// share) all complete when the calls holding its slots finish within the
// queue's wait: 16 run, 16 wait for their slots. One more call, beyond the
// queue's depth, is refused at once (429). The wait is an hour here, so
// only the calls' completion, which the test controls, frees a slot.
func TestQueueOverTheShare(t *testing.T) {
	s := newStack(t, httpserver.Options{QueueWait: time.Hour})
	share := httpserver.MaxPerPrincipal
	held := s.hold(t, "tok-a", "/block", share)
	queued := make(chan answer, share)
	for range share {
		go func() { queued <- s.post("tok-a", "/block", "{}") }()
	}
	for s.mux.Queued("owner-a") < share {
		runtime.Gosched()
	}
	wantRefused(t, s.post("tok-a", "/ok", "{}"), 429, failure.TooManyRequests)
	if a := s.post("tok-b", "/ok", "{}"); a.status != 200 {
		t.Fatalf("other principal: %+v", a)
	}
	close(s.release)
	for range share {
		if a, b := <-held, <-queued; a.status != 200 || b.status != 200 {
			t.Fatalf("held call %+v, queued call %+v; want both served", a, b)
		}
	}
	if n := s.mux.Queued("owner-a"); n != 0 {
		t.Fatalf("%d calls still queued", n)
	}
}

// TestQueueWaitEnds: a call over the share whose wait ends before a slot
// comes free is refused (429) and leaves the queue; the calls holding the
// slots are not disturbed.
func TestQueueWaitEnds(t *testing.T) {
	s := newStack(t, httpserver.Options{PerPrincipal: 2, QueueWait: time.Nanosecond})
	held := s.hold(t, "tok-a", "/block", 2)
	wantRefused(t, s.post("tok-a", "/ok", "{}"), 429, failure.TooManyRequests)
	if n := s.mux.Queued("owner-a"); n != 0 {
		t.Fatalf("%d calls still queued", n)
	}
	close(s.release)
	for range 2 {
		if a := <-held; a.status != 200 {
			t.Fatalf("held call: %+v", a)
		}
	}
}

// TestGlobalPool: when every principal's shares together fill
// MaxConcurrent, a new principal gets 503 unavailable; /healthz is served.
func TestGlobalPool(t *testing.T) {
	s := newStack(t, httpserver.Options{})
	owners := []string{"tok-a", "tok-b", "tok-c", "tok-d"}
	if len(owners)*httpserver.MaxPerPrincipal != httpserver.MaxConcurrent {
		t.Fatalf("test assumes %d principals fill the pool", len(owners))
	}
	for _, tok := range owners {
		s.hold(t, tok, "/block", httpserver.MaxPerPrincipal)
	}
	wantRefused(t, s.post("tok-e", "/ok", "{}"), 503, failure.Unavailable)
	s.healthz(t)
}

// TestWaitsLeaveRequestSlots: waits take the principal's waiter share,
// not its request slots; beyond MaxWaitersPerPrincipal a wait is refused
// (429) and the principal still has all its request slots.
func TestWaitsLeaveRequestSlots(t *testing.T) {
	s := newStack(t, httpserver.Options{})
	s.hold(t, "tok-a", "/wait", httpserver.MaxWaitersPerPrincipal)
	wantRefused(t, withRetry(s.post("tok-a", "/wait", "{}")), 429, failure.TooManyRequests)
	s.hold(t, "tok-a", "/block", httpserver.MaxPerPrincipal)
	wantRefused(t, s.post("tok-a", "/ok", "{}"), 429, failure.TooManyRequests)
	if a := s.post("tok-b", "/ok", "{}"); a.status != 200 {
		t.Fatalf("other principal: %+v", a)
	}
}

// withRetry fills in the Retry-After that only the Mux's own refusals
// carry (the test handler writes a plain error).
func withRetry(a answer) answer {
	if a.retryAfter == "" {
		a.retryAfter = "1"
	}
	return a
}

// slowBody opens a connection, sends the headers of a request whose body
// never completes and one byte of it; the answer arrives on out.
func slowBody(t *testing.T, addr, token string, out chan answer) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	fmt.Fprintf(c, "POST /ok HTTP/1.1\r\nHost: %s\r\n%sContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", addr, auth)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			out <- answer{err: err}
			return
		}
		out <- read(resp)
	}()
	return c
}

// TestSlowBodies: 80 slow bodies of one principal hold at most its share
// (the rest are refused at once); an unauthenticated slow body is refused
// before its body is read; the other principal and /healthz are served;
// a slow body is cut off at the body timeout (408).
func TestSlowBodies(t *testing.T) {
	s := newStack(t, httpserver.Options{})
	const n = 80
	answers := make(chan answer, n)
	for range n {
		c := slowBody(t, s.addr, "tok-a", answers)
		defer c.Close()
	}
	// The share's slots are held by the first bodies; every other one is
	// refused at once, whatever the order.
	for range n - httpserver.MaxPerPrincipal {
		wantRefused(t, <-answers, 429, failure.TooManyRequests)
	}
	for range 4 {
		out := make(chan answer, 1)
		c := slowBody(t, s.addr, "", out)
		defer c.Close()
		if a := <-out; a.status != 401 {
			t.Fatalf("unauthenticated slow body: %+v", a)
		}
	}
	for range 20 {
		if a := s.post("tok-b", "/ok", `{"x":1}`); a.status != 200 {
			t.Fatalf("other principal during slow bodies: %+v", a)
		}
		s.healthz(t)
	}
	wantRefused(t, s.post("tok-a", "/ok", "{}"), 429, failure.TooManyRequests)
	select {
	case a := <-answers:
		t.Fatalf("a body holding a slot was answered: %+v", a)
	default:
	}
}

// TestBodyTimeout: a body that stops arriving is answered 408 and its
// slot is given back.
func TestBodyTimeout(t *testing.T) {
	s := newStack(t, httpserver.Options{BodyTimeout: 50 * time.Millisecond})
	out := make(chan answer, 1)
	for range httpserver.MaxPerPrincipal + 1 {
		c := slowBody(t, s.addr, "tok-a", out)
		a := <-out
		c.Close()
		if a.status != http.StatusRequestTimeout || a.kind != failure.InvalidArguments {
			t.Fatalf("slow body: %+v", a)
		}
	}
	if a := s.post("tok-a", "/ok", "{}"); a.status != 200 {
		t.Fatalf("after the timeouts: %+v", a)
	}
}

// gated is an Authenticator whose checks block until the gate opens.
type gated struct {
	in   chan struct{}
	gate chan struct{}
}

func (g gated) Authenticate(ctx context.Context, raw string) (auth.Principal, error) {
	g.in <- struct{}{}
	<-g.gate
	return auth.Principal{Kind: auth.KindAPIToken, ID: raw, Owner: raw}, nil
}

// TestCredentialChecksWait: a burst of requests beyond MaxAuthenticating
// waits for a credential-check slot instead of being refused; no more
// than MaxAuthenticating checks run at once.
func TestCredentialChecksWait(t *testing.T) {
	g := gated{in: make(chan struct{}, 1024), gate: make(chan struct{})}
	m := httpserver.NewMux(httpserver.Options{Auth: g})
	m.Authenticated("POST /ok", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	const n = httpserver.MaxAuthenticating + 8
	out := make(chan answer, n)
	s := &stack{url: srv.URL}
	for i := range n {
		go func() { out <- s.post(fmt.Sprintf("tok-%d", i), "/ok", "{}") }()
	}
	for range httpserver.MaxAuthenticating {
		<-g.in
	}
	select {
	case <-g.in:
		t.Fatalf("more than %d credential checks at once", httpserver.MaxAuthenticating)
	case a := <-out:
		t.Fatalf("answered while the checks are blocked: %+v", a)
	default:
	}
	close(g.gate)
	for range n {
		if a := <-out; a.status != 200 {
			t.Fatalf("burst request: %+v", a)
		}
	}
}

// TestSlotsByTransport: the authenticated pool's slots are counted by the
// transport of the route that holds them; a call in a bounded wait holds
// a waiter slot instead, and every count returns to zero when the
// requests end.
func TestSlotsByTransport(t *testing.T) {
	s := newStack(t, httpserver.Options{})
	mcp := s.hold(t, "tok-a", "/mcp", 2)
	rest := s.hold(t, "tok-b", "/block", 1)
	wait := s.hold(t, "tok-c", "/wait", 1)
	got := s.mux.InUse()
	if want := (map[string]int{httpserver.TransportMCP: 2, httpserver.TransportREST: 1}); !maps.Equal(got.ByTransport, want) || got.Authenticated != 3 || got.Waiting != 1 {
		t.Fatalf("in use %+v, want by transport %v, 3 authenticated, 1 waiting", got, want)
	}
	close(s.release)
	for _, c := range []chan answer{mcp, mcp, rest, wait} {
		if a := <-c; a.status != 200 {
			t.Fatalf("a held request ended %+v", a)
		}
	}
	got = s.mux.InUse()
	if want := (map[string]int{httpserver.TransportMCP: 0, httpserver.TransportREST: 0}); !maps.Equal(got.ByTransport, want) || got.Authenticated != 0 || got.Waiting != 0 {
		t.Fatalf("after the requests: %+v", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("an unknown transport was registered")
		}
	}()
	s.mux.AuthenticatedTransport("grpc", "POST /x", http.NotFoundHandler())
}
