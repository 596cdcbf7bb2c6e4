package workflowpg

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/boardtest"
)

// replicas are two Boards, each on a pool of its own, over one database:
// two server replicas.
type replicas struct {
	url    string
	a, b   *Board
	dbA    *pgdb.DB
	boardA *workflow.Board
	boardB *workflow.Board
}

func newReplicas(t *testing.T) *replicas {
	t.Helper()
	r := &replicas{url: pgtest.URL(t)}
	r.a, r.dbA = openBoard(t, r.url)
	r.b, _ = openBoard(t, r.url)
	if string(r.a.ObservationKey()) != string(r.b.ObservationKey()) {
		t.Fatal("two replicas loaded different observation keys")
	}
	r.boardA, r.boardB = workflow.NewBoard(r.a, nil), workflow.NewBoard(r.b, nil)
	return r
}

// TestUpdateBoardLocksTheBoard: while one replica's UpdateBoard holds a
// session's board, another replica's post to it waits for the row lock
// (pg_stat_activity shows it waiting), then goes on and numbers its
// message after the first one's. Without the FOR UPDATE it would not
// wait, and both would take the same sequence number.
func TestUpdateBoardLocksTheBoard(t *testing.T) {
	ctx := context.Background()
	r := newReplicas(t)
	sess := createSession(t, r.dbA)
	boardtest.Post(t, r.boardA, workflow.PostParams{SessionID: sess.ID, Kind: workflow.MessageNote, Body: "the board row exists"})
	h := holdPost(t, r.a, sess)
	second := make(chan error, 1)
	var other workflow.Message
	go func() {
		var err error
		other, _, err = r.boardB.Post(ctx, workflow.PostParams{SessionID: sess.ID, Kind: workflow.MessageNote, Body: "waits"})
		second <- err
	}()
	pgtest.AwaitLockWait(t, r.dbA, second, "the other replica's post")
	held := h.end(t)
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if held.Seq != 2 || other.Seq != 3 || other.ObservationRevision != 3 {
		t.Fatalf("sequence numbers %d then %d (revision %d), want 2 then 3", held.Seq, other.Seq, other.ObservationRevision)
	}
}

// heldPost is a post held inside its UpdateBoard, after it judged the
// board's state.
type heldPost struct {
	release func()
	result  chan error
	msg     workflow.Message
}

// holdPost starts a post of a note to sess on b that reads the board's
// state and then waits, holding its transaction, until end (at the
// latest until t ends: closing the pool would otherwise wait for its
// connection forever). It returns once the post waits.
func holdPost(t *testing.T, b *Board, sess workflow.Session) *heldPost {
	t.Helper()
	inside, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h := &heldPost{release: func() { once.Do(func() { close(release) }) }, result: make(chan error, 1)}
	t.Cleanup(h.release)
	go func() {
		h.result <- b.UpdateBoard(context.Background(), sess.ID, func(w workflow.BoardWriter) error {
			st, err := w.State()
			if err != nil {
				return err
			}
			close(inside)
			<-release
			if st.Lifecycle != workflow.Active {
				return failure.New(failure.SessionClosed, "closed")
			}
			st.Posted++
			st.ObservationRevision++
			st.Retained++
			h.msg = workflow.Message{ID: workflow.NewMessageID(), SessionID: sess.ID, Seq: st.Posted, CreatedAt: sess.CreatedAt,
				Kind: workflow.MessageNote, Status: workflow.MessageOpen, Priority: workflow.PriorityNormal, Body: "held",
				Tags: []string{}, ObservationRevision: st.ObservationRevision}
			if err := w.Insert(h.msg); err != nil {
				return err
			}
			return w.SetState(st)
		})
	}()
	select {
	case <-inside:
	case err := <-h.result:
		t.Fatalf("the held post ended: %v", err)
	}
	return h
}

// end lets the held post commit and returns its message.
func (h *heldPost) end(t *testing.T) workflow.Message {
	t.Helper()
	h.release()
	if err := <-h.result; err != nil {
		t.Fatal(err)
	}
	return h.msg
}

