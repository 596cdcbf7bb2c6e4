package audit

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

// Group commit bounds.
const (
	// QueueSize is how many sanitized events may wait while a batch is
	// written. When the queue is full, Submit waits for room (the caller
	// slows down to the writer's pace) until its wait runs out, and then
	// writes synchronously: nothing is dropped.
	QueueSize = 4096
	// MaxWriteBatch is the most queued events written in one transaction.
	MaxWriteBatch = 256
	// writeTimeout bounds one group commit transaction.
	writeTimeout = 30 * time.Second
)

// pending is an event waiting to be written and where it learns its
// turn: its commit result, or a batch it must write itself.
type pending struct {
	ev   Event
	wake chan turn // buffered: the one sender never blocks on it
}

// turn is what a waiting Submit is told: the commit result of its event,
// or (lead non-nil) that it writes the batch lead, which holds its event.
type turn struct {
	err  error
	lead []*pending
}

// writer is the state of the group commit. There is no writer goroutine:
// the Submit that finds no batch being written writes its own event at
// once (one hand-off, to the store's connection, instead of two more
// through a queue); the Submits that arrive meanwhile queue, and when the
// batch is committed the writing Submit hands everything queued (at most
// MaxWriteBatch) to the first of them, which writes it as one batch and
// passes the turn on in the same way.
type writer struct {
	mu      sync.Mutex
	running bool
	// busy is true while some Submit writes a batch; queue is empty
	// whenever busy is false.
	busy  bool
	queue []*pending
	// room is closed and replaced whenever queued events are taken, to
	// wake the Submits waiting for room in a full queue.
	room chan struct{}
	// idle, when a Stop waits, is closed once no batch is being written.
	idle chan struct{}
	log  atomic.Pointer[slog.Logger]
}

// Start starts the group commit used by Submit. Write failures are
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
	if w.room == nil {
		w.room = make(chan struct{})
	}
}

// Submit sanitizes ev for session id now (nothing unsanitized is held)
// and returns when it is durable, like Record, but commits it in one
// transaction with every event submitted meanwhile (group commit): when
// no batch is being written, Submit writes its event itself at once;
// otherwise it queues, and everything queued while a batch commits is
// committed next as one batch, so under concurrency one commit (one
// fsync) carries many events and no caller waits for a timer. At most
// QueueSize events wait; when the queue is full Submit waits up to wait
// for room; without Start (or after Stop), or when the wait runs out, it
// writes synchronously like Record. ctx's cancellation is ignored (the
// call the event describes is over, and its record must still be
// written); its values are kept. A failure is counted in WriteFailures,
// logged, and returned; the caller must never let it change the audited
// call's outcome.
func (s *Service) Submit(ctx context.Context, wait time.Duration, id string, ev Event, attr Attribution) error {
	ev, err := s.prepare(id, ev, attr)
	if err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	p, lead := s.enqueue(ctx, wait, ev)
	switch {
	case lead:
		return s.lead([]*pending{p})
	case p != nil:
		t := <-p.wake
		if t.lead != nil {
			return s.lead(t.lead)
		}
		return t.err
	}
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	if err := s.store.AppendEvents(wctx, []Event{ev}, MaxEventsPerSession, s.now()); err != nil {
		s.failed(ev, err)
		return err
	}
	return nil
}

// enqueue takes the turn for ev when no batch is being written (lead:
// the caller writes ev now), else queues ev, waiting up to wait for room
// in a full queue. It returns nil when ev is neither (no group commit
// running, or no room in time): the caller writes ev synchronously. The
// timer exists only when the queue is full.
func (s *Service) enqueue(ctx context.Context, wait time.Duration, ev Event) (p *pending, lead bool) {
	w := &s.writer
	var timeout <-chan struct{}
	w.mu.Lock()
	for {
		if !w.running {
			w.mu.Unlock()
			return nil, false
		}
		if !w.busy {
			w.busy = true
			w.mu.Unlock()
			return &pending{ev: ev}, true
		}
		if len(w.queue) < QueueSize {
			p := &pending{ev: ev, wake: make(chan turn, 1)}
			w.queue = append(w.queue, p)
			w.mu.Unlock()
			return p, false
		}
		room := w.room
		w.mu.Unlock()
		if wait <= 0 {
			return nil, false
		}
		if timeout == nil {
			wctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			timeout = wctx.Done()
		}
		select {
		case <-room:
		case <-timeout:
			return nil, false
		}
		w.mu.Lock()
	}
}

