package runnerlink

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/runnerwire"
)

// Bounds of the long-poll transport.
const (
	// PollHold bounds how long the server holds a receive with nothing to
	// deliver before it answers with an empty batch: under the 60 s idle
	// timeout of common proxies and load balancers.
	PollHold = 25 * time.Second
	// PollTimeout bounds one receive on the runner's side: longer than
	// PollHold, so the server's empty answer comes first.
	PollTimeout = PollHold + 15*time.Second
	// SendTimeout bounds one send (or open) exchange on the runner's side.
	SendTimeout = 30 * time.Second
	// MaxBatchMessages bounds the messages of one batch, either way.
	MaxBatchMessages = 64
	// MaxBatchBytes bounds one batch's body, either way: at least 15
	// messages of MaxFrameBytes.
	MaxBatchBytes = 1 << 20
	// MaxQueuedBytes bounds the messages a link holds for the next
	// exchange, per direction; a Write waits while it is full.
	MaxQueuedBytes = 4 << 20
	// MaxPollLinks bounds the long-poll links a server holds at once.
	MaxPollLinks = 512
)

// A batch is the body of a long-poll exchange: its messages in order, each
// as
//
//	type (1: 't' text, 'b' binary) | length (4, big endian) | bytes
//
// An empty body is an empty batch.
const messageHeaderBytes = 1 + 4

// BatchContentType is the media type of a batch.
const BatchContentType = "application/vnd.webcodex.runner-batch"

type message struct {
	t Type
	b []byte
}

func (m message) size() int { return messageHeaderBytes + len(m.b) }

func encodeBatch(ms []message) []byte {
	n := 0
	for _, m := range ms {
		n += m.size()
	}
	out := make([]byte, 0, n)
	for _, m := range ms {
		t := byte('t')
		if m.t == Binary {
			t = 'b'
		}
		out = append(out, t)
		out = binary.BigEndian.AppendUint32(out, uint32(len(m.b)))
		out = append(out, m.b...)
	}
	return out
}

// decodeBatch parses a batch, refusing one over MaxBatchBytes or
// MaxBatchMessages, a message over MaxFrameBytes, an unknown type and a
// truncated message.
func decodeBatch(b []byte) ([]message, error) {
	if len(b) > MaxBatchBytes {
		return nil, fmt.Errorf("runnerlink: a batch of %d bytes is over the %d-byte bound", len(b), MaxBatchBytes)
	}
	var ms []message
	for len(b) > 0 {
		if len(ms) == MaxBatchMessages {
			return nil, fmt.Errorf("runnerlink: a batch of more than %d messages", MaxBatchMessages)
		}
		if len(b) < messageHeaderBytes {
			return nil, fmt.Errorf("runnerlink: a truncated message header in a batch")
		}
		var t Type
		switch b[0] {
		case 't':
			t = Text
		case 'b':
			t = Binary
		default:
			return nil, fmt.Errorf("runnerlink: a message of unknown type %q in a batch", b[0])
		}
		n := binary.BigEndian.Uint32(b[1:messageHeaderBytes])
		if n > runnerwire.MaxFrameBytes {
			return nil, fmt.Errorf("%w (%d bytes in a batch)", ErrTooLarge, n)
		}
		b = b[messageHeaderBytes:]
		if uint32(len(b)) < n {
			return nil, fmt.Errorf("runnerlink: a truncated message in a batch")
		}
		ms = append(ms, message{t: t, b: b[:n:n]})
		b = b[n:]
	}
	return ms, nil
}

// queue holds the messages of one direction of a long-poll link until an
// exchange takes them, at most MaxQueuedBytes (one message always fits an
// empty queue).
type queue struct {
	mu      sync.Mutex
	msgs    []message
	bytes   int
	changed chan struct{} // closed and replaced at every change
	done    <-chan struct{}
}

func newQueue(done <-chan struct{}) *queue {
	return &queue{changed: make(chan struct{}), done: done}
}

// broadcast wakes every waiter; q.mu is held.
func (q *queue) broadcast() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// put appends m, waiting while the queue is full.
func (q *queue) put(ctx context.Context, m message) error {
	for {
		select {
		case <-q.done:
			return ErrClosed
		default:
		}
		q.mu.Lock()
		if q.bytes == 0 || q.bytes+m.size() <= MaxQueuedBytes {
			q.msgs = append(q.msgs, m)
			q.bytes += m.size()
			q.broadcast()
			q.mu.Unlock()
			return nil
		}
		wait := q.changed
		q.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		case <-q.done:
			return ErrClosed
		}
	}
}

// take removes the first messages, at most most, that fit one batch (nil
// when the queue is empty).
func (q *queue) take(most int) []message {
	q.mu.Lock()
	defer q.mu.Unlock()
	n, size := 0, 0
	for n < len(q.msgs) && n < most && size+q.msgs[n].size() <= MaxBatchBytes {
		size += q.msgs[n].size()
		n++
	}
	if n == 0 {
		return nil
	}
	out := q.msgs[:n:n]
	q.msgs = q.msgs[n:]
	q.bytes -= size
	q.broadcast()
	return out
}

// wait returns a channel closed at the queue's next change.
func (q *queue) wait() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.msgs) > 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	return q.changed
}

// readFrom is a long-poll end's Read: the next message of in (one already
// there before the link's end), else the cause of the end once done is
// closed.
func readFrom(ctx context.Context, in <-chan message, done <-chan struct{}, cause func() error) (Type, []byte, error) {
	select {
	case m := <-in:
		return m.t, m.b, nil
	default:
	}
	select {
	case m := <-in:
		return m.t, m.b, nil
	case <-done:
		return 0, nil, cause()
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	}
}

// writeTo is a long-poll end's Write: b (copied) queued on out for the
// next exchange.
func writeTo(ctx context.Context, out *queue, t Type, b []byte) error {
	if len(b) > runnerwire.MaxFrameBytes {
		return ErrTooLarge
	}
	return out.put(ctx, message{t: t, b: bytes.Clone(b)})
}
