// Package storetest is the contract suite that every [project.Store]
// implementation must pass. Implementation packages call [Run] from their own
// tests with a constructor for a fresh, empty store.
package storetest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
)

// Run runs the project.Store contract against stores returned by open. open
// must return a new, empty store for every call and arrange its cleanup.
func Run(t *testing.T, open func(t *testing.T) project.Store) {
	t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 5, 1, 12, 30, 45, 123456789, time.UTC)
	mk := func(name, root string) project.Project {
		return project.Project{ID: project.LocalID(name), Name: name, Root: root, AddedAt: at}
	}
	root := func(t *testing.T) string { return filepath.Join(t.TempDir(), "root") }

	t.Run("AddGetList", func(t *testing.T) {
		s := open(t)
		b := mk("beta", root(t))
		a := mk("alpha", root(t))
		for _, p := range []project.Project{b, a} {
			if err := s.Add(ctx, p); err != nil {
				t.Fatalf("Add(%s): %v", p.ID, err)
			}
		}
		got, err := s.Get(ctx, a.ID)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if diff := cmp.Diff(a, got); diff != "" {
			t.Errorf("Get mismatch (-want +got):\n%s", diff)
		}
		list, err := s.List(ctx)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if diff := cmp.Diff([]project.Project{a, b}, list); diff != "" {
			t.Errorf("List not ordered by id (-want +got):\n%s", diff)
		}
	})

	t.Run("WorktreeProvenance", func(t *testing.T) {
		s := open(t)
		w := mk("src-wt-1", root(t))
		w.Source, w.BaseCommit = project.LocalID("src"), strings.Repeat("a", 40)
		if err := s.Add(ctx, w); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, w.ID)
		if err != nil || !got.Worktree() {
			t.Fatalf("Get: %+v, %v", got, err)
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("worktree provenance not kept (-want +got):\n%s", diff)
		}
	})

	t.Run("ListEmpty", func(t *testing.T) {
		s := open(t)
		list, err := s.List(ctx)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(list) != 0 {
			t.Errorf("List of empty store = %v, want none", list)
		}
	})

	t.Run("AddSameRootIdempotent", func(t *testing.T) {
		s := open(t)
		p := mk("same", root(t))
		if err := s.Add(ctx, p); err != nil {
			t.Fatalf("Add: %v", err)
		}
		again := p
		again.AddedAt = at.Add(time.Hour)
		if err := s.Add(ctx, again); err != nil {
			t.Fatalf("second Add with the same root: %v, want nil", err)
		}
		got, err := s.Get(ctx, p.ID)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if !got.AddedAt.Equal(at) {
			t.Errorf("AddedAt = %v after idempotent Add, want original %v", got.AddedAt, at)
		}
	})

	t.Run("ErrConflict", func(t *testing.T) {
		s := open(t)
		p := mk("taken", root(t))
		if err := s.Add(ctx, p); err != nil {
			t.Fatalf("Add: %v", err)
		}
		other := p
		other.Root = root(t)
		err := s.Add(ctx, other)
		if got := failure.KindOf(err); got != failure.Conflict {
			t.Fatalf("Add with a different root: kind %q (%v), want %q", got, err, failure.Conflict)
		}
		got, err := s.Get(ctx, p.ID)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if got.Root != p.Root {
			t.Errorf("Root = %q after refused Add, want unchanged %q", got.Root, p.Root)
		}
	})

	t.Run("ErrUnknownProject", func(t *testing.T) {
		s := open(t)
		id := project.LocalID("missing")
		_, err := s.Get(ctx, id)
		if got := failure.KindOf(err); got != failure.UnknownProject {
			t.Fatalf("Get unknown: kind %q (%v), want %q", got, err, failure.UnknownProject)
		}
		if msg := failure.MessageOf(err); !strings.Contains(msg, id) {
			t.Errorf("Get unknown message %q does not name %q", msg, id)
		}
		err = s.Remove(ctx, id)
		if got := failure.KindOf(err); got != failure.UnknownProject {
			t.Fatalf("Remove unknown: kind %q (%v), want %q", got, err, failure.UnknownProject)
		}
	})

	t.Run("Remove", func(t *testing.T) {
		s := open(t)
		p := mk("gone", root(t))
		keep := mk("kept", root(t))
		for _, x := range []project.Project{p, keep} {
			if err := s.Add(ctx, x); err != nil {
				t.Fatalf("Add: %v", err)
			}
		}
		if err := s.Remove(ctx, p.ID); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		if _, err := s.Get(ctx, p.ID); !failure.Is(err, failure.UnknownProject) {
			t.Fatalf("Get after Remove: %v, want %q", err, failure.UnknownProject)
		}
		if err := s.Remove(ctx, p.ID); !failure.Is(err, failure.UnknownProject) {
			t.Fatalf("second Remove: %v, want %q", err, failure.UnknownProject)
		}
		list, err := s.List(ctx)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if diff := cmp.Diff([]project.Project{keep}, list); diff != "" {
			t.Errorf("List after Remove (-want +got):\n%s", diff)
		}
		// The id can be registered again, even with another root.
		p.Root = root(t)
		if err := s.Add(ctx, p); err != nil {
			t.Fatalf("Add after Remove: %v", err)
		}
	})
}
