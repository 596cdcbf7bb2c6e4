//go:build unix

package console_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/webcodex/webcodex/internal/console/sse"
	"github.com/webcodex/webcodex/internal/httpserver"
)

// openStream opens a live stream with b's cookie and returns the response
// (the body still streaming); the caller closes it.
func (b *client) openStream(ctx context.Context, path string) *http.Response {
	b.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", b.s.base+path, nil)
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp
}

// Live streams are long; they must not hold the MaxPublic request slots
// of the public routes the console shares: with every stream the console
// allows open (far more than MaxPublic), sign-in, pages and static files
// still answer, and the streams' own bounds still refuse with 429.
func TestOpenStreamsHoldNoRequestSlot(t *testing.T) {
	if sse.MaxStreams <= httpserver.MaxPublic {
		t.Fatalf("the test needs more streams (%d) than public slots (%d)", sse.MaxStreams, httpserver.MaxPublic)
	}
	s := start(t)
	alice := s.token(t, "alice")
	sess := s.startSession(t, alice, "a long job")
	p, err := s.a.Projects.Get(context.Background(), s.project)
	if err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(p.Root, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	job := s.runJob(t, alice, sess, `read word < gate; echo "done: $word"`)
	tail := "/console/sessions/" + sess + "/jobs/" + job + "/tail"

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	for len(open) < sse.MaxStreams {
		b := s.browser(t)
		b.login(alice)
		for range sse.PerSession {
			resp := b.openStream(ctx, tail)
			if resp.StatusCode != http.StatusOK {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Fatalf("stream %d: %d %s", len(open)+1, resp.StatusCode, body)
			}
			open = append(open, resp)
		}
		// Past its share, a console session's next stream is refused by
		// the stream bound, not by the request pool.
		resp := b.openStream(ctx, tail)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "too_many_requests") {
			t.Fatalf("stream %d of one console session: %d %s", sse.PerSession+1, resp.StatusCode, body)
		}
	}

	// Every stream is open; the public routes still answer.
	late := s.browser(t)
	if pg := late.get("/console/login"); pg.status != http.StatusOK {
		t.Fatalf("login form with %d streams open: %d %s", len(open), pg.status, pg.body)
	}
	if pg := late.post("/console/login", url.Values{"token": {alice}}); pg.status != http.StatusSeeOther {
		t.Fatalf("sign-in with %d streams open: %d %s", len(open), pg.status, pg.body)
	}
	for _, path := range []string{"/console/", "/console/sessions/" + sess, "/console/static/console.css"} {
		if pg := late.get(path); pg.status != http.StatusOK {
			t.Fatalf("%s with %d streams open: %d %s", path, len(open), pg.status, pg.body)
		}
	}
	// The server-wide bound refuses a new console session's first stream.
	resp := late.openStream(ctx, tail)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "live streams open") {
		t.Fatalf("stream %d: %d %s", sse.MaxStreams+1, resp.StatusCode, body)
	}

	// The job ends: every stream sends its end and closes.
	f, err := os.OpenFile(gate, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("green\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for i, r := range open {
		sawEnd := false
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			if sc.Text() == "event: end" {
				sawEnd = true
			}
		}
		if !sawEnd {
			t.Fatalf("stream %d closed without its end (%v)", i+1, sc.Err())
		}
	}
}
