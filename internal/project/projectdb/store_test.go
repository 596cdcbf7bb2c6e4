package projectdb_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/project/projectdb"
	"github.com/webcodex/webcodex/internal/project/storetest"
	"github.com/webcodex/webcodex/internal/runnerhub"
)

func mustOpen(t *testing.T, path string) *projectdb.Store {
	t.Helper()
	s, err := projectdb.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) project.Store {
		s := mustOpen(t, filepath.Join(t.TempDir(), projectdb.FileName))
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return s
	})
}

func TestRunnersContract(t *testing.T) {
	storetest.RunRunners(t, func(t *testing.T) runnerhub.Store {
		s := mustOpen(t, filepath.Join(t.TempDir(), projectdb.FileName))
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestPersistsAcrossReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), projectdb.FileName)
	p := project.Project{
		ID:      project.LocalID("keep"),
		Name:    "keep",
		Root:    t.TempDir(),
		AddedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
	}
	gone := project.Project{ID: project.LocalID("gone"), Name: "gone", Root: t.TempDir(), AddedAt: p.AddedAt}

	s := mustOpen(t, path)
	for _, x := range []project.Project{p, gone} {
		if err := s.Add(ctx, x); err != nil {
			t.Fatalf("Add(%s): %v", x.ID, err)
		}
	}
	if err := s.Remove(ctx, gone.ID); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = mustOpen(t, path)
	defer s.Close()
	list, err := s.List(ctx)
	if err != nil {
		t.Fatalf("List after reopen: %v", err)
	}
	if diff := cmp.Diff([]project.Project{p}, list); diff != "" {
		t.Errorf("List after reopen (-want +got):\n%s", diff)
	}
	if _, err := s.Get(ctx, gone.ID); !failure.Is(err, failure.UnknownProject) {
		t.Errorf("Get removed project after reopen: %v, want %q", err, failure.UnknownProject)
	}
}

func TestAddRejectsInvalidProject(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), projectdb.FileName))
	defer s.Close()
	for name, p := range map[string]project.Project{
		"no id":         {Name: "x", Root: t.TempDir()},
		"relative root": {ID: project.LocalID("x"), Name: "x", Root: "relative/dir"},
	} {
		if err := s.Add(ctx, p); !failure.Is(err, failure.InvalidArguments) {
			t.Errorf("%s: Add = %v, want %q", name, err, failure.InvalidArguments)
		}
	}
	list, err := s.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list) != 0 {
		t.Errorf("List = %v after refused adds, want none", list)
	}
}

func TestAddZeroTimeStoresNow(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), projectdb.FileName))
	defer s.Close()
	before := time.Now()
	p := project.Project{ID: project.LocalID("now"), Name: "now", Root: t.TempDir()}
	if err := s.Add(ctx, p); err != nil {
		t.Fatalf("Add: %v", err)
	}
	got, err := s.Get(ctx, p.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.AddedAt.Before(before.Add(-time.Second)) || got.AddedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("AddedAt = %v, want about %v", got.AddedAt, before)
	}
}

// TestGetSeesAnotherProcessChanges holds Get's cache to the file: a
// project removed and re-added with another root through a second Store
// on the same file (as `webcodex project remove/add` does from another
// process) is seen by the serving Store's next Get.
func TestGetSeesAnotherProcessChanges(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), projectdb.FileName)
	serving, cli := mustOpen(t, path), mustOpen(t, path)
	defer serving.Close()
	defer cli.Close()
	p := project.Project{ID: project.LocalID("moving"), Name: "moving", Root: t.TempDir(), AddedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if err := serving.Add(ctx, p); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second Get is answered from the cache
		if got, err := serving.Get(ctx, p.ID); err != nil || got != p {
			t.Fatalf("Get = %+v, %v; want %+v", got, err, p)
		}
	}
	if err := cli.Remove(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := serving.Get(ctx, p.ID); !failure.Is(err, failure.UnknownProject) {
		t.Fatalf("Get after another process removed it: %v, want %q", err, failure.UnknownProject)
	}
	moved := p
	moved.Root = t.TempDir()
	if err := cli.Add(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if got, err := serving.Get(ctx, p.ID); err != nil || got != moved {
		t.Fatalf("Get after another process re-added it = %+v, %v; want %+v", got, err, moved)
	}
}
