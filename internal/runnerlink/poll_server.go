package runnerlink

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Headers of the long-poll exchanges.
const (
	// LinkHeader carries the link id: in the answer to an open, and in
	// every later request.
	LinkHeader = "X-Webcodex-Link"
	// SeqHeader carries the sequence number of a request's first message
	// in its direction: the count of messages the runner has received (a
	// recv) or sent (a send; the hello is message 0).
	SeqHeader = "X-Webcodex-Seq"
)

// Why a server's long-poll link ends.
var (
	errIdle     = errors.New("runnerlink: the runner stopped polling")
	errSequence = errors.New("runnerlink: a long-poll request out of sequence (replayed, reordered or concurrent)")
	errGone     = errors.New("runnerlink: the runner closed the link")
	errRevoked  = errors.New("runnerlink: the runner's token was refused")
	errShutdown = errors.New("runnerlink: the server is shutting down")
)

// A Poller is the server's side of the long-poll transport: it holds the
// open links by id, each bound to the token that opened it.
type Poller struct {
	hold, idle time.Duration

	mu     sync.Mutex
	links  map[string]*pollLink
	closed bool
}

// NewPoller returns a Poller whose links end when not polled for idle
// (the protocol's heartbeat-loss window) and whose receives are held up
// to hold (0: PollHold).
func NewPoller(idle, hold time.Duration) *Poller {
	if hold <= 0 {
		hold = PollHold
	}
	return &Poller{hold: hold, idle: idle, links: map[string]*pollLink{}}
}

// Close ends every link (a held recv answers 410 at once) and refuses
// later opens: an HTTP server shutting down waits for its requests, and
// after it no request of a link could reach it anyway.
func (p *Poller) Close() {
	p.mu.Lock()
	p.closed = true
	ls := make([]*pollLink, 0, len(p.links))
	for _, l := range p.links {
		ls = append(ls, l)
	}
	p.mu.Unlock()
	for _, l := range ls {
		l.end(errShutdown)
	}
}

