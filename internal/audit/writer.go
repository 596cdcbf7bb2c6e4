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
	// slows down to the writer's pace, which keeps writes batched) until
	// its context ends, and then writes synchronously: nothing is dropped.
	QueueSize = 4096
	// MaxWriteBatch is the most queued events written in one transaction.
	MaxWriteBatch = 256
	// BatchWindow is how long the writer collects events after the first
	// one of a batch before committing (unless the batch fills first): a
	// commit costs an fsync, so under load one commit carries many rows,
	// and an audit row is durable at most this much later than without.
	BatchWindow = 5 * time.Millisecond
	// writeTimeout bounds one background transaction.
	writeTimeout = 30 * time.Second
)

// writer is the state of the background writer.
type writer struct {
	mu      sync.RWMutex // guards running against sends on queue
	running bool
	queue   chan Event
	done    chan struct{}
	log     *slog.Logger
	// need is how many queued events complete the batch the writer is
	// collecting (0: it is not waiting); a Submit that queues the
	// needed event wakes it through full.
	need atomic.Int64
	full chan struct{}
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
	w.running, w.log = true, log
	w.queue, w.done, w.full = make(chan Event, QueueSize), make(chan struct{}), make(chan struct{}, 1)
	go s.drain(w.queue, w.done)
}

// Submit sanitizes ev for session id now (nothing unsanitized is held)
// and hands it to the background writer, which commits queued events in
// batches shortly after. When the queue is full it waits up to wait for
// room; without a running writer, or when the wait runs out, it writes
// synchronously like Record. ctx's cancellation is ignored (the call the
// event describes is over); its values are kept. Events accepted before
// Stop are all written by Stop; an event still queued when the process
// is killed is lost (the call it describes has already been answered).
func (s *Service) Submit(ctx context.Context, wait time.Duration, id string, ev Event, attr Attribution) error {
	ev, err := s.prepare(id, ev, attr)
	if err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	if s.enqueue(ctx, wait, ev) {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	if err := s.store.AppendEvents(wctx, []Event{ev}, MaxEventsPerSession, s.now()); err != nil {
		s.failures.Add(1)
		return err
	}
	return nil
}

// enqueue queues ev for the running writer, waiting up to wait for room;
// it reports whether ev was queued. The timer exists only when the queue
// is full.
func (s *Service) enqueue(ctx context.Context, wait time.Duration, ev Event) bool {
	w := &s.writer
	w.mu.RLock()
	defer w.mu.RUnlock()
	if !w.running {
		return false
	}
	select {
	case w.queue <- ev:
		w.queued()
		return true
	default:
	}
	if wait <= 0 {
		return false
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	select {
	case w.queue <- ev:
		w.queued()
		return true
	case <-wctx.Done():
		return false
	}
}

// Stop stops accepting queued events and waits until every queued event
// is written, or ctx ends. Later Submits write synchronously.
func (s *Service) Stop(ctx context.Context) error {
	w := &s.writer
	w.mu.Lock()
	if !w.running {
		w.mu.Unlock()
		return nil
	}
	w.running = false
	close(w.queue)
	select {
	case w.full <- struct{}{}: // end a collecting writer's wait now
	default:
	}
	done := w.done
	w.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// queued wakes the writer when the event just queued completes its batch
// (called with mu read-locked, after a send on queue).
func (w *writer) queued() {
	if n := w.need.Load(); n > 0 && int64(len(w.queue)) >= n {
		select {
		case w.full <- struct{}{}:
		default: // already signalled
		}
	}
}

// drain writes queued events in batches until queue is closed and empty:
// each batch is what arrives within BatchWindow of its first event, at
// most MaxWriteBatch events. While collecting, it sleeps until the window
// ends or the queue holds the rest of a full batch, instead of waking for
// every event.
func (s *Service) drain(queue <-chan Event, done chan<- struct{}) {
	defer close(done)
	w := &s.writer
	batch := make([]Event, 0, MaxWriteBatch)
	window := time.NewTimer(BatchWindow)
	for ev := range queue {
		batch = append(batch[:0], ev)
		window.Reset(BatchWindow)
		for {
			var closed bool
			if batch, closed = takeQueued(queue, batch); closed || len(batch) == MaxWriteBatch {
				break
			}
			// The queue is empty: sleep until the window ends or Submit
			// queues what completes the batch. Setting need before looking
			// at the queue again means that either that look or the
			// Submit that queues the completing event sees the other.
			need := int64(MaxWriteBatch - len(batch))
			w.need.Store(need)
			if int64(len(queue)) >= need {
				w.need.Store(0)
				continue
			}
			expired := false
			select {
			case <-w.full:
			case <-window.C:
				expired = true
			}
			w.need.Store(0)
			if expired {
				batch, _ = takeQueued(queue, batch) // what arrived up to now
				break
			}
		}
		s.writeBatch(batch)
	}
}

// takeQueued appends the events queued now to batch, up to MaxWriteBatch,
// without waiting; closed reports that the queue is closed and empty.
func takeQueued(queue <-chan Event, batch []Event) (_ []Event, closed bool) {
	for len(batch) < MaxWriteBatch {
		select {
		case ev, ok := <-queue:
			if !ok {
				return batch, true
			}
			batch = append(batch, ev)
		default:
			return batch, false
		}
	}
	return batch, false
}

// writeBatch commits batch in one transaction; when that fails it retries
// event by event so that one bad event costs only itself.
func (s *Service) writeBatch(batch []Event) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	err := s.store.AppendEvents(ctx, batch, MaxEventsPerSession, s.now())
	if err == nil {
		return
	}
	if len(batch) > 1 {
		for _, ev := range batch {
			if err := s.store.AppendEvents(ctx, []Event{ev}, MaxEventsPerSession, s.now()); err != nil {
				s.failures.Add(1)
				s.writer.log.Warn("audit: write event", "session", ev.SessionID, "err", err)
			}
		}
		return
	}
	s.failures.Add(1)
	s.writer.log.Warn("audit: write event", "session", batch[0].SessionID, "err", err)
}
