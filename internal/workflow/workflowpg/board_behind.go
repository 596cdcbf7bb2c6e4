package workflowpg

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/workflow"
)

// Bounds of the behind board writes (attention projection facts, first
// ACKs, assignment fetches).
const (
	// BehindQueueCapacity bounds the behind writes queued and not yet
	// taken by the writer; past it UpdateBoardBehind waits for room until
	// its context ends, then fails with failure.Unavailable.
	BehindQueueCapacity = 1024
	// BehindBatchMax bounds the behind writes one transaction carries:
	// the writer takes what is queued, up to this many, and commits them
	// together, so a burst costs one commit, not one each.
	BehindBatchMax = 64
)

type behindJob struct {
	id    string
	fn    func(workflow.BoardWriter) error
	done  func(error)
	ended chan struct{} // closed once its batch ended
	flush bool          // a marker: ended once every job before it has
}

// behindQueue is a Board's writer of behind writes: one goroutine taking
// batches from a queue of BehindQueueCapacity, in order.
type behindQueue struct {
	b     *Board
	queue chan *behindJob
	stop  chan struct{}
	done  chan struct{}

	mu     sync.RWMutex // held shared while queueing, exclusively by close
	closed bool

	// order is held while a job is queued and recorded in pending, so
	// that pending holds each session's newest job.
	order   sync.Mutex
	pmu     sync.Mutex
	pending map[string]chan struct{} // session id → newest job's ended
	// onWait, when not nil (a test's), is called by a reader about to
	// wait for a pending behind write.
	onWait func(id string)
	// commits and writes count the transactions run and the writes they
	// carried (BehindStats).
	commits, writes atomic.Int64
}

func newBehindQueue(b *Board) *behindQueue {
	q := &behindQueue{b: b, queue: make(chan *behindJob, BehindQueueCapacity), stop: make(chan struct{}),
		done: make(chan struct{}), pending: map[string]chan struct{}{}}
	go q.writer()
	return q
}

// UpdateBoardBehind implements workflow.BoardStore: fn is queued and runs
// in a later batch, each function in a savepoint of the batch's
// transaction holding its board's row locked (an error of fn rolls back
// only fn), and done receives its outcome once the batch ended. ctx
// bounds only the wait for room in the queue. A batch commits durably:
// this driver never lowers synchronous_commit.
func (b *Board) UpdateBoardBehind(ctx context.Context, id string, fn func(workflow.BoardWriter) error, done func(error)) error {
	return b.behind.enqueue(ctx, &behindJob{id: id, fn: fn, done: done, ended: make(chan struct{})})
}

// Flush waits until every behind write queued before it has ended.
func (b *Board) Flush(ctx context.Context) error {
	j := &behindJob{flush: true, ended: make(chan struct{})}
	if err := b.behind.enqueue(ctx, j); err != nil {
		return err
	}
	select {
	case <-j.ended:
		return nil
	case <-ctx.Done():
		return failure.Wrap(failure.Interrupted, ctx.Err(), "waiting for the board's behind writes")
	}
}

func (q *behindQueue) enqueue(ctx context.Context, j *behindJob) error {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return failure.New(failure.Unavailable, "the board store is closed")
	}
	q.order.Lock()
	defer q.order.Unlock()
	select {
	case q.queue <- j:
	case <-ctx.Done():
		return failure.Wrap(failure.Unavailable, ctx.Err(), "the board's queue of behind writes is full")
	}
	if !j.flush {
		q.pmu.Lock()
		q.pending[j.id] = j.ended
		q.pmu.Unlock()
	}
	return nil
}

// wait returns once the newest behind write queued for session id has
// ended (at once when none is pending), or when ctx ends.
func (q *behindQueue) wait(ctx context.Context, id string) error {
	q.pmu.Lock()
	ch := q.pending[id]
	q.pmu.Unlock()
	if ch == nil {
		return nil
	}
	if q.onWait != nil {
		q.onWait(id)
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (q *behindQueue) close() {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed = true
	q.mu.Unlock()
	close(q.stop)
	<-q.done
}

func (q *behindQueue) writer() {
	defer close(q.done)
	for {
		select {
		case j := <-q.queue:
			q.run(q.gather(j))
		case <-q.stop:
			for {
				select {
				case j := <-q.queue:
					q.run(q.gather(j))
				default:
					return
				}
			}
		}
	}
}

// gather is first and the jobs queued behind it, up to BehindBatchMax.
func (q *behindQueue) gather(first *behindJob) []*behindJob {
	batch := []*behindJob{first}
	for len(batch) < BehindBatchMax {
		select {
		case j := <-q.queue:
			batch = append(batch, j)
		default:
			return batch
		}
	}
	return batch
}

// run writes one batch in one transaction. Its jobs lock their boards in
// session id order (each session's jobs keep their queue order), so two
// replicas' batches never wait for each other in a cycle.
func (q *behindQueue) run(batch []*behindJob) {
	var writes []*behindJob
	for _, j := range batch {
		if !j.flush {
			writes = append(writes, j)
		}
	}
	slices.SortStableFunc(writes, func(a, b *behindJob) int { return strings.Compare(a.id, b.id) })
	errs := make([]error, len(writes))
	var err error
	if len(writes) > 0 {
		q.commits.Add(1)
		q.writes.Add(int64(len(writes)))
		err = q.b.db.Tx(context.Background(), func(ctx context.Context, tx pgx.Tx) error {
			for i, j := range writes {
				errs[i] = nil
				if err := runJob(ctx, tx, j); err != nil {
					if _, own := err.(jobError); !own {
						return err
					}
					errs[i] = err.(jobError).err
				}
			}
			return nil
		})
	}
	for i, j := range writes {
		e := err
		if e == nil {
			e = errs[i]
		}
		if j.done != nil {
			j.done(boardErr(e))
		}
		close(j.ended)
		q.pmu.Lock()
		if q.pending[j.id] == j.ended {
			delete(q.pending, j.id)
		}
		q.pmu.Unlock()
	}
	for _, j := range batch {
		if j.flush {
			close(j.ended)
		}
	}
}

// jobError is a behind function's own failure, rolled back to its
// savepoint; any other error of runJob ends the whole batch.
type jobError struct{ err error }

func (e jobError) Error() string { return e.err.Error() }

// runJob runs j in a savepoint of tx holding its board locked.
func runJob(ctx context.Context, tx pgx.Tx, j *behindJob) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	w, err := lockBoard(ctx, sp, j.id)
	if err == nil {
		if err = j.fn(w); err == nil {
			err = w.notify()
		}
	}
	if err != nil {
		if pgdb.IsCode(err, pgdb.CodeSerializationFailure) || pgdb.IsCode(err, pgdb.CodeDeadlockDetected) {
			return err // the batch is run again
		}
		if rerr := sp.Rollback(ctx); rerr != nil {
			return rerr
		}
		return jobError{err}
	}
	return sp.Commit(ctx)
}

// BehindStats returns the counters of the board's writer of behind writes
// (attention facts, first ACKs, assignment fetches) in the shape of the
// ledger writer's: its transactions, the writes they carried, and the
// writes queued now.
func (b *Board) BehindStats() WriterStats {
	return WriterStats{Commits: b.behind.commits.Load(), Jobs: b.behind.writes.Load(), Queued: len(b.behind.queue)}
}
