package project

import (
	"context"

	"github.com/webcodex/webcodex/internal/failure"
)

// RegisterRunnerWorktree registers the managed worktree name that the
// runner serving source made at root (a path on the runner's machine) at
// commit base: id [RunnerID] of the runner and name, the runner and owner
// of source (so only the runner owner's group sees it), source's sandbox
// mode. Nothing is checked on this host's filesystem.
//
// Errors: [failure.InvalidArguments] for a source that is not a runner's
// project, an invalid name or a root not of 1-[MaxPathBytes] bytes;
// [failure.Conflict] when the id is taken.
func (r *Registry) RegisterRunnerWorktree(ctx context.Context, source Project, name, root, base string) (Project, error) {
	if source.Runner == "" || source.Owner == "" {
		return Project{}, failure.New(failure.InvalidArguments, "project %s is not a runner's project", source.ID)
	}
	if err := ValidateName(name); err != nil {
		return Project{}, err
	}
	if root == "" || len(root) > MaxPathBytes {
		return Project{}, failure.New(failure.InvalidArguments, "a runner worktree needs a root of 1-%d bytes", MaxPathBytes)
	}
	id := RunnerID(source.Runner, name)
	if _, err := r.store.Get(ctx, id); err == nil {
		return Project{}, failure.New(failure.Conflict, "project %s is already registered", id)
	}
	p := Project{ID: id, Name: name, Root: root, AddedAt: r.now().UTC().Round(0), Sandbox: source.Sandbox,
		Source: source.ID, BaseCommit: base, Runner: source.Runner, Owner: source.Owner}
	if err := r.store.Add(ctx, p); err != nil {
		return Project{}, err
	}
	return r.store.Get(ctx, p.ID)
}
