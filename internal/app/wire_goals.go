package app

import (
	"context"

	"github.com/webcodex/webcodex/internal/goal"
	"github.com/webcodex/webcodex/internal/workflow"
)

// newGoals is the Goal service over goals.db, or nil for an app without
// stores (a registry built only to list the tools).
func newGoals(a *App) *goal.Service {
	if a.Stores == nil || a.Stores.Goals == nil {
		return nil
	}
	return goal.NewService(a.Stores.Goals, nil)
}

// goalNames is the narrow reader session_summary and the handoff briefs
// name correlated Goals with (the workflow domain imports no goal
// package); nil without a Goal store.
func goalNames(svc *goal.Service) workflow.GoalNames {
	if svc == nil {
		return nil
	}
	return func(ctx context.Context, sessionID string, limit int) ([]workflow.GoalRef, int, error) {
		refs, total, err := svc.OfSession(ctx, sessionID, limit)
		if err != nil {
			return nil, 0, err
		}
		out := make([]workflow.GoalRef, len(refs))
		for i, r := range refs {
			out[i] = workflow.GoalRef{ID: r.ID, Title: r.Title}
		}
		return out, total, nil
	}
}

// GoalNames is goalNames over the Goal store of s, for the offline
// commands that build the same briefs as the tools (nil without one).
func GoalNames(s *Stores) workflow.GoalNames {
	if s == nil || s.Goals == nil {
		return nil
	}
	return goalNames(goal.NewService(s.Goals, nil))
}
