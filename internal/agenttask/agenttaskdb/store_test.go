package agenttaskdb_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/agenttask"
	"github.com/webcodex/webcodex/internal/agenttask/agenttaskdb"
	"github.com/webcodex/webcodex/internal/agenttask/storetest"
)

func open(t *testing.T, path string) *agenttaskdb.Store {
	st, err := agenttaskdb.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestContract runs the suite; the second handle opens the same file, as
// a second process would.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (storetest.Store, storetest.Store) {
		path := filepath.Join(t.TempDir(), agenttaskdb.FileName)
		return open(t, path), open(t, path)
	})
}

// TestEventsTokenSurvivesRestart: a token issued before the store was
// closed is valid after it is opened again, and sees the changes made
// meanwhile: the key is in tasks.db.
func TestEventsTokenSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), agenttaskdb.FileName)
	first, err := agenttaskdb.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	base, err := agenttask.NewService(first).Events(ctx, agenttask.EventsParams{Owner: "fp", Project: "agent:local:p"})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	svc := agenttask.NewService(open(t, path))
	tk, _, err := svc.Create(ctx, agenttask.CreateParams{Owner: "fp", Project: "agent:local:p", Title: "after the restart"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	e, err := svc.Events(ctx, agenttask.EventsParams{Owner: "fp", Project: "agent:local:p", Token: base.Token})
	if err != nil || len(e.Tasks) != 1 || e.Tasks[0].ID != tk.ID {
		t.Fatalf("after a restart: %+v %v", e, err)
	}
}
