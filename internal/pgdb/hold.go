package pgdb

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
)

// Bounds of a Hold.
const (
	// LockCheckInterval is how often a Hold checks that the connection
	// holding its lock is alive.
	LockCheckInterval = 5 * time.Second
	// RelockMin and RelockMax bound the backoff between attempts to take
	// a lost lock again.
	RelockMin = 100 * time.Millisecond
	RelockMax = 5 * time.Second
)

// lockCheckEvery is LockCheckInterval, a variable only so that tests can
// shorten it.
var lockCheckEvery = LockCheckInterval

// ErrForgotten is the cause of a Hold's loss when, after its connection
// was lost, its row was gone: another process judged it gone and may
// have acted on that (recovered its calls, taken over its jobs).
var ErrForgotten = errors.New("another replica judged this one gone while its database connection was lost")

// A Hold keeps a process's claim to be alive in the database: a
// session-level advisory lock held on a connection of its own, named by
// a row. Other processes judge the claim gone when the lock is not held,
// and delete its row when they do (so that acting on the judgement
// leaves a mark). When the lock's connection is lost (a network cut, a
// restart of the database), the Hold takes the lock again on a new
// connection and then keeps going only if its row is still there; if it
// was deleted meanwhile, Lost is closed with ErrForgotten: what this
// process goes on writing could contradict what another one recorded for
// it, so it must stop.
type Hold struct {
	db     *DB
	relock string
	args   []any
	row    string
	id     string
	every  time.Duration

	mu   sync.Mutex
	conn *pgx.Conn

	lost  chan struct{}
	cause error
	stop  chan struct{}
	done  chan struct{}
	close sync.Once
}

// Keep watches conn, on which the lock was taken by relock (run with
// args); row is a statement selecting the claim's row by id (it is run
// with FOR UPDATE, so that it waits for a concurrent deletion to commit).
func (db *DB) Keep(conn *pgx.Conn, relock string, args []any, row, id string) *Hold {
	h := &Hold{db: db, relock: relock, args: args, row: row, id: id, conn: conn, every: lockCheckEvery,
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go h.watch()
	return h
}

// Lost is closed when the claim was lost for good (Err says why).
func (h *Hold) Lost() <-chan struct{} { return h.lost }

// Err is why the claim was lost, nil before.
func (h *Hold) Err() error {
	select {
	case <-h.lost:
		return h.cause
	default:
		return nil
	}
}

// Close stops watching and releases the lock (its connection is closed).
func (h *Hold) Close() error {
	h.close.Do(func() { close(h.stop) })
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), ConnectTimeout)
	defer cancel()
	return h.conn.Close(ctx)
}

// Conn runs fn with the lock's connection (not concurrently with the
// watch).
func (h *Hold) Conn(fn func(*pgx.Conn) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fn(h.conn)
}

func (h *Hold) watch() {
	defer close(h.done)
	t := time.NewTicker(h.every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		if h.ping() == nil {
			continue
		}
		if err := h.retake(); err != nil {
			h.cause = err
			close(h.lost)
			return
		}
	}
}

func (h *Hold) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), ConnectTimeout)
	defer cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conn.Ping(ctx)
}

// retake takes the lock again on a new connection, with a doubling
// backoff, until it holds it (nil), finds its row gone (ErrForgotten) or
// is stopped (nil: Close follows).
func (h *Hold) retake() error {
	wait := RelockMin
	for {
		err := h.attempt()
		if err == nil || errors.Is(err, ErrForgotten) {
			return err
		}
		select {
		case <-h.stop:
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, RelockMax)
	}
}

func (h *Hold) attempt() error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := pgx.ConnectConfig(ctx, h.db.Pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, h.relock, h.args...); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return err
	}
	err = conn.QueryRow(ctx, h.row+` FOR UPDATE`, h.id).Scan(new(int))
	if errors.Is(err, pgx.ErrNoRows) {
		conn.Close(context.WithoutCancel(ctx))
		return failure.Wrap(failure.Unavailable, ErrForgotten, "database %s", h.db.url)
	}
	if err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return err
	}
	h.mu.Lock()
	old := h.conn
	h.conn = conn
	h.mu.Unlock()
	old.Close(context.WithoutCancel(ctx))
	return nil
}
