package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"
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

	statsMu sync.Mutex
	commits int64
	jobs    int64

	// savepoint, rollbackTo and release are prepared once; nil when
	// preparing failed, in which case the SQL text is executed instead.
	savepoint, rollbackTo, release *sql.Stmt
}

type job struct {
	ctx context.Context
	fn  TxFunc
	res chan error
}

func newWriter(db *sql.DB) *Writer {
	w := &Writer{db: db, queue: make(chan *job, MaxBatch), done: make(chan struct{})}
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
// durably committed (nil) or rolled back (the error). fn's changes are
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
	j := &job{ctx: ctx, fn: fn, res: make(chan error, 1)}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return ErrClosed
	}
	select {
	case w.queue <- j:
	case <-ctx.Done():
		w.mu.RUnlock()
		return ctx.Err()
	}
	w.mu.RUnlock()
	return <-j.res
}

// Stats reports how many commits the writer has made and how many functions
// they carried.
func (w *Writer) Stats() (commits, jobs int64) {
	w.statsMu.Lock()
	defer w.statsMu.Unlock()
	return w.commits, w.jobs
}

func (w *Writer) close() {
	w.once.Do(func() {
		w.mu.Lock()
		w.closed = true
		close(w.queue)
		w.mu.Unlock()
		<-w.done
	})
}

func (w *Writer) loop() {
	defer close(w.done)
	batch := make([]*job, 0, MaxBatch)
	for first := range w.queue {
		batch = append(batch[:0], first)
	fill:
		for len(batch) < MaxBatch {
			select {
			case j, ok := <-w.queue:
				if !ok {
					break fill
				}
				batch = append(batch, j)
			default:
				break fill
			}
		}
		w.run(batch)
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

func (w *Writer) run(batch []*job) {
	results := make([]error, len(batch))
	ctx := context.Background()
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		for _, j := range batch {
			j.res <- fmt.Errorf("sqlitedb: begin: %w", err)
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
	w.statsMu.Unlock()
	for i, j := range batch {
		if results[i] == nil && commitErr != nil && ran > 0 {
			results[i] = commitErr
		}
		j.res <- results[i]
	}
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
