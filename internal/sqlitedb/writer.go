package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// MaxBatch is the largest number of queued functions one group commit runs
// in a single transaction.
const MaxBatch = 256

// ErrClosed is returned by Do after the writer has been closed.
var ErrClosed = errors.New("sqlitedb: writer closed")

// TxFunc is one unit of work run by a Writer inside a transaction. It must not
// commit or roll back tx, and must not retain it.
type TxFunc func(ctx context.Context, tx *sql.Tx) error

// A Writer serializes all writes to one database and batches concurrent ones
// into a single durable commit.
type Writer struct {
	db     *sql.DB
	queue  chan *job
	done   chan struct{}
	once   sync.Once
	mu     sync.RWMutex // guards closed against sends on queue
	closed bool
	// runMu is held by whoever runs a batch on the connection: the loop,
	// or a caller of Do or DoLazy that found the writer idle and runs its
	// own function (see do). pending counts the functions queued or
	// running and not yet ended; it is raised under mu.
	runMu   sync.Mutex
	pending atomic.Int64

	statsMu sync.Mutex
	commits int64
	jobs    int64
	// lazy counts commits made with synchronous=NORMAL (no durable job).
	lazy int64
	// durable counts commits made with synchronous=FULL (an fsync).
	durable int64
	// batches counts commits by batch size: batches[i] those of at most
	// BatchBounds[i] functions (BatchSizes).
	batches [len(BatchBounds)]int64

	// tickets numbers jobs in queue order (guarded by mu's write side for
	// sends: see enqueue); done is the highest ticket whose batch has
	// ended, and advanced is closed and replaced each time it grows.
	tickets  uint64
	doneMu   sync.Mutex
	doneTo   uint64
	advanced chan struct{}
	// normal is true while the connection is set to synchronous=NORMAL.
	normal bool

	// savepoint, rollbackTo and release are prepared once; nil when
	// preparing failed, in which case the SQL text is executed instead.
	savepoint, rollbackTo, release *sql.Stmt

	// gather is how long (in nanoseconds) a batch of only functions
	// queued by Go waits for more before it commits (0: it does not; see
	// GatherBehind); kick ends such a wait at once (Wait sends on it).
	gather atomic.Int64
	kick   chan struct{}
	// onGather, when set (by tests, before any write), is called when a
	// batch begins to gather.
	onGather func()
}

type job struct {
	ctx context.Context
	fn  TxFunc
	// durable is true when the job's caller needs its commit on stable
	// storage (synchronous=FULL) before it learns the outcome.
	durable bool
	ticket  uint64
	// res receives the outcome of a job whose caller waits; then is called
	// with the outcome of a job queued behind (Go). err is the outcome of
	// a job run by its caller (runIdle), which has neither.
	res  chan error
	then func(error)
	err  error
}

func newWriter(db *sql.DB) *Writer {
	w := &Writer{db: db, queue: make(chan *job, MaxBatch), done: make(chan struct{}), advanced: make(chan struct{}),
		kick: make(chan struct{}, 1)}
	w.savepoint, _ = db.Prepare(sqlSavepoint)
	w.rollbackTo, _ = db.Prepare(sqlRollbackTo)
	w.release, _ = db.Prepare(sqlRelease)
	go w.loop()
	return w
}

const (
	sqlSavepoint  = "SAVEPOINT job"
	sqlRollbackTo = "ROLLBACK TO job"
	sqlRelease    = "RELEASE job"
)

// Prepare prepares query once on the writer's connection. A TxFunc runs it
// with tx.StmtContext(ctx, stmt), which reuses the compiled statement
// instead of parsing the SQL text again on every call; on a hot path the
// parse costs as much as the execution. Prepare must be called outside Do
// (the writer's only connection is busy inside a TxFunc). Statements are
// closed with the database.
func (w *Writer) Prepare(ctx context.Context, query string) (*sql.Stmt, error) {
	return w.db.PrepareContext(ctx, query)
}

