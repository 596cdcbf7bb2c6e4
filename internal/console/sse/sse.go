// Package sse serves the console's live parts as server-sent events, with
// bounds: a [Limiter] caps the streams open at once per console session and
// in all, hands each stream a context that ends when the client goes away,
// when the stream has lived MaxLifetime, or when the server shuts down
// ([Limiter.Close]), and waits for every stream to end. A [Stream] writes
// events with a write deadline, so a client that stops reading cannot hold
// a handler.
package sse

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

// Bounds of the console's streams.
const (
	// PerSession is how many streams one console session may hold open
	// (a page has at most a couple; more means stale tabs).
	PerSession = 4
	// MaxStreams is how many streams the server holds open in all.
	MaxStreams = 64
	// MaxLifetime ends a stream; the browser's EventSource reconnects.
	MaxLifetime = 30 * time.Minute
	// WriteTimeout bounds the write of one event to the client.
	WriteTimeout = 10 * time.Second
	// Heartbeat is how often an idle stream writes a comment, so that a
	// client that went away is noticed by a failing write.
	Heartbeat = 20 * time.Second
)

// Limiter bounds the open streams. The zero value is not usable; call
// NewLimiter.
type Limiter struct {
	perKey, total int
	base          context.Context
	stop          context.CancelFunc

	mu     sync.Mutex
	by     map[string]int
	open   int
	closed bool
	wg     sync.WaitGroup
}

// NewLimiter returns a limiter allowing perKey streams per key (a console
// session) and total in all.
func NewLimiter(perKey, total int) *Limiter {
	base, stop := context.WithCancel(context.Background())
	return &Limiter{perKey: perKey, total: total, base: base, stop: stop, by: map[string]int{}}
}

// Acquire takes a stream slot for key. The returned context ends when
// parent does (the client went away), after MaxLifetime, or at Close; the
// caller must call release when the stream ends. At the bound it fails
// with failure.TooManyRequests, after Close with failure.Unavailable.
func (l *Limiter) Acquire(parent context.Context, key string) (ctx context.Context, release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return nil, nil, failure.New(failure.Unavailable, "the server is shutting down")
	case l.by[key] >= l.perKey:
		return nil, nil, failure.New(failure.TooManyRequests, "this console session already has %d live streams open; close a tab", l.perKey)
	case l.open >= l.total:
		return nil, nil, failure.New(failure.TooManyRequests, "the server already has %d live streams open", l.total)
	}
	l.by[key]++
	l.open++
	l.wg.Add(1)
	ctx, cancel := context.WithTimeout(parent, MaxLifetime)
	unhook := context.AfterFunc(l.base, cancel)
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			unhook()
			cancel()
			l.mu.Lock()
			if l.by[key]--; l.by[key] == 0 {
				delete(l.by, key)
			}
			l.open--
			l.mu.Unlock()
			l.wg.Done()
		})
	}, nil
}

// Open reports how many streams are open.
func (l *Limiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Close ends every open stream's context, refuses new ones and waits until
// every stream was released or ctx ends. Register it with
// http.Server.RegisterOnShutdown: Shutdown waits for handlers, and a
// stream's handler would otherwise never return.
func (l *Limiter) Close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.stop()
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return failure.Wrap(failure.TimedOut, ctx.Err(), "%d live streams did not end", l.Open())
	}
}

// Stream writes server-sent events to one response.
type Stream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// Start sends the event-stream headers (status 200) and returns the
// stream.
func Start(w http.ResponseWriter) (*Stream, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &Stream{w: w, rc: http.NewResponseController(w)}
	return s, s.flush()
}

// Event writes one event named name (letters, digits, '_' and '-'; empty:
// the default "message") whose data is data; each line of data becomes a
// data: line, so data may hold newlines. Carriage returns are dropped (the
// protocol would read them as line ends).
func (s *Stream) Event(name, data string) error {
	var b strings.Builder
	if name != "" {
		if strings.ContainsAny(name, "\r\n:") {
			return failure.New(failure.Internal, "event name %q", name)
		}
		fmt.Fprintf(&b, "event: %s\n", name)
	}
	for line := range strings.SplitSeq(strings.ReplaceAll(data, "\r", ""), "\n") {
		b.WriteString("data: ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return s.write(b.String())
}

// Comment writes a comment line (ignored by clients; a heartbeat).
func (s *Stream) Comment() error { return s.write(": keep-alive\n\n") }

func (s *Stream) write(p string) error {
	if err := s.rc.SetWriteDeadline(time.Now().Add(WriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if _, err := s.w.Write([]byte(p)); err != nil {
		return err
	}
	return s.flush()
}

func (s *Stream) flush() error {
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}
