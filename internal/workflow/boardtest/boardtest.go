// Package boardtest is the contract suite that every board store
// ([workflow.BoardStore] with [workflow.SnapshotReader]) must pass, on
// SQLite (workflowdb) and on PostgreSQL (workflowpg): the board's rules
// (posts, retention, assignments and completions, observation tokens and
// waits, attention blocks, fences) driven through workflow.Board over the
// store, and the store's own contract where a test needs it. Backend
// packages call [Run] from their tests with an [Opener].
package boardtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
)

// Store is a board store under test.
type Store interface {
	workflow.BoardStore
	workflow.SnapshotReader
}

// Ledger is one backend's ledger under test: a board store over sessions
// the suite creates and closes as that backend's ledger does.
type Ledger interface {
	// Store is the current store (a new one after Reopen).
	Store() Store
	// Start creates an active session (as workflow.Service.Start does)
	// and returns its header.
	Start(t testing.TB) workflow.Session
	// Close closes session id (as workflow.Service.Close does).
	Close(t testing.TB, id string)
	// Reopen closes the store and opens the same ledger again: a
	// restart, or another replica.
	Reopen(t testing.TB)
	// Flush waits until every behind board write queued so far ended.
	Flush(t testing.TB)
}

// Replicated is a Ledger that can open another store over the same
// ledger beside the current one (another server replica). The racing
// tests spread their calls over both.
type Replicated interface {
	Ledger
	Replica(t testing.TB) Store
}

// Opener returns a new, empty ledger, cleaned up when t ends.
type Opener func(t *testing.T) Ledger

// Run runs the board contract against the ledgers open returns.
func Run(t *testing.T, open Opener) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"BoardPostListResolve", boardPostListResolve},
		{"BoardPostRejects", boardPostRejects},
		{"BoardListRejects", boardListRejects},
		{"BoardDeliveryKeyReplayAfterRestart", boardDeliveryKeyReplayAfterRestart},
		{"BoardRetention", boardRetention},
		{"OldestOrdersByClassThenSeq", oldestOrdersByClassThenSeq},
		{"BoardFullOfOpenTodosRefusesPost", boardFullOfOpenTodosRefusesPost},
		{"AssignmentFenceAndCompletion", assignmentFenceAndCompletion},
		{"CompletionRejects", completionRejects},
		{"AssignmentReplyBound", assignmentReplyBound},
		{"AssignmentRetentionLoss", assignmentRetentionLoss},
		{"RacingCompletions", racingCompletions},
		{"RacingPosts", racingPosts},
		{"CompletionPersistenceUncertain", completionPersistenceUncertain},
		{"ResolveAndAssignmentRejects", resolveAndAssignmentRejects},
		{"RetentionKeepsOpenTodoReplyingToTodo", retentionKeepsOpenTodoReplyingToTodo},
		{"DiscussionSummaryBounds", discussionSummaryBounds},
		{"ObserveDelta", observeDelta},
		{"ObservePagination", observePagination},
		{"ObserveHistoryLost", observeHistoryLost},
		{"ObserveTokenRejects", observeTokenRejects},
		{"ObserveForgedToken", observeForgedToken},
		{"ObservationKeyPerLedger", observationKeyPerLedger},
		{"ObserveWait", observeWait},
		{"ObservationRevisionProperties", observationRevisionProperties},
		{"ObserveManyWaiters", observeManyWaiters},
		{"AttentionBounds", attentionBounds},
		{"AttentionFirstAck", attentionFirstAck},
		{"AttentionFactsLost", attentionFactsLost},
		{"AttentionPossibleAgreesWithTheBlock", attentionPossibleAgreesWithTheBlock},
		{"ForgedAssignmentFences", forgedAssignmentFences},
		{"SessionSnapshot", sessionSnapshot},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open) })
	}
}

// env is a ledger with one session and a board over its store.
type env struct {
	l     Ledger
	st    Store
	board *workflow.Board
	sess  workflow.Session
}

func newEnv(t *testing.T, open Opener) *env {
	t.Helper()
	e := &env{l: open(t)}
	e.st = e.l.Store()
	e.board = workflow.NewBoard(e.st, nil)
	e.sess = e.l.Start(t)
	return e
}

// reopen restarts the store (Ledger.Reopen) and builds a new board over
// it.
func (e *env) reopen(t *testing.T) {
	t.Helper()
	e.l.Reopen(t)
	e.st = e.l.Store()
	e.board = workflow.NewBoard(e.st, nil)
}