// Stmt names a query and where PrepareAll stores its statement.
type Stmt struct {
	Dst   **sql.Stmt
	Query string
}

// PrepareAll prepares each query with Prepare into its destination and
// returns the first error. Statements prepared before an error are closed
// with the database.
func (w *Writer) PrepareAll(ctx context.Context, stmts ...Stmt) error {
	for _, st := range stmts {
		var err error
		if *st.Dst, err = w.Prepare(ctx, st.Query); err != nil {
			return err
		}
	}
	return nil
}

// exec runs a prepared statement of the writer in tx, or its text when it
// could not be prepared.
func exec(ctx context.Context, tx *sql.Tx, stmt *sql.Stmt, query string) error {
	var err error
	if stmt != nil {
		_, err = tx.StmtContext(ctx, stmt).ExecContext(ctx)
	} else {
		_, err = tx.ExecContext(ctx, query)
	}
	return err
}

// Do runs fn inside a transaction and returns after that transaction has been
// durably committed (nil) or rolled back (the error). When nothing is queued
// or running, Do runs that transaction on the caller's goroutine (see
// runIdle); otherwise the writer's goroutine runs it in the next batch. fn's changes are
// isolated by a savepoint: if fn returns an error only its own changes are
// undone and other functions in the same batch still commit. When the batch's
// COMMIT itself fails, every function in it receives that error and none of
// their changes persist.
//
// Do does not run fn if ctx is already done when the writer reaches it. Once
// fn has started, cancellation of ctx does not abandon the commit: Do waits
// for the outcome so that the caller never mistakes a committed mutation for
// a failed one.
func (w *Writer) Do(ctx context.Context, fn TxFunc) error {
	return w.do(ctx, fn, true)
}

// DoLazy is Do for work whose durability another record already ensures
// (a copy that can be rebuilt): when no function of its batch was queued by
// Do, the batch commits with synchronous=NORMAL, which in WAL mode writes
// the commit to the WAL without an fsync. Such a commit survives the
// process being killed (the OS keeps the written pages) but not a power
// loss until the next durable commit, whose fsync of the WAL covers every
// earlier frame, in order; a checkpoint syncs the WAL too.
func (w *Writer) DoLazy(ctx context.Context, fn TxFunc) error {
	return w.do(ctx, fn, false)
}

func (w *Writer) do(ctx context.Context, fn TxFunc, durable bool) error {
	j := &job{ctx: ctx, fn: fn, durable: durable}
	if w.runIdle(j) {
		return j.err
	}
	j.res = make(chan error, 1)
	if _, err := w.enqueue(ctx, j); err != nil {
		return err
	}
	return <-j.res
}

// runIdle runs j as a batch of its own on the caller's goroutine when
// nothing is queued or running, and reports whether it did (j.err is then
// its outcome). A waiting caller alone at an idle writer thus pays no
// hand-off to the loop's goroutine and back; it is the batch the loop
// would have run. Functions queued meanwhile wait for it, as they would
// behind the loop's batch, and the loop gathers them into the next one.
//
// Before it commits to running alone, the caller yields once: callers
// that the last batch has just acknowledged typically write again at
// once, and if any of them queues meanwhile, j is queued too, so that
// the loop's next batch carries them all under one commit instead of j
// committing alone ahead of them (concurrent writers keep their group
// commits).
func (w *Writer) runIdle(j *job) bool {
	if w.pending.Load() != 0 || !w.runMu.TryLock() {
		return false
	}
	runtime.Gosched()
	w.mu.Lock()
	// pending is raised under mu before a function is queued: at 0 no
	// earlier ticket is unfinished, so this batch ends in ticket order.
	if w.closed || w.pending.Load() != 0 {
		w.mu.Unlock()
		w.runMu.Unlock()
		return false
	}
	w.tickets++
	j.ticket = w.tickets
	w.pending.Add(1)
	w.mu.Unlock()
	defer w.runMu.Unlock()
	w.run([]*job{j})
	return true
}

