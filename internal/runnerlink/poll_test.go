package runnerlink

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/runnerwire"
)

// pollServer serves a Poller on loopback; a request's key is its bearer
// token. Each link is served by serve.
type pollServer struct {
	p     *Poller
	url   string
	links chan Link // every link opened, as serve got it
}

func newPollServer(t *testing.T, idle, hold time.Duration, serve func(Link)) *pollServer {
	t.Helper()
	s := &pollServer{p: NewPoller(idle, hold), links: make(chan Link, 16)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if r.URL.Path == PollPath+"open" {
			s.p.Open(w, r, key, func(l Link) { s.links <- l; serve(l) })
			return
		}
		s.p.Serve(w, r, key)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// echo answers the hello with "welcome" and then sends back every message
// it reads, until the link ends.
func echo(l Link) {
	if _, _, err := l.Read(context.Background()); err != nil {
		return
	}
	if l.Write(context.Background(), Text, []byte("welcome")) != nil {
		return
	}
	for {
		t, b, err := l.Read(context.Background())
		if err != nil || l.Write(context.Background(), t, b) != nil {
			return
		}
	}
}

// open dials the server as a runner with token and reads the welcome.
func (s *pollServer) open(t *testing.T, token string) (Link, Link) {
	t.Helper()
	c, err := Dial(context.Background(), LongPoll, s.url, token, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close("") })
	if _, b, err := c.Read(context.Background()); err != nil || string(b) != "welcome" {
		t.Fatalf("the answer to the hello: %q %v", b, err)
	}
	return c, <-s.links
}

// post sends one raw long-poll request and returns its status.
func (s *pollServer) post(t *testing.T, op, token, id string, seq string, body []byte) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url+PollPath+op, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(LinkHeader, id)
	if seq != "" {
		req.Header.Set(SeqHeader, seq)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func linkID(l Link) string { return l.(*pollClient).id }

// ended is why the server's end of a link has ended (nil while open).
func ended(l Link) error { return l.(*pollLink).cause() }

func TestALongPollLinkCarriesMessagesInOrder(t *testing.T) {
	s := newPollServer(t, time.Minute, 0, echo)
	c, _ := s.open(t, "tok")
	ctx := context.Background()
	// More than one batch's worth, mixed types, the largest frames.
	const n = 3 * MaxBatchMessages
	big := bytes.Repeat([]byte("x"), runnerwire.MaxFrameBytes-8)
	go func() {
		for i := range n {
			typ, b := Text, []byte(strconv.Itoa(i))
			if i%5 == 0 {
				typ, b = Binary, append([]byte(strconv.Itoa(i)+":"), big...)
			}
			if c.Write(ctx, typ, b) != nil {
				return
			}
		}
	}()
	for i := range n {
		typ, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		want := strconv.Itoa(i)
		if typ == Binary {
			want += ":"
		}
		if (i%5 == 0) != (typ == Binary) || !bytes.HasPrefix(b, []byte(want)) {
			t.Fatalf("message %d came back as %v %.20q", i, typ, b)
		}
	}
}

func TestAnOversizedMessageIsRefusedBeforeItIsSent(t *testing.T) {
	s := newPollServer(t, time.Minute, 0, echo)
	c, srv := s.open(t, "tok")
	huge := make([]byte, runnerwire.MaxFrameBytes+1)
	if err := c.Write(context.Background(), Binary, huge); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a runner's write over the bound: %v", err)
	}
	if err := srv.Write(context.Background(), Binary, huge); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a server's write over the bound: %v", err)
	}
	if _, err := Dial(context.Background(), LongPoll, s.url, "tok", huge); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a hello over the bound: %v", err)
	}
	// The link is still there.
	c.Write(context.Background(), Text, []byte("after"))
	if _, b, err := c.Read(context.Background()); err != nil || string(b) != "after" {
		t.Fatalf("after the refused writes: %q %v", b, err)
	}
}

// openRaw opens a link by hand (no runner goroutines polling it) and
// returns its id.
func (s *pollServer) openRaw(t *testing.T, token string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url+PollPath+"open", bytes.NewReader(encodeBatch([]message{{t: Text, b: []byte("hello")}})))
	req.Header.Set("Authorization", "Bearer "+token)
	ms, resp, err := roundTrip(req, http.StatusOK)
	if err != nil || len(ms) != 1 || resp.Header.Get(LinkHeader) == "" {
		t.Fatalf("open: %v %v", err, ms)
	}
	return resp.Header.Get(LinkHeader)
}

func TestAHeldReceiveAnswersEmptyAfterTheHold(t *testing.T) {
	s := newPollServer(t, time.Minute, time.Millisecond, func(l Link) {
		l.Read(context.Background())
		l.Write(context.Background(), Text, []byte("welcome"))
	})
	id := s.openRaw(t, "tok")
	srv := <-s.links
	for range 3 { // each empty answer moves nothing: the next receive is message 1 again
		if code, body := s.post(t, "recv", "tok", id, "1", nil); code != http.StatusOK || len(body) != 0 {
			t.Fatalf("a hold with nothing to deliver: HTTP %d %q", code, body)
		}
	}
	if err := ended(srv); err != nil {
		t.Fatalf("empty receives ended the link: %v", err)
	}
	if PollHold >= PollTimeout || PollHold >= 60*time.Second {
		t.Fatalf("PollHold %v must be under PollTimeout %v and a 60 s proxy idle timeout", PollHold, PollTimeout)
	}
}

