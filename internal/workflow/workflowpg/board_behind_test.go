package workflowpg

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/workflow"
)

// countProjection is a behind write adding one projection to message id,
// recording the transaction it ran in.
func countProjection(id string, txids *sync.Map) func(workflow.BoardWriter) error {
	return func(w workflow.BoardWriter) error {
		m, ok, err := w.Message(id)
		if err != nil || !ok {
			return errors.Join(err, errors.New("no message"))
		}
		m.ProjectionCount++
		if txids != nil {
			bt := w.(*boardTx)
			var txid int64
			if err := bt.tx.QueryRow(bt.ctx, `SELECT txid_current()`).Scan(&txid); err != nil {
				return err
			}
			n, _ := txids.LoadOrStore(txid, new(int))
			*n.(*int)++
		}
		return w.Save(m)
	}
}

// heldWriter opens a Board over a new database with one session holding
// one message m, and queues a behind write of that session that runs
// first (nil) and then holds the writer inside its transaction until
// release is called (at the latest when t ends). It returns once the
// writer holds.
func heldWriter(t *testing.T, first func(workflow.BoardWriter) error) (b *Board, sess workflow.Session, m workflow.Message, release func()) {
	t.Helper()
	ctx := context.Background()
	b, db := openBoard(t, pgtest.URL(t))
	sess = createSession(t, db)
	m, _, err := workflow.NewBoard(b, nil).Post(ctx, workflow.PostParams{SessionID: sess.ID, Kind: workflow.MessageNote, Body: "counted"})
	if err != nil {
		t.Fatal(err)
	}
	inside, held, failed := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	// A failing test must still let the held write end, or closing the
	// pool would wait for its connection forever.
	t.Cleanup(release)
	if err := b.UpdateBoardBehind(ctx, sess.ID, func(w workflow.BoardWriter) error {
		if first != nil {
			if err := first(w); err != nil {
				return err
			}
		}
		close(inside)
		<-held
		return nil
	}, func(err error) { failed <- err }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-inside:
	case err := <-failed:
		t.Fatalf("the held write ended: %v", err)
	}
	return b, sess, m, release
}

