package audit

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Background writer bounds.
const (
	// QueueSize is how many sanitized events may wait for the background
	// writer. When the queue is full, Submit waits for room (the caller
	// slows down to the writer's pace) until its wait runs out, and then
	// writes synchronously: nothing is dropped.
	QueueSize = 4096
	// MaxWriteBatch is the most queued events written in one transaction.
	MaxWriteBatch = 256
	// writeTimeout bounds one background transaction.
	writeTimeout = 30 * time.Second
)

// pending is a queued event and where its commit result is delivered.
type pending struct {
	ev   Event
	done chan error // buffered: the writer never blocks on it
}

// writer is the state of the background writer.
type writer struct {
	mu      sync.RWMutex // guards running against sends on queue
	running bool
	queue   chan pending
	done    chan struct{}
	log     atomic.Pointer[slog.Logger]
}

// Start starts the background writer used by Submit. Write failures are
// counted (WriteFailures) and logged to log (nil: not logged). Start
// after Start is a no-op.
func (s *Service) Start(log *slog.Logger) {
	w := &s.writer
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running {
		return
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w.running = true
	w.log.Store(log)
	w.queue, w.done = make(chan pending, QueueSize), make(chan struct{})
	go s.drain(w.queue, w.done)
}

// Submit sanitizes ev for session id now (nothing unsanitized is held)
// and returns when it is durable, like Record, but commits it in one
// transaction with every event submitted meanwhile (group commit): the
// background writer takes everything queued, commits it, and answers
// each waiting Submit, so under concurrency one commit (one fsync)
// carries many events and no caller waits for a timer. When the queue is
// full it waits up to wait for room; without a running writer, or when
// the wait runs out, it writes synchronously like Record. ctx's
// cancellation is ignored (the call the event describes is over, and its
// record must still be written); its values are kept. A failure is
// counted in WriteFailures, logged, and returned; the caller must never
// let it change the audited call's outcome.
func (s *Service) Submit(ctx context.Context, wait time.Duration, id string, ev Event, attr Attribution) error {
	ev, err := s.prepare(id, ev, attr)
	if err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	if done := s.enqueue(ctx, wait, ev); done != nil {
		return <-done
	}
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	if err := s.store.AppendEvents(wctx, []Event{ev}, MaxEventsPerSession, s.now()); err != nil {
		s.failed(ev, err)
		return err
	}
	return nil
}

// enqueue queues ev for the running writer, waiting up to wait for room;
// it returns the channel that will carry ev's commit result, or nil when
// ev was not queued. The timer exists only when the queue is full.
func (s *Service) enqueue(ctx context.Context, wait time.Duration, ev Event) <-chan error {
	w := &s.writer
	w.mu.RLock()
	defer w.mu.RUnlock()
	if !w.running {
		return nil
	}
	p := pending{ev: ev, done: make(chan error, 1)}
	select {
	case w.queue <- p:
		return p.done
	default:
	}
	if wait <= 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	select {
	case w.queue <- p:
		return p.done
	case <-wctx.Done():
		return nil
	}
}

// Stop stops accepting queued events and waits until every queued event
// is written (and its Submit answered), or ctx ends. Later Submits write
// synchronously.
func (s *Service) Stop(ctx context.Context) error {
	w := &s.writer
	w.mu.Lock()
	if !w.running {
		w.mu.Unlock()
		return nil
	}
	w.running = false
	close(w.queue)
	done := w.done
	w.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drain writes queued events until queue is closed and empty: each batch
// is everything queued when the writer is ready (at most MaxWriteBatch),
// so events that arrive while one batch commits form the next one.
func (s *Service) drain(queue <-chan pending, done chan<- struct{}) {
	defer close(done)
	batch := make([]pending, 0, MaxWriteBatch)
	evs := make([]Event, 0, MaxWriteBatch)
	for p := range queue {
		batch = takeQueued(queue, append(batch[:0], p))
		evs = evs[:0]
		for _, p := range batch {
			evs = append(evs, p.ev)
		}
		s.writeBatch(batch, evs)
		clear(batch) // drop the events (and channels) until the next batch
		clear(evs)
	}
}

// takeQueued appends the events queued now to batch, up to MaxWriteBatch,
// without waiting.
func takeQueued(queue <-chan pending, batch []pending) []pending {
	for len(batch) < MaxWriteBatch {
		select {
		case p, ok := <-queue:
			if !ok {
				return batch
			}
			batch = append(batch, p)
		default:
			return batch
		}
	}
	return batch
}

// writeBatch commits evs (the events of batch) in one transaction and
// answers every Submit of batch; when the transaction fails it retries
// event by event so that one bad event costs only itself.
func (s *Service) writeBatch(batch []pending, evs []Event) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	err := s.store.AppendEvents(ctx, evs, MaxEventsPerSession, s.now())
	if err == nil || len(batch) == 1 {
		if err != nil {
			s.failed(batch[0].ev, err)
		}
		for _, p := range batch {
			p.done <- err
		}
		return
	}
	for _, p := range batch {
		err := s.store.AppendEvents(ctx, []Event{p.ev}, MaxEventsPerSession, s.now())
		if err != nil {
			s.failed(p.ev, err)
		}
		p.done <- err
	}
}

// failed counts and logs an event that could not be written.
func (s *Service) failed(ev Event, err error) {
	s.failures.Add(1)
	if log := s.writer.log.Load(); log != nil {
		log.Warn("audit: write event", "session", ev.SessionID, "err", err)
	}
}
