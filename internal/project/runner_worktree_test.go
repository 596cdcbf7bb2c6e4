package project_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
)

// A runner's worktree is a project of that runner and owner, recording its
// source and base; bad inputs register nothing.
func TestRegisterRunnerWorktree(t *testing.T) {
	ctx := context.Background()
	r := openRegistry(t, filepath.Join(t.TempDir(), "p.db"))
	src, err := r.RegisterRunner(ctx, "box", "local", "demo", "/srv/demo")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what       string
		source     project.Project
		name, root string
		kind       failure.Kind
	}{
		{"a local source", project.Project{ID: "agent:local:x", Name: "x"}, "x-wt-1", "/w/x-wt-1", failure.InvalidArguments},
		{"a bad name", src, "../up", "/w/up", failure.InvalidArguments},
		{"no root", src, "demo-wt-1", "", failure.InvalidArguments},
		{"a long root", src, "demo-wt-1", "/" + strings.Repeat("a", project.MaxPathBytes), failure.InvalidArguments},
	} {
		if _, err := r.RegisterRunnerWorktree(ctx, c.source, c.name, c.root, "abc"); !failure.Is(err, c.kind) {
			t.Errorf("%s: %v, want %s", c.what, err, c.kind)
		}
		if ps, _ := r.List(ctx); len(ps) != 1 {
			t.Errorf("%s registered %d projects", c.what, len(ps))
		}
	}
	p, err := r.RegisterRunnerWorktree(ctx, src, "demo-wt-1", "/w/demo-wt-1", "abc")
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != "agent:box:demo-wt-1" || p.Runner != "box" || p.Owner != "local" || p.Source != src.ID || p.BaseCommit != "abc" || !p.Worktree() {
		t.Fatalf("the runner's worktree: %+v", p)
	}
	if _, err := r.RegisterRunnerWorktree(ctx, src, "demo-wt-1", "/w/other", "def"); !failure.Is(err, failure.Conflict) {
		t.Fatalf("a taken name: %v", err)
	}
	if got, _ := r.Get(ctx, p.ID); got.Root != "/w/demo-wt-1" {
		t.Fatalf("a refused registration changed the project: %+v", got)
	}
}
