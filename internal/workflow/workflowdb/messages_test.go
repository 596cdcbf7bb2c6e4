package workflowdb_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// boardEnv is a real ledger file with one session and a board over it.
type boardEnv struct {
	path  string
	st    *workflowdb.Store
	svc   *workflow.Service
	board *workflow.Board
	sess  workflow.Session
}

func newBoardEnv(t *testing.T) *boardEnv {
	t.Helper()
	e := &boardEnv{path: filepath.Join(t.TempDir(), "workflow.db")}
	e.open(t)
	e.sess = start(t, e.svc)
	return e
}

func (e *boardEnv) open(t *testing.T) {
	t.Helper()
	e.st = open(t, e.path)
	e.svc = workflow.NewService(e.st, nil)
	e.board = workflow.NewBoard(e.st, nil)
}

// reopen closes the store and opens the same file again (a restart).
func (e *boardEnv) reopen(t *testing.T) {
	t.Helper()
	if err := e.st.Close(); err != nil {
		t.Fatal(err)
	}
	e.open(t)
}

// snap renders everything the board holds for session id, internal
// tracking included, so that "nothing changed" is one comparison.
func (e *boardEnv) snap(t *testing.T, id string) string {
	t.Helper()
	var b strings.Builder
	err := e.st.ViewBoard(context.Background(), id, func(r workflow.BoardReader) error {
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

func (e *boardEnv) post(t *testing.T, p workflow.PostParams) workflow.Message {
	t.Helper()
	if p.SessionID == "" {
		p.SessionID = e.sess.ID
	}
	if p.Body == "" {
		p.Body = "a message"
	}
	m, _, err := e.board.Post(context.Background(), p)
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
func (e *boardEnv) assign(t *testing.T, id string) workflow.Assignment {
	t.Helper()
	a, err := e.board.Assignment(context.Background(), e.sess.ID, id)
	if err != nil || !a.Completable || !strings.HasPrefix(a.Fence, workflow.FencePrefix) {
		t.Fatalf("assignment: %+v %v", a, err)
	}
	return a
}

func (e *boardEnv) complete(p workflow.CompleteParams) (workflow.Completion, error) {
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
