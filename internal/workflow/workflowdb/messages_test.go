package workflowdb_test

import (
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/boardtest"
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

// snap renders everything the board holds for session id (boardtest.Snap).
func (e *boardEnv) snap(t *testing.T, id string) string {
	t.Helper()
	return boardtest.Snap(t, e.st, id)
}

func (e *boardEnv) post(t *testing.T, p workflow.PostParams) workflow.Message {
	t.Helper()
	if p.SessionID == "" {
		p.SessionID = e.sess.ID
	}
	return boardtest.Post(t, e.board, p)
}

func wantKind(t *testing.T, err error, k failure.Kind) {
	t.Helper()
	if failure.KindOf(err) != k {
		t.Fatalf("got error %v, want kind %s", err, k)
	}
}
