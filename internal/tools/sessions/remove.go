package sessions

import (
	"context"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/workflow"
)

// worktreeToRemove is the managed worktree of the session id that
// close_session remove_worktree removes, checked (where its files are: on
// the runner serving it, for a runner's project) to be removable without
// force. It changes nothing.
//
// Errors: failure.NotAWorktree when the session's project is an ordinary
// project; failure.ProjectInUse when another session on the worktree is
// active; operation_failed when the worktree has changes or untracked
// files (git worktree remove's refusal); runner_unavailable when its
// runner is not connected (nothing sent); outcome_unknown when the
// runner's answer was lost.
func (t *Tools) worktreeToRemove(ctx context.Context, sessionID string) (project.Project, error) {
	if t.Worktrees == nil {
		return project.Project{}, failure.New(failure.Unavailable, "managed worktrees are not available on this server")
	}
	sess, err := t.Sessions.Get(ctx, sessionID)
	if err != nil {
		return project.Project{}, err
	}
	p, err := t.Worktrees.Projects.Get(ctx, sess.Project)
	if err != nil {
		return project.Project{}, err
	}
	if !p.Worktree() {
		return project.Project{}, failure.New(failure.NotAWorktree, "project %s of session %s is not a managed worktree", p.ID, sess.ID)
	}
	active, _, err := t.Sessions.List(ctx, workflow.ListFilter{Project: p.ID, Lifecycle: workflow.Active, Limit: 2})
	if err != nil {
		return project.Project{}, err
	}
	for _, s := range active {
		if s.ID != sess.ID {
			return project.Project{}, failure.New(failure.ProjectInUse, "worktree %s has another active Workflow Session (%s); close it first", p.ID, s.ID)
		}
	}
	return p, t.Worktrees.CheckRemovable(ctx, p)
}