// ReadIdle runs fn on the writer's connection when no batch is running on
// it (one may be queued, or gathering), and reports whether it did;
// otherwise the caller reads from the read pool. fn must only read,
// outside any transaction, through statements prepared with Prepare (run
// directly, not in a Tx), and must not use the writer. A read there sees
// every commit and nothing uncommitted, as a pool read does, but it finds
// the pages this writer just wrote still in its connection's cache, where
// a pool connection must read them again after every commit of another
// connection.
func (w *Writer) ReadIdle(fn func() error) (bool, error) {
	if !w.runMu.TryLock() {
		return false, nil
	}
	defer w.runMu.Unlock()
	w.mu.RLock()
	closed := w.closed
	w.mu.RUnlock()
	if closed {
		return false, nil
	}
	return true, fn()
}

// Go queues fn behind the caller: it returns as soon as fn is queued, in
// the order of every other queued function, and then (which may be nil)
// is called from the writer with fn's outcome once its batch has ended.
// Its batch commits lazily (see DoLazy) unless it also carries a Do. The
// returned ticket can be passed to Wait. ctx bounds only the wait for room
// in the queue.
func (w *Writer) Go(ctx context.Context, fn TxFunc, then func(error)) (uint64, error) {
	return w.enqueue(ctx, &job{ctx: context.WithoutCancel(ctx), fn: fn, then: then})
}

func (w *Writer) enqueue(ctx context.Context, j *job) (uint64, error) {
	// The write lock orders ticket assignment with the send, so tickets
	// follow queue order.
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, ErrClosed
	}
	w.tickets++
	j.ticket = w.tickets
	w.pending.Add(1)
	select {
	case w.queue <- j:
		return j.ticket, nil
	case <-ctx.Done():
		w.tickets--
		w.pending.Add(-1)
		return 0, ctx.Err()
	}
}

// GatherBehind makes a batch holding only functions queued by Go wait up
// to d for more before it commits, so that behind writes arriving a few
// milliseconds apart (one per sequential call) share one transaction, and
// its fixed cost (begin, the pages every write touches, commit), instead
// of paying it each. The wait ends at once when a function queued by Do
// or DoLazy arrives (it joins the batch, and commits without delay), when
// Wait is called, when the batch reaches MaxBatch, and at close; so no
// caller that waits for an outcome ever waits for the gathering. What is
// at risk in a crash is unchanged in kind: the functions not yet
// committed (at most one batch and the queue). 0 (the default) turns it
// off.
func (w *Writer) GatherBehind(d time.Duration) {
	w.gather.Store(int64(d))
}

// Queued returns the ticket of the newest queued function (0 when none
// was ever queued); Wait(ctx, Queued()) waits for everything queued so far.
func (w *Writer) Queued() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tickets
}

