package runnerlink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/runnerwire"
)

// closeTimeout bounds the best-effort close request a runner sends when
// its long-poll link ends.
const closeTimeout = 5 * time.Second

// pollClient is the runner's end of a long-poll link: one goroutine holds
// a recv open at all times, another sends what Write queued, one batch at
// a time. Any failed exchange ends the link.
type pollClient struct {
	url, token, id string
	in             chan message // the server's messages, to Read
	out            *queue       // Write's messages, to the next send
	done           chan struct{}
	ctx            context.Context // ends with the link: cuts the exchanges in flight
	cancel         context.CancelFunc

	mu  sync.Mutex
	err error
}

func dialPoll(ctx context.Context, base, token string, hello []byte) (Link, error) {
	url := strings.TrimRight(base, "/") + PollPath
	ctx, cancel := context.WithTimeout(ctx, SendTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"open", bytes.NewReader(encodeBatch([]message{{t: Text, b: hello}})))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", BatchContentType)
	ms, resp, err := roundTrip(req, http.StatusOK)
	if err != nil {
		return nil, err
	}
	if len(ms) != 1 {
		return nil, fmt.Errorf("runnerlink: the server answered an open with %d messages, not one", len(ms))
	}
	done := make(chan struct{})
	lctx, lcancel := context.WithCancel(context.Background())
	l := &pollClient{url: url, token: token, id: resp.Header.Get(LinkHeader), in: make(chan message, 1), out: newQueue(done),
		done: done, ctx: lctx, cancel: lcancel}
	l.in <- ms[0]
	if l.id == "" { // the server answered and ended the link (a reject)
		l.fail(ErrClosed)
		return l, nil
	}
	go l.receive()
	go l.send()
	return l, nil
}

// roundTrip does one exchange and decodes the batch it answers; a status
// other than want is an *HTTPError.
func roundTrip(req *http.Request, want int) ([]message, *http.Response, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, runnerwire.MaxMessageBytes))
		return nil, resp, &HTTPError{Transport: LongPoll, Status: resp.StatusCode, Header: resp.Header, Err: errors.New(strings.TrimSpace(string(msg)))}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxBatchBytes+1))
	if err != nil {
		return nil, resp, err
	}
	ms, err := decodeBatch(b)
	return ms, resp, err
}

// exchange does one recv or send of the link.
func (l *pollClient) exchange(op string, seq uint64, ms []message) ([]message, error) {
	timeout, want := PollTimeout, http.StatusOK
	if op == "send" {
		timeout, want = SendTimeout, http.StatusNoContent
	}
	ctx, cancel := context.WithTimeout(l.ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url+op, bytes.NewReader(encodeBatch(ms)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+l.token)
	req.Header.Set("Content-Type", BatchContentType)
	req.Header.Set(LinkHeader, l.id)
	req.Header.Set(SeqHeader, strconv.FormatUint(seq, 10))
	got, _, err := roundTrip(req, want)
	return got, err
}

// receive keeps one recv open and hands what it brings to Read.
func (l *pollClient) receive() {
	seq := uint64(1) // the open brought message 0
	for {
		ms, err := l.exchange("recv", seq, nil)
		if err != nil {
			l.fail(err)
			return
		}
		for _, m := range ms {
			select {
			case l.in <- m:
			case <-l.done:
				return
			}
		}
		seq += uint64(len(ms))
	}
}

// send sends what Write queued, a batch at a time, in order.
func (l *pollClient) send() {
	seq := uint64(1) // the open carried message 0, the hello
	for {
		select {
		case <-l.out.wait():
		case <-l.done:
			return
		}
		ms := l.out.take(MaxBatchMessages)
		if len(ms) == 0 {
			continue
		}
		if _, err := l.exchange("send", seq, ms); err != nil {
			l.fail(err)
			return
		}
		seq += uint64(len(ms))
	}
}

// fail ends the link once and tells the server (best effort), so that it
// ends its side at once rather than after the idle window.
func (l *pollClient) fail(why error) {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	l.err = why
	close(l.done)
	l.mu.Unlock()
	l.cancel()
	if l.id == "" {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url+"close", nil)
		if err != nil {
			return
		}
		req.Header.Set("Authorization", "Bearer "+l.token)
		req.Header.Set(LinkHeader, l.id)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
}

func (l *pollClient) Read(ctx context.Context) (Type, []byte, error) {
	return readFrom(ctx, l.in, l.done, l.cause)
}

func (l *pollClient) cause() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *pollClient) Write(ctx context.Context, t Type, b []byte) error {
	return writeTo(ctx, l.out, t, b)
}

func (l *pollClient) Close(string) { l.fail(ErrClosed) }
