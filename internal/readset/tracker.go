package readset

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/webcodex/webcodex/internal/pendingcache"
)

// A Tracker records observations behind the response and delivers pending
// notices. Record is asynchronous: a call's observations are queued (at
// most QueueCalls calls) for one writer goroutine, which applies whatever
// is queued in one Store.Record; a full queue drops the call's
// observations and counts them (Dropped) instead of making the call wait.
// A notice therefore reaches the reader's next result only once the
// writer has applied the change that causes it: typically within a
// commit's time, or at the result after. Flush waits for it.
type Tracker struct {
	store Store
	log   *slog.Logger
	queue chan item

	// mu guards closed against a send on the closed queue.
	mu      sync.RWMutex
	closed  bool
	done    chan struct{}
	dropped atomic.Int64
	failed  atomic.Int64

	// clean remembers the sessions (per project) Take found with nothing
	// pending; it is told of the notices this Tracker's writer made and
	// of those another process signals (WatchChanges).
	clean  *pendingcache.Cache
	probes atomic.Int64
}

// item is one queued call's observations, a closed session to forget,
// or a flush marker (flushed set).
type item struct {
	obs     []Observation
	forget  string
	flushed chan struct{}
}

// NewTracker starts a Tracker over store; log receives the writer's
// failures. Close stops it.
func NewTracker(store Store, log *slog.Logger) *Tracker {
	t := &Tracker{store: store, log: log, queue: make(chan item, QueueCalls), done: make(chan struct{}),
		clean: pendingcache.New(MaxCleanScopes)}
	go t.write()
	return t
}

// Record queues one call's observations (at most MaxObservationsPerCall;
// the rest, and any that fail Observation.Validate, are dropped and
// counted) without waiting for the store. It reports false when they
// were dropped: the queue was full or the Tracker closed.
func (t *Tracker) Record(obs []Observation) bool {
	obs = t.valid(obs)
	if len(obs) == 0 {
		return true
	}
	if len(obs) > MaxObservationsPerCall {
		t.dropped.Add(int64(len(obs) - MaxObservationsPerCall))
		obs = obs[:MaxObservationsPerCall]
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		t.dropped.Add(int64(len(obs)))
		return false
	}
	select {
	case t.queue <- item{obs: obs}:
		return true
	default:
		// Logged at the first drop and at every thousandth since.
		if n := t.dropped.Add(int64(len(obs))); n-int64(len(obs)) == 0 || (n-int64(len(obs)))/1000 != n/1000 {
			t.log.Warn("read set: queue full, observations dropped", "dropped_total", n)
		}
		return false
	}
}

// valid returns obs without the observations that fail
// Observation.Validate (counted as dropped); obs itself when all pass.
func (t *Tracker) valid(obs []Observation) []Observation {
	for i, o := range obs {
		if o.Validate() == nil {
			continue
		}
		kept := append(make([]Observation, 0, len(obs)-1), obs[:i]...)
		for _, o := range obs[i+1:] {
			if o.Validate() == nil {
				kept = append(kept, o)
			}
		}
		t.dropped.Add(int64(len(obs) - len(kept)))
		return kept
	}
	return obs
}

// Forget queues the removal of session's read set and notices (it was
// closed), behind the caller like Record; it reports false when the
// queue was full or the Tracker closed (the rows then stay, bounded).
func (t *Tracker) Forget(session string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed || session == "" {
		return false
	}
	select {
	case t.queue <- item{forget: session}:
		return true
	default:
		t.log.Warn("read set: queue full, a closed session's read set is kept", "session", session)
		return false
	}
}

