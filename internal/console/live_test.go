package console

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/console/sse"
	"github.com/webcodex/webcodex/internal/console/verifyrun"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
	"go.uber.org/goleak"
)

// These tests drive the live handlers directly, with a viewer in the
// request context (the page wrapper's job, tested with the whole server in
// internal/app), to observe what a stream holds and when it lets go.

// held is a verifier that runs until its context ends.
func held(started chan<- struct{}) verifyrun.VerifyFunc {
	return func(ctx context.Context, opts evidence.VerifyOptions) (evidence.Report, error) {
		opts.Progress(1, 4)
		started <- struct{}{}
		<-ctx.Done()
		return evidence.Report{}, failure.Wrap(failure.Cancelled, ctx.Err(), "verification cancelled")
	}
}

// liveServer serves h as the viewer owner (account:manage) and reports on
// done each time a handler has returned.
func liveServer(t *testing.T, s *Server, h handlerFunc, done chan<- struct{}) *httptest.Server {
	t.Helper()
	v := Viewer{Principal: auth.Principal{Kind: "api_token", ID: "t1", Owner: "owner", Scopes: []auth.Scope{auth.ScopeAccountManage}}, CSRF: "csrf-1"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		r = r.WithContext(context.WithValue(r.Context(), viewerKey{}, v))
		s.run(w, r, h)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// firstEvent opens url and returns the response and the first event's
// name and data.
func firstEvent(t *testing.T, ctx context.Context, url string) (*http.Response, string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	var name string
	var data []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			return resp, name, strings.Join(data, "\n")
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
}

func TestVerifyStreamEndsOnDisconnectAndAtShutdown(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	started := make(chan struct{}, 1)
	run := verifyrun.New(held(started), nil)
	defer run.Close()
	lim := sse.NewLimiter(sse.PerSession, sse.MaxStreams)
	s, err := New(Options{Verify: run, Streams: lim})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 4)
	srv := liveServer(t, s, s.verifyEvents, done)
	if _, err := run.Start(); err != nil {
		t.Fatal(err)
	}
	<-started

	// The client goes away: the handler returns and frees its slot; the
	// run goes on.
	ctx, cancel := context.WithCancel(context.Background())
	resp, name, data := firstEvent(t, ctx, srv.URL)
	if name != "verify" || !strings.Contains(data, "Run 1 is verifying: 1 of 4 records (25 %)") {
		t.Fatalf("first event %q: %s", name, data)
	}
	if lim.Open() != 1 {
		t.Fatalf("open streams = %d", lim.Open())
	}
	cancel()
	resp.Body.Close()
	<-done
	if lim.Open() != 0 {
		t.Fatalf("a disconnected stream kept its slot: %d open", lim.Open())
	}
	if st, _ := run.Watch(); st.Phase != verifyrun.PhaseRunning {
		t.Fatalf("the run ended with its watcher: %+v", st)
	}

	// Shutdown ends a stream the client still reads: the body ends.
	resp, _, _ = firstEvent(t, context.Background(), srv.URL)
	if err := lim.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-done
	rest := make([]byte, 1)
	if n, err := resp.Body.Read(rest); err == nil {
		t.Fatalf("the stream went on after shutdown: read %q", rest[:n])
	}
	resp.Body.Close()
	srv.Close()
	run.Close()
}

func TestVerifyStreamRefusedBeyondTheBound(t *testing.T) {
	started := make(chan struct{}, 1)
	run := verifyrun.New(held(started), nil)
	defer run.Close()
	lim := sse.NewLimiter(1, 8)
	defer lim.Close(context.Background())
	s, err := New(Options{Verify: run, Streams: lim})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 4)
	srv := liveServer(t, s, s.verifyEvents, done)
	run.Start()
	<-started
	resp, _, _ := firstEvent(t, context.Background(), srv.URL)
	defer resp.Body.Close()
	second, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	second.Body.Close()
	<-done
	if second.StatusCode != http.StatusTooManyRequests || second.Header.Get("Content-Type") == "text/event-stream; charset=utf-8" {
		t.Fatalf("second stream of one console session: %d %s", second.StatusCode, second.Header.Get("Content-Type"))
	}
}

func TestAuditChartsEscapeToolNames(t *testing.T) {
	evil := `<script>document.title="pwned"</script>`
	c := auditCharts(audit.ToolReport{Tools: []audit.ToolStats{{Tool: evil, Count: 3, Successes: 2, SuccessRate: 2.0 / 3, P50MS: 5, P95MS: 9, MeanBytes: 100, P95Bytes: 200}}})
	for name, svg := range map[string]string{"calls": string(c.Calls), "success": string(c.Success), "latency": string(c.Latency), "bytes": string(c.Bytes)} {
		if strings.Contains(svg, "<script") || !strings.Contains(svg, "&lt;script&gt;") {
			t.Errorf("%s chart does not escape the tool name:\n%s", name, svg)
		}
	}
	if !strings.Contains(string(c.Success), "67 % (2 ok)") || !strings.Contains(string(c.Latency), "p50 5 ms · p95 9 ms") || !strings.Contains(string(c.Bytes), "mean 100 B · p95 200 B") {
		t.Fatalf("chart values missing:\n%s\n%s\n%s", c.Success, c.Latency, c.Bytes)
	}
}
