package windowpg

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/window"
)

// waitForLockWait returns once a backend of the test's database waits for
// a lock, and fails the test if done is closed first.
func waitForLockWait(t *testing.T, ctx context.Context, st *Store, done <-chan struct{}, what string) {
	t.Helper()
	for {
		var waiting int
		if err := st.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		select {
		case <-done:
			t.Fatalf("%s finished while another transaction held its lock", what)
		default:
		}
	}
}

// holding opens a store on a fresh database and begins a transaction,
// rolled back at the test's end, that holds the lock taken by lock.
func holding(t *testing.T, lock func(ctx context.Context, tx pgx.Tx) error) (*Store, pgx.Tx) {
	t.Helper()
	ctx := context.Background()
	st, err := Open(ctx, pgtest.Open(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tx, err := st.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(ctx) })
	if err := lock(ctx, tx); err != nil {
		t.Fatal(err)
	}
	return st, tx
}

// TestTouchCountsTheBoundUnderALock: a Touch (of another process, say)
// waits for a transaction that holds the principal's activity lock and
// has added a row, then prunes counting that row: the bound of MaxRows
// holds across concurrent writers.
func TestTouchCountsTheBoundUnderALock(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	st, tx := holding(t, func(ctx context.Context, tx pgx.Tx) error { return lockPrincipal(ctx, tx, "p") })
	if _, err := tx.Exec(ctx, `INSERT INTO windows.window_activity (principal, win, project, peer_id, first_at_ms, last_at_ms, calls)
		VALUES ('p', 'v', 'agent:local:b', 'wc_peer_v', $1, $1, 1)`, now.Add(-time.Second).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	pr := window.Prune{ActivityBefore: now.Add(-time.Hour), MessagesBefore: now.Add(-time.Hour), MaxRows: 1, MaxMessagesEach: 8}
	done := make(chan struct{})
	if err := st.Touch(ctx, window.Touch{Principal: "p", Window: "w", PeerID: "wc_peer_w", Project: "agent:local:a", At: now}, pr,
		func(err error) {
			if err != nil {
				t.Error(err)
			}
			close(done)
		}); err != nil {
		t.Fatal(err)
	}
	waitForLockWait(t, ctx, st, done, "the Touch")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _, err := st.Counts(ctx); err != nil || n != 1 {
		t.Fatalf("%d activity rows %v, want MaxRows = 1", n, err)
	}
}

// TestPostMessageCountsTheBoundUnderALock: a PostMessage waits for a
// transaction that holds the recipient window's lock and has added a
// message, then prunes counting it.
func TestPostMessageCountsTheBoundUnderALock(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	st, tx := holding(t, func(ctx context.Context, tx pgx.Tx) error { return lockWindow(ctx, tx, "p", "w") })
	if _, err := tx.Exec(ctx, `INSERT INTO windows.peer_messages
		(id, principal, to_window, from_window, to_peer_id, from_peer_id, body, requires_ack, priority, created_at_ms)
		VALUES ('wc_msg_held', 'p', 'w', 'v', '', '', 'b', false, 'normal', $1)`, now.Add(time.Second).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	pr := window.Prune{ActivityBefore: now.Add(-time.Hour), MessagesBefore: now.Add(-time.Hour), MaxRows: 8, MaxMessagesEach: 1}
	done := make(chan struct{})
	posted := make(chan error, 1)
	go func() {
		posted <- st.PostMessage(ctx, window.Message{ID: "wc_msg_1", Principal: "p", ToWindow: "w", FromWindow: "v", Body: "b",
			Priority: window.PriorityNormal, CreatedAt: now}, pr)
		close(done)
	}()
	waitForLockWait(t, ctx, st, done, "the PostMessage")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-posted; err != nil {
		t.Fatal(err)
	}
	if _, n, err := st.Counts(ctx); err != nil || n != 1 {
		t.Fatalf("%d messages %v, want MaxMessagesEach = 1", n, err)
	}
}

// TestQueueCapacity: while the writer is held, QueueCapacity writes queue
// and the next one waits for room only until its context ends; after
// Close a write is refused.
func TestQueueCapacity(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	st, tx := holding(t, func(ctx context.Context, tx pgx.Tx) error { return lockPrincipal(ctx, tx, "p") })
	pr := window.Prune{ActivityBefore: now.Add(-time.Hour), MessagesBefore: now.Add(-time.Hour), MaxRows: 8, MaxMessagesEach: 8}
	tc := window.Touch{Principal: "p", Window: "w", PeerID: "wc_peer_w", Project: "agent:local:a", At: now}
	first := make(chan struct{})
	if err := st.Touch(ctx, tc, pr, func(error) { close(first) }); err != nil {
		t.Fatal(err)
	}
	waitForLockWait(t, ctx, st, first, "the first Touch")
	for i := range QueueCapacity {
		if err := st.Touch(ctx, tc, pr, nil); err != nil {
			t.Fatal(i, err)
		}
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := st.Touch(ended, tc, pr, nil); !failure.Is(err, failure.Unavailable) {
		t.Fatalf("a Touch past the queue's capacity: %v, want Unavailable", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if act, err := st.Activity(ctx, "p", "w"); err != nil || len(act) != 1 || act[0].Calls != QueueCapacity+1 {
		t.Fatalf("activity %+v %v, want %d calls", act, err, QueueCapacity+1)
	}
	st.Close()
	if err := st.Touch(ctx, tc, pr, nil); !failure.Is(err, failure.Unavailable) {
		t.Fatalf("a Touch after Close: %v, want Unavailable", err)
	}
}