// Len is the number of open links.
func (p *Poller) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Open serves an open request (already authenticated; key identifies its
// token): the body is a batch of exactly one text message, the hello,
// which becomes the new link's first message read. serve runs the link
// (in its own goroutine, as long as it lives); the request is answered
// with the first message serve writes (the welcome or the reject) and,
// while the link is open, its id.
func (p *Poller) Open(w http.ResponseWriter, r *http.Request, key string, serve func(Link)) {
	ms, err := readBatch(w, r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(ms) != 1 || ms[0].t != Text {
		http.Error(w, "an open carries exactly one text message: the hello", http.StatusBadRequest)
		return
	}
	l, err := p.add(key, ms[0])
	if err != nil {
		w.Header().Set("Retry-After", "2")
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	go serve(l)
	select {
	case <-l.out.wait():
	case <-l.done:
	case <-r.Context().Done():
		l.end(errGone)
		return
	}
	first := l.out.take(1) // the answer only; the rest waits for a receive
	if len(first) == 0 {
		http.Error(w, "the server ended the link before answering the hello", http.StatusServiceUnavailable)
		return
	}
	l.mu.Lock()
	l.delivered = 1
	l.mu.Unlock()
	select {
	case <-l.done:
	default:
		w.Header().Set(LinkHeader, l.id)
	}
	if err := writeBatch(w, first); err != nil {
		l.end(fmt.Errorf("runnerlink: the answer to the hello was lost: %w", err))
	}
}

// add makes a link bound to key whose first message read is hello.
func (p *Poller) add(key string, hello message) (*pollLink, error) {
	b := make([]byte, 16)
	rand.Read(b)
	done := make(chan struct{})
	l := &pollLink{p: p, id: "lk_" + hex.EncodeToString(b), key: key, in: make(chan message, 1), done: done,
		out: newQueue(done), lastPoll: time.Now(), received: 1}
	l.in <- hello // buffered for one
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errShutdown
	}
	if len(p.links) >= MaxPollLinks {
		return nil, fmt.Errorf("the server holds %d long-poll links", MaxPollLinks)
	}
	p.links[l.id] = l
	l.mu.Lock()
	l.idleTimer = time.AfterFunc(p.idle, l.idleCheck)
	l.mu.Unlock()
	return l, nil
}

// link returns the link r names if it is bound to key.
func (p *Poller) link(r *http.Request, key string) *pollLink {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.links[r.Header.Get(LinkHeader)]
	if l == nil || l.key != key {
		return nil
	}
	return l
}

// Refused ends the link r names when it is bound to key: its token was
// refused (revoked) on this request.
func (p *Poller) Refused(r *http.Request, key string) {
	if l := p.link(r, key); l != nil {
		l.end(errRevoked)
	}
}

// Serve serves a recv, send or close request (already authenticated; key
// identifies its token) on the link it names. A link that does not exist,
// or is bound to another token, is answered 404 and left alone.
func (p *Poller) Serve(w http.ResponseWriter, r *http.Request, key string) {
	l := p.link(r, key)
	if l == nil {
		http.Error(w, "no such long-poll link (it ended, or never was)", http.StatusNotFound)
		return
	}
	seq, err := strconv.ParseUint(r.Header.Get(SeqHeader), 10, 64)
	op := strings.TrimPrefix(r.URL.Path, PollPath)
	switch {
	case op == "close":
		l.end(errGone)
		w.WriteHeader(http.StatusNoContent)
	case err != nil:
		http.Error(w, "a long-poll request needs "+SeqHeader, http.StatusBadRequest)
	case op == "recv":
		l.recv(w, r, seq)
	case op == "send":
		l.send(w, r, seq)
	default:
		http.Error(w, "unknown long-poll operation", http.StatusNotFound)
	}
}

// pollLink is the server's end of one long-poll link.
type pollLink struct {
	p       *Poller
	id, key string
	in      chan message // the runner's messages, to Read
	out     *queue       // the server's messages, to the next recv
	done    chan struct{}

	mu        sync.Mutex
	err       error
	delivered uint64 // messages handed to recv answers
	received  uint64 // messages taken from sends
	polling   bool
	sending   bool
	lastPoll  time.Time
	idleTimer *time.Timer
}

func (l *pollLink) Read(ctx context.Context) (Type, []byte, error) {
	return readFrom(ctx, l.in, l.done, l.cause)
}

func (l *pollLink) Write(ctx context.Context, t Type, b []byte) error {
	return writeTo(ctx, l.out, t, b)
}

func (l *pollLink) Close(string) { l.end(ErrClosed) }

func (l *pollLink) cause() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// end ends the link once: its id is forgotten, Read and Write fail, a
// held recv answers 410.
func (l *pollLink) end(why error) {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	l.err = why
	close(l.done)
	l.idleTimer.Stop()
	l.mu.Unlock()
	l.p.mu.Lock()
	delete(l.p.links, l.id)
	l.p.mu.Unlock()
}

// idleCheck ends the link when no recv is held and none ended within the
// idle window.
func (l *pollLink) idleCheck() {
	l.mu.Lock()
	idle := !l.polling && time.Since(l.lastPoll) >= l.p.idle
	if !idle && !l.polling {
		l.idleTimer.Reset(l.p.idle - time.Since(l.lastPoll))
	}
	l.mu.Unlock()
	if idle {
		l.end(errIdle)
	}
}

// recv answers with the next batch of the server's messages, holding the
// request up to the poller's hold while there are none.
func (l *pollLink) recv(w http.ResponseWriter, r *http.Request, seq uint64) {
	l.mu.Lock()
	if l.polling || seq != l.delivered {
		l.mu.Unlock()
		l.end(errSequence)
		http.Error(w, errSequence.Error(), http.StatusConflict)
		return
	}
	l.polling = true
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.polling = false
		l.lastPoll = time.Now()
		if l.err == nil {
			l.idleTimer.Reset(l.p.idle)
		}
		l.mu.Unlock()
	}()
	hold := time.NewTimer(l.p.hold)
	defer hold.Stop()
	for {
		if ms := l.out.take(MaxBatchMessages); len(ms) > 0 {
			l.mu.Lock()
			l.delivered += uint64(len(ms))
			l.mu.Unlock()
			if err := writeBatch(w, ms); err != nil {
				l.end(fmt.Errorf("runnerlink: a batch to the runner was lost: %w", err))
			}
			return
		}
		select {
		case <-l.out.wait():
		case <-hold.C:
			writeBatch(w, nil)
			return
		case <-l.done:
			http.Error(w, "the link has ended", http.StatusGone)
			return
		case <-r.Context().Done():
			// The runner's end fails its link on any failed receive: a
			// receive cut while held (the runner gone, a proxy giving up)
			// ends the link here too, as a closed WebSocket does.
			l.end(errors.New("runnerlink: the runner's held receive was cut"))
			return
		}
	}
}

// send hands a batch of the runner's messages to Read, in order.
func (l *pollLink) send(w http.ResponseWriter, r *http.Request, seq uint64) {
	l.mu.Lock()
	if l.sending || seq != l.received {
		l.mu.Unlock()
		l.end(errSequence)
		http.Error(w, errSequence.Error(), http.StatusConflict)
		return
	}
	l.sending = true
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.sending = false
		l.mu.Unlock()
	}()
	ms, err := readBatch(w, r)
	if err != nil {
		// As a WebSocket closes on an oversized message.
		l.end(err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, m := range ms {
		select {
		case l.in <- m:
			l.mu.Lock()
			l.received++
			l.mu.Unlock()
		case <-l.done:
			http.Error(w, "the link has ended", http.StatusGone)
			return
		case <-r.Context().Done():
			l.end(errors.New("runnerlink: a batch from the runner was cut"))
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func readBatch(w http.ResponseWriter, r *http.Request) ([]message, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBatchBytes))
	if err != nil {
		return nil, fmt.Errorf("runnerlink: the batch could not be read (at most %d bytes): %v", MaxBatchBytes, err)
	}
	return decodeBatch(b)
}

func writeBatch(w http.ResponseWriter, ms []message) error {
	b := encodeBatch(ms)
	w.Header().Set("Content-Type", BatchContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, err := w.Write(b)
	return err
}
