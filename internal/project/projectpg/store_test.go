package projectpg_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/project/projectpg"
	"github.com/webcodex/webcodex/internal/project/storetest"
	"github.com/webcodex/webcodex/internal/runnerhub"
)

func open(t *testing.T) *projectpg.Store {
	t.Helper()
	s, err := projectpg.Open(context.Background(), pgtest.Open(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) project.Store { return open(t) })
}

func TestRunnersContract(t *testing.T) {
	storetest.RunRunners(t, func(t *testing.T) runnerhub.Store { return open(t) })
}

// TestPersistsAcrossReopen: a second store on the same database (another
// replica, or this one restarted) sees what the first committed.
func TestPersistsAcrossReopen(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	a, err := projectpg.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	p := project.Project{ID: project.LocalID("keep"), Name: "keep", Root: t.TempDir(), AddedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}
	if err := a.Add(ctx, p); err != nil {
		t.Fatal(err)
	}
	b, err := projectpg.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctx, p.ID); err != nil || got != p {
		t.Fatalf("Get from a second store = %+v, %v", got, err)
	}
}

// TestAddRejectsInvalidProject: a project without an id or with a relative
// root is refused and nothing is stored.
func TestAddRejectsInvalidProject(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	for name, p := range map[string]project.Project{
		"no id":         {Name: "x", Root: t.TempDir()},
		"relative root": {ID: project.LocalID("x"), Name: "x", Root: "relative/dir"},
	} {
		if err := s.Add(ctx, p); !failure.Is(err, failure.InvalidArguments) {
			t.Errorf("%s: Add = %v", name, err)
		}
	}
	if list, err := s.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("List after refused adds = %v, %v", list, err)
	}
}

// TestOpenRefusesANewerSchema: a database a newer WebCodex migrated is
// refused, naming the schema.
func TestOpenRefusesANewerSchema(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	if _, err := projectpg.Open(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO projects.schema_migrations (version, name) VALUES (999, '0999_future.sql')`); err != nil {
		t.Fatal(err)
	}
	if _, err := projectpg.Open(ctx, db); !failure.Is(err, failure.Conflict) || !strings.Contains(err.Error(), "projects") {
		t.Fatalf("Open on a newer schema: %v", err)
	}
}