// TestAReceiveTakesOneBoundedBatch: with more queued than a batch holds,
// a receive answers MaxBatchMessages and the next the rest, in order.
func TestAReceiveTakesOneBoundedBatch(t *testing.T) {
	s := newPollServer(t, time.Minute, time.Millisecond, func(l Link) {
		l.Read(context.Background())
		l.Write(context.Background(), Text, []byte("welcome"))
		for i := range MaxBatchMessages + 1 {
			l.Write(context.Background(), Text, []byte(strconv.Itoa(i)))
		}
	})
	id := s.openRaw(t, "tok")
	srv := <-s.links
	got := 0
	for seq := 1; got < MaxBatchMessages+1; {
		code, body := s.post(t, "recv", "tok", id, strconv.Itoa(seq), nil)
		ms, err := decodeBatch(body)
		if code != http.StatusOK || err != nil || len(ms) > MaxBatchMessages {
			t.Fatalf("HTTP %d, %d messages, %v", code, len(ms), err)
		}
		for _, m := range ms {
			if string(m.b) != strconv.Itoa(got) {
				t.Fatalf("message %d is %q", got, m.b)
			}
			got++
		}
		seq += len(ms)
	}
	if err := ended(srv); err != nil {
		t.Fatal(err)
	}
}

func TestLongPollRequestsOutOfSequenceEndTheLink(t *testing.T) {
	for _, tc := range []struct{ op, seq string }{{"send", "0"}, {"send", "7"}, {"recv", "5"}} {
		t.Run(tc.op+tc.seq, func(t *testing.T) {
			s := newPollServer(t, time.Minute, 0, echo)
			c, srv := s.open(t, "tok")
			code, _ := s.post(t, tc.op, "tok", linkID(c), tc.seq, encodeBatch([]message{{t: Text, b: []byte("replayed")}}))
			if code != http.StatusConflict {
				t.Fatalf("a %s with seq %s: HTTP %d", tc.op, tc.seq, code)
			}
			if err := ended(srv); !errors.Is(err, errSequence) {
				t.Fatalf("the link after a %s out of sequence: %v", tc.op, err)
			}
			if s.p.Len() != 0 {
				t.Fatalf("%d links left", s.p.Len())
			}
		})
	}
}