// TestBehindQueueBoundAndBatches: while the writer is held, exactly
// BehindQueueCapacity behind writes queue and the next one waits for room
// only until its context ends (failure.Unavailable); released, the writer
// commits them BehindBatchMax to a transaction, every one lands, and a
// behind write queued after Close is refused.
func TestBehindQueueBoundAndBatches(t *testing.T) {
	ctx := context.Background()
	b, sess, m, letGo := heldWriter(t, nil) // alone in its batch
	var txids sync.Map
	var failed sync.Map
	for i := range BehindQueueCapacity {
		if err := b.UpdateBoardBehind(ctx, sess.ID, countProjection(m.ID, &txids), func(err error) {
			if err != nil {
				failed.Store(i, err)
			}
		}); err != nil {
			t.Fatal(i, err)
		}
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.UpdateBoardBehind(ended, sess.ID, countProjection(m.ID, nil), nil); !failure.Is(err, failure.Unavailable) {
		t.Fatalf("a behind write past the queue's capacity: %v, want Unavailable", err)
	}
	letGo()
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	failed.Range(func(k, v any) bool { t.Errorf("behind write %v: %v", k, v); return true })
	batches := 0
	txids.Range(func(_, n any) bool {
		batches++
		if *n.(*int) != BehindBatchMax {
			t.Errorf("a batch of %d writes, want %d", *n.(*int), BehindBatchMax)
		}
		return true
	})
	if batches != BehindQueueCapacity/BehindBatchMax {
		t.Errorf("%d batches, want %d", batches, BehindQueueCapacity/BehindBatchMax)
	}
	var count int64
	if err := b.ViewBoard(ctx, sess.ID, func(r workflow.BoardReader) error {
		got, _, err := r.Message(m.ID)
		count = got.ProjectionCount
		return err
	}); err != nil || count != BehindQueueCapacity {
		t.Fatalf("projection count %d (%v), want %d", count, err, BehindQueueCapacity)
	}
	b.Close()
	if err := b.UpdateBoardBehind(ctx, sess.ID, countProjection(m.ID, nil), nil); !failure.Is(err, failure.Unavailable) {
		t.Fatalf("a behind write after Close: %v, want Unavailable", err)
	}
}

// TestBehindFailureRollsBackOnlyItself: in one batch, a behind write that
// fails is rolled back alone and reported to its own done; the writes
// before and after it in the batch commit.
func TestBehindFailureRollsBackOnlyItself(t *testing.T) {
	ctx := context.Background()
	b, sess, m, letGo := heldWriter(t, nil) // the next three queue into one batch
	refused := errors.New("refused after its change")
	outcomes := make([]error, 3)
	var txids sync.Map
	for i := range 3 {
		fn := countProjection(m.ID, &txids)
		if i == 1 {
			inner := fn
			fn = func(w workflow.BoardWriter) error {
				if err := inner(w); err != nil {
					return err
				}
				return refused
			}
		}
		if err := b.UpdateBoardBehind(ctx, sess.ID, fn, func(err error) { outcomes[i] = err }); err != nil {
			t.Fatal(err)
		}
	}
	letGo()
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	batches := 0
	txids.Range(func(any, any) bool { batches++; return true })
	if outcomes[0] != nil || !errors.Is(outcomes[1], refused) || outcomes[2] != nil || batches != 1 {
		t.Fatalf("outcomes %v in %d batches, want nil, refused, nil in one", outcomes, batches)
	}
	st, _, err := workflow.NewBoard(b, nil).List(ctx, sess.ID, workflow.MessageFilter{MessageID: m.ID})
	if err != nil || len(st) != 1 || st[0].ProjectionCount != 2 {
		t.Fatalf("projection count %+v %v, want 2", st, err)
	}
}

// TestReadersWaitForBehindWrites: a board read (ViewBoard,
// SessionSnapshot) taken after a behind write was queued for its session
// waits for it and sees it. The behind write is held inside its
// transaction until both reads wait for it; a read that returned first
// did not wait.
func TestReadersWaitForBehindWrites(t *testing.T) {
	ctx := context.Background()
	b, sess, m, letGo := heldWriter(t, func(w workflow.BoardWriter) error {
		ms, _, err := w.List(workflow.MessageFilter{Limit: 1}) // m, the only one
		if err != nil || len(ms) != 1 {
			return errors.Join(err, errors.New("no message"))
		}
		if err := countProjection(ms[0].ID, nil)(w); err != nil {
			return err
		}
		st, err := w.State()
		if err != nil {
			return err
		}
		st.ObservationRevision++ // as a first ACK does
		return w.SetState(st)
	})
	waiting := make(chan string, 2)
	b.behind.onWait = func(id string) { waiting <- id }
	seen := make(chan int64, 1)
	go func() {
		var n int64
		err := b.ViewBoard(ctx, sess.ID, func(r workflow.BoardReader) error {
			got, _, err := r.Message(m.ID)
			n = got.ProjectionCount
			return err
		})
		if err != nil {
			t.Error(err)
		}
		seen <- n
	}()
	snap := make(chan int64, 1)
	go func() {
		s, err := b.SessionSnapshot(ctx, sess.ID)
		if err != nil {
			t.Error(err)
		}
		snap <- s.Fence.MessageObservationRevision
	}()
	for range 2 {
		select {
		case <-waiting:
		case n := <-seen:
			t.Fatalf("ViewBoard returned (projection count %d) while a behind write queued before it was held", n)
		case rev := <-snap:
			t.Fatalf("SessionSnapshot returned (revision %d) while a behind write queued before it was held", rev)
		}
	}
	letGo()
	if n := <-seen; n != 1 {
		t.Errorf("ViewBoard saw projection count %d, want 1 (the behind write queued before it)", n)
	}
	if rev := <-snap; rev != 2 {
		t.Errorf("SessionSnapshot saw revision %d, want 2 (the behind write queued before it)", rev)
	}
}
