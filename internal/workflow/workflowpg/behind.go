package workflowpg

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
)

// QueueCapacity bounds the writes queued behind their callers (read-only
// calls' events, sessionless evidence records, outbox trims); past it,
// AppendCall with CallWrite.Behind and QueueRecord wait for room until
// their context ends.
const QueueCapacity = 1024

// BatchMax bounds the queued writes one transaction of the writer
// commits: as the SQLite writer batches them, the writes queued while a
// commit runs share the next one, so a burst of reads costs one commit
// per batch, not one per read.
const BatchMax = 128

// A job is one queued write. write runs inside the batch's transaction
// (a refusal is its outcome and does not end the batch); then receives
// the outcome once the batch has ended; done is closed after it.
type job struct {
	write   func(ctx context.Context, tx pgx.Tx, b *batch) error
	then    func(error)
	readSeq int64
	session string
	done    chan struct{}
}

// writer is the Store's one goroutine of behind writes, and the
// bookkeeping that lets readers wait for them.
type writer struct {
	s     *Store
	queue chan *job
	// qmu orders numbering and queueing (jobs are queued in readSeq
	// order); it may be held while the queue is full, so the writer
	// never takes it.
	qmu     sync.Mutex
	readSeq int64
	closed  bool
	// mu guards last, the newest job queued, and pending, which maps a
	// session id to its newest queued job (removed when it ends).
	mu      sync.Mutex
	last    *job
	pending map[string]*job
	stopped chan struct{}
	// commits and jobs count the transactions the writer ran and the
	// writes they carried (WriterStats).
	commits, jobs atomic.Int64
}

func (w *writer) start(s *Store) {
	w.s, w.queue, w.pending, w.stopped = s, make(chan *job, QueueCapacity), map[string]*job{}, make(chan struct{})
	go w.run()
}

// stop lets the writer commit what is queued and waits for it.
func (w *writer) stop() {
	w.qmu.Lock()
	if !w.closed {
		w.closed = true
		close(w.queue)
	}
	w.qmu.Unlock()
	<-w.stopped
}

func (w *writer) run() {
	defer close(w.stopped)
	for j := range w.queue {
		jobs := []*job{j}
	gather:
		for len(jobs) < BatchMax {
			select {
			case k, ok := <-w.queue:
				if !ok {
					break gather
				}
				jobs = append(jobs, k)
			default:
				break gather
			}
		}
		w.commit(jobs)
	}
}

// commit runs jobs in one transaction. When the database refused one of
// the writes (a data or integrity error: the transaction certainly rolled
// back), each job runs again alone, so that one failing write does not
// fail the others; any other failure (a lost connection, a commit whose
// answer was lost) is every job's outcome, never a second attempt.
func (w *writer) commit(jobs []*job) {
	outcomes := make([]error, len(jobs))
	var ids []string
	for _, j := range jobs {
		if j.session != "" {
			ids = append(ids, j.session)
		}
	}
	err := w.s.db.Tx(context.Background(), func(ctx context.Context, tx pgx.Tx) error {
		b := &batch{}
		if err := b.lockSessions(ctx, tx, slices.Clone(ids)); err != nil {
			return err
		}
		for i, j := range jobs {
			outcomes[i] = nil
			if err := j.write(ctx, tx, b); err != nil {
				if r, ok := err.(refusal); ok {
					outcomes[i] = r.err
					continue
				}
				return err
			}
			b.readSeq = max(b.readSeq, j.readSeq)
		}
		return w.s.endBatch(ctx, tx, b)
	})
	w.commits.Add(1)
	w.jobs.Add(int64(len(jobs)))
	if len(jobs) > 1 && jobFault(err) {
		for _, j := range jobs {
			w.commit([]*job{j})
		}
		return
	}
	for i, j := range jobs {
		if err != nil {
			outcomes[i] = err
		}
		w.finish(j, storeErr(outcomes[i]))
	}
}

// jobFault reports whether err is the database refusing a write's data
// (SQLSTATE class 22 or 23) rather than the transaction failing as a
// whole.
func jobFault(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "23"))
}

func (w *writer) finish(j *job, err error) {
	if j.then != nil {
		j.then(err)
	}
	w.mu.Lock()
	if w.pending[j.session] == j {
		delete(w.pending, j.session)
	}
	w.mu.Unlock()
	close(j.done)
}

