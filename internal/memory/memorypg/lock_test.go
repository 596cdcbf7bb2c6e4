package memorypg

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/memory"
	"github.com/webcodex/webcodex/internal/memory/storetest"
)

// TestOpenRefusesANewerSchema: a database a newer WebCodex migrated is
// refused, naming the schema.
func TestOpenRefusesANewerSchema(t *testing.T) {
	ctx := context.Background()
	_, db := openStore(t)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO memory.schema_migrations (version, name) VALUES (999, '0999_future.sql')`); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, db); !failure.Is(err, failure.Conflict) || !strings.Contains(err.Error(), "memory") {
		t.Fatalf("Open on a newer schema: %v", err)
	}
}

// TestApplyLocksTheScope: two stores (two replicas) on one database; the
// second Apply of the scope must wait for the first to commit before it
// reads, so its compare-and-swap sees the winner's revision. Without the
// scope lock the second decides over the stale entry and both win.
func TestApplyLocksTheScope(t *testing.T) {
	ctx := context.Background()
	a, db := openStore(t)
	b, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	scope := storetest.ScopeA
	r0, err := memory.NewService(a, nil).Set(ctx, memory.SetParams{Scope: scope, Key: "k", Body: "v0"})
	if err != nil {
		t.Fatal(err)
	}
	inside, release := make(chan struct{}), make(chan struct{})
	// A failing test must still let the first Apply end, or closing the
	// pool would wait for its connection forever.
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	var entered sync.Once
	first := make(chan error, 1)
	go func() {
		_, err := a.Apply(ctx, scope, "k", func(cur *memory.Entry, n int) (memory.Change, error) {
			entered.Do(func() { close(inside); <-release })
			e := *cur
			e.Body, e.Generation, e.Revision = "first", 2, fmt.Sprintf("mrev_2_%024x", 1)
			return memory.Change{Op: memory.OpPut, Entry: e}, nil
		})
		first <- err
	}()
	<-inside
	second := make(chan error, 1)
	go func() {
		_, err := memory.NewService(b, nil).Set(ctx, memory.SetParams{Scope: scope, Key: "k", Body: "second", ExpectedRevision: r0.Entry.Revision})
		second <- err
	}()
	// The second Apply must be waiting on the lock before the first may
	// finish: watch the database until a backend waits for a lock.
	for {
		var waiting int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-second:
			t.Fatalf("the second Apply finished (%v) while the first held the scope", err)
		default:
		}
	}
	letGo()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	err = <-second
	if !failure.Is(err, failure.RevisionConflict) || failure.DetailOf(err)["current_revision"] != fmt.Sprintf("mrev_2_%024x", 1) {
		t.Fatalf("the second set: %v %v, want a conflict naming the first's revision", err, failure.DetailOf(err))
	}
	if e, _, err := b.Get(ctx, scope.ID, "k"); err != nil || e.Body != "first" {
		t.Fatalf("stored %+v %v", e, err)
	}
}