func TestABadBatchEndsTheLink(t *testing.T) {
	frame := func(typ byte, n int) []byte {
		return append([]byte{typ, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, make([]byte, n)...)
	}
	many := bytes.Repeat(frame('t', 1), MaxBatchMessages+1)
	for name, body := range map[string][]byte{
		"unknown type":   frame('x', 1),
		"truncated":      frame('t', 10)[:8],
		"oversized":      frame('b', runnerwire.MaxFrameBytes+1),
		"too many":       many,
		"too many bytes": bytes.Repeat(frame('b', runnerwire.MaxFrameBytes), MaxBatchBytes/runnerwire.MaxFrameBytes+1),
	} {
		t.Run(name, func(t *testing.T) {
			s := newPollServer(t, time.Minute, 0, echo)
			c, srv := s.open(t, "tok")
			// The runner has sent nothing but its hello: this is message 1.
			if code, _ := s.post(t, "send", "tok", linkID(c), "1", body); code != http.StatusBadRequest {
				t.Fatalf("HTTP %d", code)
			}
			if err := ended(srv); err == nil || errors.Is(err, errSequence) {
				t.Fatalf("the link after a bad batch: %v", err)
			}
		})
	}
}

func TestALinkAnswersOnlyItsOwnToken(t *testing.T) {
	s := newPollServer(t, time.Minute, 0, echo)
	c, srv := s.open(t, "tok")
	for _, op := range []string{"send", "recv", "close"} {
		if code, _ := s.post(t, op, "other", linkID(c), "1", nil); code != http.StatusNotFound {
			t.Fatalf("%s with another token: HTTP %d", op, code)
		}
	}
	if err := ended(srv); err != nil {
		t.Fatalf("another token's requests ended the link: %v", err)
	}
	s.p.Refused(httptest.NewRequest(http.MethodPost, "/", nil), "tok") // names no link
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set(LinkHeader, linkID(c))
	s.p.Refused(r, "other")
	if err := ended(srv); err != nil {
		t.Fatalf("a refusal of another token ended the link: %v", err)
	}
	s.p.Refused(r, "tok")
	if err := ended(srv); !errors.Is(err, errRevoked) {
		t.Fatalf("the link after its token was refused: %v", err)
	}
	if _, _, err := c.Read(context.Background()); err == nil {
		t.Fatal("the runner's end outlived the refusal")
	}
}

func TestALinkNobodyPollsEnds(t *testing.T) {
	s := newPollServer(t, 10*time.Millisecond, 0, func(l Link) {
		l.Read(context.Background())
		l.Write(context.Background(), Text, []byte("welcome"))
	})
	id := s.openRaw(t, "tok") // a runner that opens and never polls
	srv := <-s.links
	if _, _, err := srv.Read(context.Background()); !errors.Is(err, errIdle) {
		t.Fatalf("a link nobody polls: %v", err)
	}
	if code, _ := s.post(t, "recv", "tok", id, "1", nil); code != http.StatusNotFound {
		t.Fatalf("a receive on the ended link: HTTP %d", code)
	}
}

func TestTheServersAnswerToAnOpenIsItsFirstMessageOnly(t *testing.T) {
	s := newPollServer(t, time.Minute, 0, func(l Link) {
		l.Read(context.Background())
		l.Write(context.Background(), Text, []byte("reject"))
		l.Write(context.Background(), Text, []byte("never delivered"))
		l.Close("rejected")
	})
	c, err := Dial(context.Background(), LongPoll, s.url, "tok", []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.Read(context.Background()); err != nil || string(b) != "reject" {
		t.Fatalf("the answer: %q %v", b, err)
	}
	if _, b, err := c.Read(context.Background()); err == nil {
		t.Fatalf("a closed link delivered %q", b)
	}
	if s.p.Len() != 0 {
		t.Fatalf("%d links left after a reject", s.p.Len())
	}
}

func TestLongPollLinksAreBounded(t *testing.T) {
	s := newPollServer(t, time.Minute, 0, echo)
	for range MaxPollLinks {
		if _, err := s.p.add("k", message{t: Text, b: []byte("hello")}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Dial(context.Background(), LongPoll, s.url, "tok", []byte("hello"))
	var he *HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusServiceUnavailable || s.p.Len() != MaxPollLinks {
		t.Fatalf("open %d: %v (%d links)", MaxPollLinks+1, err, s.p.Len())
	}
}

func TestAFullQueueHoldsTheWriter(t *testing.T) {
	done := make(chan struct{})
	q := newQueue(done)
	frame := make([]byte, runnerwire.MaxFrameBytes)
	n := 0
	for ; q.put(context.Background(), message{t: Binary, b: frame}) == nil && q.bytes+len(frame)+messageHeaderBytes <= MaxQueuedBytes; n++ {
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.put(gone, message{t: Binary, b: frame}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a write to a full queue (%d bytes): %v", q.bytes, err)
	}
	if got := q.take(MaxBatchMessages); len(got) == 0 || len(encodeBatch(got)) > MaxBatchBytes {
		t.Fatalf("a batch of %d messages, %d bytes", len(got), len(encodeBatch(got)))
	}
	if err := q.put(gone, message{t: Binary, b: frame}); err != nil {
		t.Fatalf("a write after a batch was taken: %v", err)
	}
	close(done)
	if err := q.put(context.Background(), message{t: Text, b: []byte("x")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("a write to an ended link: %v", err)
	}
}

func TestUpgradeRefusedIsWhatAProxyAnswers(t *testing.T) {
	for status, want := range map[int]bool{
		http.StatusOK: true, http.StatusSwitchingProtocols: true, http.StatusBadRequest: true, http.StatusNotFound: true,
		http.StatusMethodNotAllowed: true, http.StatusUpgradeRequired: true, http.StatusNotImplemented: true,
		http.StatusUnauthorized: false, http.StatusForbidden: false, http.StatusTooManyRequests: false,
		http.StatusInternalServerError: false, http.StatusBadGateway: false, http.StatusServiceUnavailable: false, http.StatusGatewayTimeout: false,
	} {
		if got := UpgradeRefused(&HTTPError{Transport: WebSocket, Status: status}); got != want {
			t.Errorf("HTTP %d: refused=%t, want %t", status, got, want)
		}
	}
	if UpgradeRefused(&HTTPError{Transport: LongPoll, Status: http.StatusBadRequest}) || UpgradeRefused(errors.New("connection refused")) {
		t.Error("a failure that is no WebSocket answer counted as a refused upgrade")
	}
	if _, err := ParseTransport("quic"); err == nil {
		t.Error("an unknown transport was accepted")
	}
}

// TestClosingThePollerEndsEveryLink: a server shutting down ends its
// links (a held receive answers at once) and refuses new ones.
func TestClosingThePollerEndsEveryLink(t *testing.T) {
	s := newPollServer(t, time.Minute, time.Hour, echo)
	c, srv := s.open(t, "tok")
	s.p.Close()
	if err := ended(srv); !errors.Is(err, errShutdown) {
		t.Fatalf("a link after Close: %v", err)
	}
	if _, _, err := c.Read(context.Background()); err == nil {
		t.Fatal("the runner's end outlived the server's shutdown")
	}
	var he *HTTPError
	if _, err := Dial(context.Background(), LongPoll, s.url, "tok", []byte("hello")); !errors.As(err, &he) || he.Status != http.StatusServiceUnavailable {
		t.Fatalf("an open after Close: %v", err)
	}
}