// TestUpdateBoardHoldsTheSessionOpen: while a board change is decided,
// the session cannot close (its row is held FOR SHARE): a close waits,
// so a post judged on an active session commits before the close, as
// workflow.db's single writer orders them. Without the share lock the
// close would commit first and the post land in a closed session.
func TestUpdateBoardHoldsTheSessionOpen(t *testing.T) {
	ctx := context.Background()
	r := newReplicas(t)
	sess := createSession(t, r.dbA)
	closing := closeArgs(t, r.dbA, sess.ID)
	h := holdPost(t, r.a, sess)
	closed := make(chan error, 1)
	go func() {
		_, err := r.dbA.Pool.Exec(ctx, qCloseSession, closing...)
		closed <- err
	}()
	pgtest.AwaitLockWait(t, r.dbA, closed, "the close")
	h.end(t)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if st, err := r.boardB.State(ctx, sess.ID); err != nil || st.Lifecycle != workflow.Closed || st.Posted != 1 {
		t.Fatalf("state %+v %v: want closed with the held post", st, err)
	}
}

// listen opens a connection of its own LISTENing on BoardChannel.
func listen(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, `LISTEN `+BoardChannel); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestNotifyOnCommitOnly: a committed post notifies BoardChannel with its
// session id alone; a change that rolls back and a replayed post (no
// change) notify nothing: the next notification is the next commit's. The
// same holds for behind writes: a committed one that advanced the
// revision notifies, one rolled back to its savepoint does not.
func TestNotifyOnCommitOnly(t *testing.T) {
	ctx := context.Background()
	r := newReplicas(t)
	conn := listen(t, r.url)
	sess, marker := createSession(t, r.dbA), createSession(t, r.dbA)
	next := func() *pgconn.Notification {
		t.Helper()
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	p := workflow.PostParams{SessionID: sess.ID, Kind: workflow.MessageNote, Body: "committed", DeliveryKey: "k"}
	boardtest.Post(t, r.boardA, p)
	if n := next(); n.Channel != BoardChannel || n.Payload != sess.ID {
		t.Fatalf("notification %+v, want %s on %s", n, sess.ID, BoardChannel)
	}
	// A change that rolls back.
	refused := errors.New("refused after the change")
	err := r.b.UpdateBoard(ctx, sess.ID, func(w workflow.BoardWriter) error {
		st, err := w.State()
		if err != nil {
			return err
		}
		st.ObservationRevision++
		if err := w.SetState(st); err != nil {
			return err
		}
		return refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("the refused update: %v", err)
	}
	// A replay changes nothing.
	if _, replayed, err := r.boardB.Post(ctx, p); err != nil || !replayed {
		t.Fatalf("replay: %v %v", replayed, err)
	}
	boardtest.Post(t, r.boardB, workflow.PostParams{SessionID: marker.ID, Kind: workflow.MessageNote, Body: "marker"})
	if n := next(); n.Payload != marker.ID {
		t.Fatalf("after a rollback and a replay the next notification is %+v, want the marker's %s", n, marker.ID)
	}
	// A behind write that advances the revision notifies once its batch
	// commits; one rolled back to its savepoint does not.
	bump := func(fail error) func(workflow.BoardWriter) error {
		return func(w workflow.BoardWriter) error {
			st, err := w.State()
			if err != nil {
				return err
			}
			st.ObservationRevision++
			if err := w.SetState(st); err != nil {
				return err
			}
			return fail
		}
	}
	for _, fail := range []error{refused, nil} {
		if err := r.a.UpdateBoardBehind(ctx, marker.ID, bump(fail), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.a.UpdateBoardBehind(ctx, sess.ID, bump(nil), nil); err != nil {
		t.Fatal(err)
	}
	if err := r.a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := next(); n.Payload != marker.ID {
		t.Fatalf("the committed behind write's notification: %+v, want %s", n, marker.ID)
	}
	if n := next(); n.Payload != sess.ID {
		t.Fatalf("the next behind write's notification: %+v, want %s (one per commit)", n, sess.ID)
	}
}
