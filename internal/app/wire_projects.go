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

// visibleProjects is the kernel's project resolver, and what enumerates
// projects for a principal: a project a runner serves exists only for
// principals of that runner's authority group, and a principal bound to
// one project (Principal.Project: a project credential, a project share, an
// OAuth grant for one project) reaches that project and its managed
// worktrees only. A project share reaches its project even when a runner
// of another authority group serves it: the share was made for it.
type visibleProjects struct{ r *project.Registry }

// Get returns the project id names, as the principal in ctx may see it.
//
// Errors: failure.PermissionDenied, naming the bound project, when the
// principal is bound to another project (whether or not id exists: no
// existence oracle); failure.UnknownProject when id is not registered or
// is a runner's project of another authority group.
func (v visibleProjects) Get(ctx context.Context, id string) (project.Project, error) {
	pr, ok := auth.PrincipalFrom(ctx)
	if ok && pr.Project != "" && id != pr.Project {
		// A managed worktree of the bound project is part of it.
		if p, err := v.r.Get(ctx, id); err != nil || p.Source != pr.Project {
			return project.Project{}, boundRefusal(pr)
		}
	}
	p, err := v.r.Get(ctx, id)
	if err != nil || p.Owner == "" {
		return p, err
	}
	if !ok || !reaches(pr, p) {
		return project.Project{}, failure.New(failure.UnknownProject, "project %q is not registered", id)
	}
	return p, nil
}

// List returns the registered projects the principal in ctx reaches, in
// the registry's order; every project without a principal (the local
// operator).
func (v visibleProjects) List(ctx context.Context) ([]project.Project, error) {
	all, err := v.r.List(ctx)
	if err != nil {
		return nil, err
	}
	pr, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return all, nil
	}
	out := make([]project.Project, 0, len(all))
	for _, p := range all {
		if pr.Project != "" && p.ID != pr.Project && p.Source != pr.Project {
			continue
		}
		if p.Owner == "" || reaches(pr, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// reaches reports whether pr may see p, a project a runner of p.Owner's
// authority group serves: pr belongs to that group, or pr is a project
// share of exactly p (or of p's source, for a managed worktree).
func reaches(pr auth.Principal, p project.Project) bool {
	if pr.Owner == p.Owner {
		return true
	}
	return pr.Kind == auth.KindProjectShare && (p.ID == pr.Project || p.Source == pr.Project)
}

// boundRefusal is the refusal of another project to a principal bound to
// one (the other id is not echoed).
func boundRefusal(pr auth.Principal) error {
	return failure.New(failure.PermissionDenied, "this credential reaches only project %q", pr.Project).
		WithDetail("credential_project", pr.Project)
}