// lead writes batch (whose first event is the caller's) as one
// transaction, answers every other Submit of it, passes the turn to the
// first queued Submit with everything queued (at most MaxWriteBatch), or
// ends the group's turn when nothing is queued, and returns the caller's
// own result.
func (s *Service) lead(batch []*pending) error {
	errs := s.writeBatch(batch)
	for i, p := range batch[1:] {
		p.wake <- turn{err: errs[i+1]}
	}
	w := &s.writer
	w.mu.Lock()
	if len(w.queue) == 0 {
		w.busy = false
		if w.idle != nil {
			close(w.idle)
			w.idle = nil
		}
		w.mu.Unlock()
		return errs[0]
	}
	n, queued := min(len(w.queue), MaxWriteBatch), len(w.queue)
	next := slices.Clone(w.queue[:n])
	w.queue = append(w.queue[:0], w.queue[n:]...)
	clear(w.queue[len(w.queue):queued]) // the old tail's pointers
	close(w.room)
	w.room = make(chan struct{})
	w.mu.Unlock()
	next[0].wake <- turn{lead: next}
	return errs[0]
}

// Stop ends the group commit: later Submits write synchronously. It
// waits until every queued event is written (and its Submit answered),
// or ctx ends.
func (s *Service) Stop(ctx context.Context) error {
	w := &s.writer
	w.mu.Lock()
	if !w.running {
		w.mu.Unlock()
		return nil
	}
	w.running = false
	if !w.busy {
		w.mu.Unlock()
		return nil
	}
	if w.idle == nil {
		w.idle = make(chan struct{})
	}
	idle := w.idle
	w.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeBatch commits the events of batch in one transaction and returns
// each one's result; when the transaction fails it retries event by event
// so that one bad event costs only itself. A panic of the store is every
// unanswered event's failure, so that the turn is still passed on (a
// request goroutine writes the batch, and its panic is recovered by the
// HTTP server).
func (s *Service) writeBatch(batch []*pending) (errs []error) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	errs = make([]error, len(batch))
	decided := 0 // errs[:decided] are the events' results
	defer func() {
		if p := recover(); p != nil {
			for i := decided; i < len(errs); i++ {
				errs[i] = failure.New(failure.Internal, "audit: writing events panicked: %v", p)
				s.failed(batch[i].ev, errs[i])
			}
		}
	}()
	evs := make([]Event, len(batch))
	for i, p := range batch {
		evs[i] = p.ev
	}
	err := s.store.AppendEvents(ctx, evs, MaxEventsPerSession, s.now())
	if err == nil || len(batch) == 1 {
		if err != nil {
			s.failed(batch[0].ev, err)
		}
		for i := range errs {
			errs[i] = err
		}
		decided = len(errs)
		return errs
	}
	for i, p := range batch {
		if errs[i] = s.store.AppendEvents(ctx, []Event{p.ev}, MaxEventsPerSession, s.now()); errs[i] != nil {
			s.failed(p.ev, errs[i])
		}
		decided = i + 1
	}
	return errs
}

// failed counts and logs an event that could not be written.
func (s *Service) failed(ev Event, err error) {
	s.failures.Add(1)
	if log := s.writer.log.Load(); log != nil {
		log.Warn("audit: write event", "session", ev.SessionID, "err", err)
	}
}