// Flush returns once every observation queued before it was applied (or
// failed), or with ctx's error.
func (t *Tracker) Flush(ctx context.Context) error {
	flushed := make(chan struct{})
	t.mu.RLock()
	if t.closed {
		t.mu.RUnlock()
		return nil
	}
	select {
	case t.queue <- item{flushed: flushed}:
	case <-ctx.Done():
		t.mu.RUnlock()
		return ctx.Err()
	}
	t.mu.RUnlock()
	select {
	case <-flushed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dropped counts the observations dropped so far (full queue, over the
// per-call bound, or after Close); Failed those the store refused.
func (t *Tracker) Dropped() int64 { return t.dropped.Load() }

// Failed counts the observations whose Store.Record failed.
func (t *Tracker) Failed() int64 { return t.failed.Load() }

// Close applies what is queued and stops the writer.
func (t *Tracker) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	close(t.queue)
	t.mu.Unlock()
	<-t.done
	t.clean.Close()
}

// write is the writer goroutine: it gathers every queued call into one
// Store.Record, then releases the flush markers it passed.
func (t *Tracker) write() {
	defer close(t.done)
	for first := range t.queue {
		batch, forget, flushed := t.gather(first)
		if len(batch) > 0 {
			notified, err := t.store.Record(context.Background(), batch)
			if err != nil {
				t.failed.Add(int64(len(batch)))
				t.log.Warn("read set: recording observations failed", "observations", len(batch), "err", err)
			}
			if notified || err != nil {
				// After the commit (an error may hide one): a Take that
				// read the epoch before it probes again.
				t.Changed()
			}
		}
		// After the batch: a forgotten session's own last observations
		// are gone with it.
		if err := t.store.Forget(context.Background(), forget); err != nil {
			t.log.Warn("read set: forgetting closed sessions failed", "sessions", len(forget), "err", err)
		}
		for _, f := range flushed {
			close(f)
		}
	}
}

// gather takes first and whatever else is queued now.
func (t *Tracker) gather(first item) (batch []Observation, forget []string, flushed []chan struct{}) {
	add := func(it item) {
		batch = append(batch, it.obs...)
		if it.forget != "" {
			forget = append(forget, it.forget)
		}
		if it.flushed != nil {
			flushed = append(flushed, it.flushed)
		}
	}
	add(first)
	for range QueueCalls {
		select {
		case it, ok := <-t.queue:
			if !ok {
				return batch, forget, flushed
			}
			add(it)
		default:
			return batch, forget, flushed
		}
	}
	return batch, forget, flushed
}

// Changed tells t that a notice may have been made by another process:
// every session's next Take reads the store again.
func (t *Tracker) Changed() { t.clean.Changed() }

// WatchChanges gives t the signal of notices made by other processes:
// subscribe returns a channel closed at the next such notice (or when
// some may have been missed) and a function that ends the subscription.
// On PostgreSQL it is the listener's topic of readsetpg.Channel. Take
// takes a signal that has arrived in first, without waiting, so a notice
// whose signal arrived before a Take is seen by that Take. Call it before
// t is used.
func (t *Tracker) WatchChanges(subscribe func() (<-chan struct{}, func())) { t.clean.Watch(subscribe) }

// Probes counts the store reads Take made to learn whether anything is
// pending (the reads its cache of clean sessions saved are not counted).
func (t *Tracker) Probes() int64 { return t.probes.Load() }

// Take returns session's changed_since_read block on project, nil when
// nothing is pending: no read at all when Take found nothing there before
// and no notice was made since (as far as this process knows: one made
// by another replica is seen once its notification arrives), else one
// indexed read when nothing is, and otherwise a
// transaction that removes what it delivers, so a notice is delivered
// once even to concurrent calls on several replicas. skip names paths the
// call itself just observed: their notices are removed unshown (the call
// has the file's current digest).
func (t *Tracker) Take(ctx context.Context, session, project string, skip map[string]bool) (*Notices, error) {
	if session == "" {
		return nil, nil
	}
	key := session + "\x00" + project
	clean, epoch := t.clean.Clean(key)
	if clean {
		return nil, nil
	}
	t.probes.Add(1)
	ok, err := t.store.Pending(ctx, session, project)
	if err != nil {
		return nil, err
	}
	if !ok {
		t.clean.Found(key, epoch)
		return nil, nil
	}
	ns, total, err := t.store.Take(ctx, session, project, MaxNoticesPerResult)
	if err != nil {
		return nil, err
	}
	out := &Notices{Files: make([]Notice, 0, len(ns)), Truncated: total > len(ns), Hint: NoticeHint}
	for _, n := range ns {
		if skip[n.Path] {
			total--
			continue
		}
		out.Files = append(out.Files, n)
	}
	out.Total = total
	if len(out.Files) == 0 {
		return nil, nil
	}
	return out, nil
}
