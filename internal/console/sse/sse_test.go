package sse_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/console/sse"
	"github.com/webcodex/webcodex/internal/failure"
	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: every
// stream's handler, timer and shutdown hook must be gone.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server streams one "hello" event, then waits for its stream context to
// end and reports how it ended on ended.
func server(t *testing.T, l *sse.Limiter, ended chan<- error) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, release, err := l.Acquire(r.Context(), r.URL.Query().Get("key"))
		if err != nil {
			http.Error(w, string(failure.KindOf(err)), http.StatusTooManyRequests)
			return
		}
		defer release()
		s, err := sse.Start(w)
		if err != nil {
			ended <- err
			return
		}
		if err := s.Event("hello", "line one\nline <two>\r"); err != nil {
			ended <- err
			return
		}
		<-ctx.Done()
		ended <- ctx.Err()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// open starts a stream and reads its first event.
func open(t *testing.T, ctx context.Context, url string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp, ""
	}
	br := bufio.NewReader(resp.Body)
	var ev strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read event: %v (so far %q)", err, ev.String())
		}
		if line == "\n" {
			return resp, ev.String()
		}
		ev.WriteString(line)
	}
}

func TestEventFormatAndDisconnectEndsTheStream(t *testing.T) {
	l := sse.NewLimiter(2, 10)
	ended := make(chan error, 4)
	srv := server(t, l, ended)
	ctx, cancel := context.WithCancel(context.Background())
	resp, ev := open(t, ctx, srv.URL+"?key=a")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
		t.Fatalf("Content-Type = %q", ct)
	}
	if want := "event: hello\ndata: line one\ndata: line <two>\n"; ev != want {
		t.Fatalf("event = %q, want %q", ev, want)
	}
	if l.Open() != 1 {
		t.Fatalf("open streams = %d", l.Open())
	}
	cancel() // the client goes away
	resp.Body.Close()
	if err := <-ended; err != context.Canceled {
		t.Fatalf("stream ended with %v, want context.Canceled (client gone)", err)
	}
	// Close waits for the release; nothing is left open.
	if err := l.Close(context.Background()); err != nil || l.Open() != 0 {
		t.Fatalf("Close = %v with %d open", err, l.Open())
	}
}

func TestPerSessionAndTotalBounds(t *testing.T) {
	l := sse.NewLimiter(2, 3)
	ended := make(chan error, 8)
	srv := server(t, l, ended)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var bodies []io.Closer
	for range 2 {
		resp, _ := open(t, ctx, srv.URL+"?key=a")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream within the bound refused: %d", resp.StatusCode)
		}
		bodies = append(bodies, resp.Body)
	}
	resp, _ := open(t, ctx, srv.URL+"?key=a")
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third stream of one session: %d", resp.StatusCode)
	}
	resp.Body.Close()
	resp, _ = open(t, ctx, srv.URL+"?key=b")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("another session's stream refused: %d", resp.StatusCode)
	}
	bodies = append(bodies, resp.Body)
	resp, _ = open(t, ctx, srv.URL+"?key=c")
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("stream beyond the total: %d", resp.StatusCode)
	}
	resp.Body.Close()
	if l.Open() != 3 {
		t.Fatalf("open = %d, want 3 (refusals took no slot)", l.Open())
	}
	// Shutdown ends all three streams and Close returns once they are released.
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := <-ended; err != context.Canceled {
			t.Fatalf("stream ended with %v at shutdown", err)
		}
	}
	if l.Open() != 0 {
		t.Fatalf("open after Close = %d", l.Open())
	}
	for _, b := range bodies {
		b.Close()
	}
	if _, _, err := l.Acquire(context.Background(), "a"); !failure.Is(err, failure.Unavailable) {
		t.Fatalf("Acquire after Close: %v", err)
	}
}

func TestCloseTimesOutOnAStreamNeverReleased(t *testing.T) {
	l := sse.NewLimiter(1, 1)
	_, release, err := l.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := l.Close(ctx); !failure.Is(err, failure.TimedOut) {
		t.Fatalf("Close with a stream held: %v", err)
	}
	release()
	release() // idempotent
	if l.Open() != 0 {
		t.Fatalf("open = %d", l.Open())
	}
}
