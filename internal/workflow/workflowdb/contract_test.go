package workflowdb_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"

	"github.com/webcodex/webcodex/internal/sqlitedb"
	"github.com/webcodex/webcodex/internal/workflow/storetest"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// ledger is a data directory's workflow.db for the contract suite.
type ledger struct {
	path string
	// paths maps each store opened to its ledger's path (Crash copies it).
	paths map[storetest.Store]string
}

func newLedger(t *testing.T) storetest.Ledger {
	return &ledger{path: filepath.Join(t.TempDir(), "workflow.db"), paths: map[storetest.Store]string{}}
}

func TestContract(t *testing.T) { storetest.Run(t, newLedger) }

func (l *ledger) Open(t *testing.T) storetest.Store {
	st := open(t, l.path)
	l.paths[st] = l.path
	return st
}

func (l *ledger) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	st, err := workflowdb.Open(context.Background(), l.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.DB().Writer.Do(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, q, args...)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func (l *ledger) Set(t *testing.T, table, column string, value any, id string, seq int64) {
	t.Helper()
	if table == "events" {
		l.exec(t, `UPDATE events SET `+column+` = ? WHERE session_id = ? AND seq = ?`, value, id, seq)
		return
	}
	l.exec(t, `UPDATE sessions SET `+column+` = ? WHERE session_id = ?`, value, id)
}

func (l *ledger) Discarded(t *testing.T, key string) (reason, body string) {
	t.Helper()
	db, err := sqlitedb.OpenReadOnly(l.path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`SELECT reason, body FROM discarded_rows WHERE row_key = ?`, key).Scan(&reason, &body); err != nil {
		t.Fatalf("discarded row %s: %v", key, err)
	}
	return reason, body
}

// Hold holds the store's writer: every write of the store waits.
func (l *ledger) Hold(t *testing.T, st storetest.Store, _ string) func() {
	entered, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- st.(*workflowdb.Store).DB().Writer.Do(context.Background(), func(context.Context, *sql.Tx) error { close(entered); <-release; return nil })
	}()
	<-entered
	var once sync.Once
	let := func() {
		once.Do(func() {
			close(release)
			if err := <-held; err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(let)
	return let
}

// Crash copies the data directory of st as it is now (what a kill -9
// leaves: written pages are in the files, nothing queued in memory is)
// and opens a store on the copy.
func (l *ledger) Crash(t *testing.T, st storetest.Store) storetest.Store {
	dir := t.TempDir()
	copyDir(t, filepath.Dir(l.paths[st]), dir)
	path := filepath.Join(dir, "workflow.db")
	after := open(t, path)
	l.paths[after] = path
	return after
}
