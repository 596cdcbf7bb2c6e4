package app

import (
	"context"
	"path/filepath"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/worktree"
)

func newProjects(s *Stores) *project.Registry { return project.NewRegistry(s.Projects, nil) }

// newWorktrees is the managed-worktree manager of the app: worktrees in
// <data>/worktrees, git run through the app's sandboxed runner; a runner's
// project's worktrees on that runner (through a.Runners). It is nil
// before the app has a registry (schema-only registries).
func newWorktrees(a *App) *worktree.Manager {
	if a.Projects == nil {
		return nil
	}
	return &worktree.Manager{Projects: a.Projects, Host: a.Runner, Dir: WorktreesDir(a.Config.DataDir), Runners: a.Runners}
}

// WorktreesDir is where the managed worktrees of the data directory dataDir
// live.
func WorktreesDir(dataDir string) string { return filepath.Join(dataDir, worktree.DirName) }

// RegisterProjects registers each spec ("DIR" or "NAME=DIR"); re-registering
// the same name and directory is a no-op.
func (a *App) RegisterProjects(ctx context.Context, specs []string) ([]project.Project, error) {
	var out []project.Project
	for _, spec := range specs {
		name, dir := project.ParseSpec(spec)
		p, err := a.Projects.Register(ctx, name, dir)
		if err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}

// visibleProjects is the kernel's project resolver: a project a runner
// serves exists only for principals of that runner's authority group.
type visibleProjects struct{ r *project.Registry }

func (v visibleProjects) Get(ctx context.Context, id string) (project.Project, error) {
	p, err := v.r.Get(ctx, id)
	if err != nil || p.Owner == "" {
		return p, err
	}
	if pr, ok := auth.PrincipalFrom(ctx); !ok || pr.Owner != p.Owner {
		return project.Project{}, failure.New(failure.UnknownProject, "project %q is not registered", id)
	}
	return p, nil
}
