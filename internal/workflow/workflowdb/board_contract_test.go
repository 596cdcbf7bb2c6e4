package workflowdb_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/boardtest"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// sqliteLedger is a workflow.db file under the board contract.
type sqliteLedger struct {
	path string
	st   *workflowdb.Store
}

func (l *sqliteLedger) Store() boardtest.Store { return l.st }

func (l *sqliteLedger) Start(t testing.TB) workflow.Session {
	return start(t, workflow.NewService(l.st, nil))
}

func (l *sqliteLedger) Close(t testing.TB, id string) {
	t.Helper()
	if _, _, err := workflow.NewService(l.st, nil).Close(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

// Reopen closes the store and opens the file again (a restart).
func (l *sqliteLedger) Reopen(t testing.TB) {
	t.Helper()
	if err := l.st.Close(); err != nil {
		t.Fatal(err)
	}
	l.st = open(t, l.path)
}

func (l *sqliteLedger) Flush(t testing.TB) {
	t.Helper()
	if err := l.st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestBoardContract runs the board contract suite on workflow.db.
func TestBoardContract(t *testing.T) {
	boardtest.Run(t, func(t *testing.T) boardtest.Ledger {
		l := &sqliteLedger{path: filepath.Join(t.TempDir(), "workflow.db")}
		l.st = open(t, l.path)
		return l
	})
}