// Wait returns once the batch holding the function with ticket t has
// ended (committed or rolled back), or when ctx is done.
func (w *Writer) Wait(ctx context.Context, t uint64) error {
	for {
		w.doneMu.Lock()
		reached, ch := w.doneTo >= t, w.advanced
		w.doneMu.Unlock()
		if reached {
			return nil
		}
		// A gathering batch may hold ticket t, or the next one will:
		// end its wait (again after each batch that ends short of t).
		select {
		case w.kick <- struct{}{}:
		default:
		}
		select {
		case <-ch:
		case <-w.done:
			w.doneMu.Lock()
			reached = w.doneTo >= t
			w.doneMu.Unlock()
			if reached {
				return nil
			}
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Stats reports how many commits the writer has made and how many functions
// they carried.
func (w *Writer) Stats() (commits, jobs int64) {
	w.statsMu.Lock()
	defer w.statsMu.Unlock()
	return w.commits, w.jobs
}

// BatchBounds are the upper bounds of the batch size classes BatchSizes
// counts (powers of two up to MaxBatch).
var BatchBounds = [...]int{1, 2, 4, 8, 16, 32, 64, 128, MaxBatch}

// batchBucket is the index in BatchBounds of the class of a batch of n
// functions.
func batchBucket(n int) int {
	for i, b := range BatchBounds {
		if n <= b {
			return i
		}
	}
	return len(BatchBounds) - 1
}

// WriterStats are a writer's cumulative counters.
type WriterStats struct {
	// Commits are the transactions committed (or rolled back when no
	// function ran), Durable those made with synchronous=FULL (an fsync
	// of the WAL), Jobs the functions they carried.
	Commits, Durable, Jobs int64
	// Batches counts commits by size class: Batches[i] are the commits
	// of at most BatchBounds[i] functions (and more than the bound
	// before it).
	Batches [len(BatchBounds)]int64
	// Queued are the functions queued or running now.
	Queued int64
}

// Counters returns the writer's cumulative counters and its queue depth
// now.
func (w *Writer) Counters() WriterStats {
	w.statsMu.Lock()
	defer w.statsMu.Unlock()
	return WriterStats{Commits: w.commits, Durable: w.durable, Jobs: w.jobs, Batches: w.batches, Queued: w.pending.Load()}
}

// LazyCommits reports how many of the writer's commits were made with
// synchronous=NORMAL because no function of their batch needed durability.
func (w *Writer) LazyCommits() int64 {
	w.statsMu.Lock()
	defer w.statsMu.Unlock()
	return w.lazy
}

func (w *Writer) close() {
	w.once.Do(func() {
		w.mu.Lock()
		w.closed = true
		close(w.queue)
		w.mu.Unlock()
		<-w.done
		// A batch run by its caller (runIdle) ends before the
		// connection closes.
		w.runMu.Lock()
		w.runMu.Unlock()
	})
}

func (w *Writer) loop() {
	defer close(w.done)
	batch := make([]*job, 0, MaxBatch)
	for first := range w.queue {
		// A batch of behind writes gathers without holding the connection,
		// so that ReadIdle can read on it meanwhile; nothing else runs on
		// it while the batch is queued (runIdle needs an empty queue).
		batch = w.gatherBehind(w.drain(append(batch[:0], first)))
		w.runMu.Lock()
		// Functions queued while a caller's batch (runIdle) or a read
		// held the connection join this batch.
		batch = w.drain(batch)
		w.run(batch)
		w.runMu.Unlock()
		// Let the callers just acknowledged run before the next batch is
		// gathered: each typically queues its next function at once.
		// Yielding while the queue still grows lets one commit carry them
		// all instead of splitting the writers into alternating
		// half-size batches, each paying its own fsync.
		for n := len(w.queue); n < MaxBatch; {
			runtime.Gosched()
			m := len(w.queue)
			if m == n {
				break
			}
			n = m
		}
	}
}

// gatherBehind returns batch with the functions that arrive while it
// waits, when every function of batch was queued by Go and gathering is
// on (see GatherBehind).
func (w *Writer) gatherBehind(batch []*job) []*job {
	d := time.Duration(w.gather.Load())
	if d <= 0 || len(batch) >= MaxBatch {
		return batch
	}
	for _, j := range batch {
		if j.res != nil {
			return batch
		}
	}
	// A kick left by a Wait whose ticket was reached since only ends
	// this wait early.
	if w.onGather != nil {
		w.onGather()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for len(batch) < MaxBatch {
		select {
		case j, ok := <-w.queue:
			if !ok {
				return batch
			}
			batch = append(batch, j)
			if j.res != nil {
				return batch
			}
		case <-w.kick:
			return w.drain(batch)
		case <-t.C:
			return w.drain(batch)
		}
	}
	return batch
}

// drain adds to batch the functions queued now, up to MaxBatch.
func (w *Writer) drain(batch []*job) []*job {
	for len(batch) < MaxBatch {
		select {
		case j, ok := <-w.queue:
			if !ok {
				return batch
			}
			batch = append(batch, j)
		default:
			return batch
		}
	}
	return batch
}

func (w *Writer) run(batch []*job) {
	results := make([]error, len(batch))
	defer w.finish(batch, results)
	ctx := context.Background()
	durable := false
	for _, j := range batch {
		durable = durable || j.durable
	}
	// SQLite refuses to change the level inside a transaction; the
	// writer's only connection runs this, so it applies to the batch.
	if durable == w.normal {
		level := "FULL"
		if !durable {
			level = "NORMAL"
		}
		if _, err := w.db.ExecContext(ctx, "PRAGMA synchronous="+level); err != nil {
			for i := range batch {
				results[i] = fmt.Errorf("sqlitedb: synchronous: %w", err)
			}
			return
		}
		w.normal = !durable
	}
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		for i := range batch {
			results[i] = fmt.Errorf("sqlitedb: begin: %w", err)
		}
		return
	}
	ran := 0
	for i, j := range batch {
		if err := j.ctx.Err(); err != nil {
			results[i] = err
			continue
		}
		if len(batch) == 1 {
			// Alone in its transaction: rolling the transaction back undoes
			// exactly its changes, so no savepoint (and no statement
			// journal copying every page it touches) is needed.
			results[i] = runAlone(j.ctx, tx, j.fn)
		} else {
			results[i] = w.runSavepoint(j.ctx, tx, j.fn)
		}
		if results[i] == nil {
			ran++
		}
	}
	var commitErr error
	if ran == 0 {
		commitErr = tx.Rollback()
	} else {
		commitErr = tx.Commit()
	}
	if commitErr != nil {
		commitErr = fmt.Errorf("sqlitedb: commit: %w", commitErr)
	}
	w.statsMu.Lock()
	w.commits++
	w.jobs += int64(len(batch))
	if ran > 0 && !durable {
		w.lazy++
	}
	if ran > 0 && durable {
		w.durable++
	}
	w.batches[batchBucket(len(batch))]++
	w.statsMu.Unlock()
	for i := range batch {
		if results[i] == nil && commitErr != nil && ran > 0 {
			results[i] = commitErr
		}
	}
}

// finish tells each function of an ended batch its outcome and advances
// the ended ticket.
func (w *Writer) finish(batch []*job, results []error) {
	for i, j := range batch {
		switch {
		case j.res != nil:
			j.res <- results[i]
		case j.then != nil:
			j.then(results[i])
		default:
			j.err = results[i]
		}
	}
	w.doneMu.Lock()
	w.doneTo = batch[len(batch)-1].ticket
	close(w.advanced)
	w.advanced = make(chan struct{})
	w.doneMu.Unlock()
	w.pending.Add(-int64(len(batch)))
}

// runAlone runs fn as the only function of tx, which is rolled back when
// fn fails or panics.
func runAlone(ctx context.Context, tx *sql.Tx, fn TxFunc) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sqlitedb: write function panicked: %v", p)
		}
	}()
	return fn(context.WithoutCancel(ctx), tx)
}

func (w *Writer) runSavepoint(ctx context.Context, tx *sql.Tx, fn TxFunc) (err error) {
	// A background context keeps savepoint bookkeeping independent of the
	// caller's cancellation once the function has been admitted.
	bg := context.WithoutCancel(ctx)
	if err := exec(bg, tx, w.savepoint, sqlSavepoint); err != nil {
		return fmt.Errorf("sqlitedb: savepoint: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sqlitedb: write function panicked: %v", p)
		}
		if err != nil {
			if rbErr := exec(bg, tx, w.rollbackTo, sqlRollbackTo); rbErr != nil {
				err = errors.Join(err, rbErr)
			}
		}
		if relErr := exec(bg, tx, w.release, sqlRelease); relErr != nil && err == nil {
			err = relErr
		}
	}()
	return fn(bg, tx)
}