// enqueue numbers (when read) and queues j behind every earlier job,
// waiting for room until ctx ends; ack, when not nil, runs with j's
// number before j is queued (markAcknowledged).
func (w *writer) enqueue(ctx context.Context, session string, read bool, j *job, ack func(context.Context, int64) error) error {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	if w.closed {
		return failure.New(failure.Unavailable, "the session store is closed")
	}
	j.done, j.session = make(chan struct{}), session
	if read {
		j.readSeq = w.readSeq + 1
		if ack != nil {
			if err := ack(ctx, j.readSeq); err != nil {
				return storeErr(err)
			}
		}
	}
	select {
	case w.queue <- j:
	default:
		select {
		case w.queue <- j:
		case <-ctx.Done():
			return failure.Wrap(failure.Unavailable, ctx.Err(), "the session store's write queue is full")
		}
	}
	if read {
		w.readSeq = j.readSeq
	}
	w.mu.Lock()
	w.last = j
	if session != "" && !ended(j) {
		w.pending[session] = j
	}
	w.mu.Unlock()
	return nil
}

// appendBehind queues an AppendCall behind the caller.
func (s *Store) appendBehind(ctx context.Context, id string, fn workflow.UpdateFunc, cw workflow.CallWrite) error {
	if err := s.check(ctx, id); err != nil {
		return storeErr(err)
	}
	return s.w.enqueue(ctx, id, true, &job{then: cw.Done, write: func(ctx context.Context, tx pgx.Tx, b *batch) error {
		return s.updateTx(ctx, tx, b, id, fn, cw.Claimed, cw.Outbox, nil, nil)
	}}, s.markAcknowledged)
}

// QueueRecord stores body, the evidence record of a read-only call
// recorded in no session, in the evidence outbox, behind the caller as a
// recorded read's events are: numbered among this process's reads, its
// number recorded as acknowledged before QueueRecord returns, so that a
// kill -9 that loses it is counted in unrecorded_reads_at_start. done
// (which may be nil) receives the outcome once its batch has ended; it
// must not block. ctx bounds only the wait for room in the queue.
func (s *Store) QueueRecord(ctx context.Context, body []byte, done func(error)) error {
	return s.w.enqueue(ctx, "", true, &job{then: done, write: func(ctx context.Context, tx pgx.Tx, b *batch) error {
		b.outbox = append(b.outbox, body)
		return nil
	}}, s.markAcknowledged)
}

// TrimOutbox deletes the outbox rows up to seq, behind the caller (losing
// it only leaves rows the journal skips). As workflowdb's, it never
// deletes the newest row, though here the seq comes from outbox_head.
func (s *Store) TrimOutbox(ctx context.Context, upTo int64) error {
	return s.w.enqueue(ctx, "", false, &job{write: func(ctx context.Context, tx pgx.Tx, b *batch) error {
		_, err := tx.Exec(ctx, `DELETE FROM workflow.evidence_outbox
			WHERE seq <= $1 AND seq < (SELECT max(seq) FROM workflow.evidence_outbox)`, upTo)
		return err
	}}, nil)
}

// waitPending waits until the behind writes queued for session id so far
// have ended, so that a reader sees every acknowledged call.
func (s *Store) waitPending(ctx context.Context, id string) error {
	s.w.mu.Lock()
	j := s.w.pending[id]
	s.w.mu.Unlock()
	return wait(ctx, j)
}

// Flush waits until every write queued so far has ended.
func (s *Store) Flush(ctx context.Context) error {
	s.w.mu.Lock()
	j := s.w.last
	s.w.mu.Unlock()
	return storeErr(wait(ctx, j))
}

func ended(j *job) bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

func wait(ctx context.Context, j *job) error {
	if j == nil {
		return nil
	}
	select {
	case <-j.done:
		return nil
	case <-ctx.Done():
		return failure.Wrap(failure.Interrupted, ctx.Err(), "waiting for the session store's queued writes")
	}
}

// WriterStats are the ledger writer's cumulative counters and its queue
// now: Commits the transactions it ran (a batch a refused write split
// counts once, then once per write), Jobs the writes they carried, Queued
// the writes waiting for it.
type WriterStats struct {
	Commits, Jobs int64
	Queued        int
}

// WriterStats returns the counters of the ledger's writer of queued
// writes (decision 0076).
func (s *Store) WriterStats() WriterStats {
	return WriterStats{Commits: s.w.commits.Load(), Jobs: s.w.jobs.Load(), Queued: len(s.w.queue)}
}
