package audit

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Background writer bounds.
const (
	// QueueSize is how many sanitized events may wait for the background
	// writer. When the queue is full, Submit writes synchronously instead:
	// the caller slows down, nothing is dropped.
	QueueSize = 4096
	// MaxWriteBatch is the most queued events written in one transaction.
	MaxWriteBatch = 256
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
	w.queue, w.done = make(chan Event, QueueSize), make(chan struct{})
	go s.drain(w.queue, w.done)
}

// Submit sanitizes ev for session id now (nothing unsanitized is held)
// and hands it to the background writer, which commits queued events in
// batches shortly after. Without a running writer, or when the queue is
// full, it writes synchronously like Record. Events accepted before Stop
// are all written by Stop; an event still queued when the process is
// killed is lost (the call it describes has already been answered).
func (s *Service) Submit(ctx context.Context, id string, ev Event, attr Attribution) error {
	ev, err := s.prepare(id, ev, attr)
	if err != nil {
		return err
	}
	w := &s.writer
	w.mu.RLock()
	if w.running {
		select {
		case w.queue <- ev:
			w.mu.RUnlock()
			return nil
		default:
		}
	}
	w.mu.RUnlock()
	if err := s.store.AppendEvents(ctx, []Event{ev}, MaxEventsPerSession, s.now()); err != nil {
		s.failures.Add(1)
		return err
	}
	return nil
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
	done := w.done
	w.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drain writes queued events in batches until queue is closed and empty.
func (s *Service) drain(queue <-chan Event, done chan<- struct{}) {
	defer close(done)
	batch := make([]Event, 0, MaxWriteBatch)
	for ev := range queue {
		batch = append(batch[:0], ev)
	fill:
		for len(batch) < MaxWriteBatch {
			select {
			case ev, ok := <-queue:
				if !ok {
					break fill
				}
				batch = append(batch, ev)
			default:
				break fill
			}
		}
		s.writeBatch(batch)
	}
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