// replicas are boards over the current store and, when the ledger is
// Replicated, over a replica of it.
func (e *env) replicas(t *testing.T) []*workflow.Board {
	t.Helper()
	boards := []*workflow.Board{e.board}
	if r, ok := e.l.(Replicated); ok {
		boards = append(boards, workflow.NewBoard(r.Replica(t), nil))
	}
	return boards
}

func (e *env) flush(t *testing.T) {
	t.Helper()
	e.l.Flush(t)
}

// snap renders everything the board holds for session id (Snap).
func (e *env) snap(t *testing.T, id string) string {
	t.Helper()
	return Snap(t, e.st, id)
}

// Snap renders everything st's board holds for session id, internal
// tracking included, so that "nothing changed" is one comparison.
func Snap(t testing.TB, st workflow.BoardStore, id string) string {
	t.Helper()
	var b strings.Builder
	err := st.ViewBoard(context.Background(), id, func(r workflow.BoardReader) error {
		st, err := r.State()
		if err != nil {
			return err
		}
		ms, _, err := r.List(workflow.MessageFilter{Limit: 10000})
		fmt.Fprintf(&b, "%+v\n", st)
		for _, m := range ms {
			fmt.Fprintf(&b, "%+v\n", m)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func (e *env) post(t *testing.T, p workflow.PostParams) workflow.Message {
	t.Helper()
	if p.SessionID == "" {
		p.SessionID = e.sess.ID
	}
	return Post(t, e.board, p)
}

// Post posts p on b ("a message" when p has no body) and fails the test
// when the post fails.
func Post(t testing.TB, b *workflow.Board, p workflow.PostParams) workflow.Message {
	t.Helper()
	if p.Body == "" {
		p.Body = "a message"
	}
	m, _, err := b.Post(context.Background(), p)
	if err != nil {
		t.Fatalf("post %+v: %v", p, err)
	}
	return m
}

func wantKind(t *testing.T, err error, k failure.Kind) {
	t.Helper()
	if failure.KindOf(err) != k {
		t.Fatalf("got error %v, want kind %s", err, k)
	}
}

// assign returns the assignment of todo and fails the test without a fence.
func (e *env) assign(t *testing.T, id string) workflow.Assignment {
	t.Helper()
	a, err := e.board.Assignment(context.Background(), e.sess.ID, id)
	if err != nil || !a.Completable || !strings.HasPrefix(a.Fence, workflow.FencePrefix) {
		t.Fatalf("assignment: %+v %v", a, err)
	}
	return a
}

func (e *env) complete(p workflow.CompleteParams) (workflow.Completion, error) {
	if p.SessionID == "" {
		p.SessionID = e.sess.ID
	}
	if p.Answer == "" {
		p.Answer = "done: fixed in calc.go"
	}
	if p.CompletionKey == "" {
		p.CompletionKey = "c1"
	}
	return e.board.Complete(context.Background(), p)
}

func (e *env) observe(t *testing.T, p workflow.ObserveParams) workflow.Observation {
	t.Helper()
	if p.SessionID == "" {
		p.SessionID = e.sess.ID
	}
	o, err := e.board.Observe(context.Background(), p)
	if err != nil {
		t.Fatalf("observe %+v: %v", p, err)
	}
	return o
}

// IDs are the ids of ms, in order.
func IDs(ms []workflow.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func (e *env) revision(t *testing.T) int64 {
	t.Helper()
	var rev int64
	if err := e.st.ViewBoard(context.Background(), e.sess.ID, func(r workflow.BoardReader) error {
		st, err := r.State()
		rev = st.ObservationRevision
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return rev
}

func (e *env) attend(t *testing.T, b *workflow.Board, acks ...string) *workflow.Attention {
	t.Helper()
	return b.Attend(context.Background(), workflow.AttendParams{SessionID: e.sess.ID, Acks: acks, Before: time.Now().Add(time.Second)})
}

func (e *env) message(t *testing.T, id string) workflow.Message {
	t.Helper()
	ms, _, err := e.board.List(context.Background(), e.sess.ID, workflow.MessageFilter{MessageID: id})
	if err != nil || len(ms) != 1 {
		t.Fatalf("message %s: %v %v", id, ms, err)
	}
	return ms[0]
}

func shownIDs(a *workflow.Attention) string {
	if a == nil {
		return "<none>"
	}
	var s []string
	for _, m := range a.Messages {
		s = append(s, m.ID)
	}
	return strings.Join(s, ",")
}
