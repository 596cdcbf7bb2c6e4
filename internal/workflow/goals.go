package workflow

import "context"

// SummaryMaxGoals bounds the correlated Goals session_summary names.
const SummaryMaxGoals = 20

// GoalRef names a Goal correlated with a session: its id and title only.
type GoalRef struct {
	ID    string `json:"goal_id"`
	Title string `json:"title"`
}

// CorrelatedGoals is the bounded list of the Goals correlated with a
// session, as session summaries and handoff briefs name them.
type CorrelatedGoals struct {
	Items     []GoalRef `json:"items"`
	Total     int       `json:"total"`
	Returned  int       `json:"returned"`
	Truncated bool      `json:"truncated"`
}

// GoalNames returns up to limit Goals correlated with session id, oldest
// correlation first, and how many there are. internal/app wires it from
// the Goal domain, which this package does not import: the correlation is
// read, never judged, here, and no session lifecycle changes a Goal.
type GoalNames func(ctx context.Context, sessionID string, limit int) ([]GoalRef, int, error)

// Correlated reads the Goals of session id through names, bounded by
// limit; nil when names is nil or the read fails (the caller then omits
// the list: absent means unknown, never none).
func Correlated(ctx context.Context, names GoalNames, id string, limit int) *CorrelatedGoals {
	if names == nil {
		return nil
	}
	refs, total, err := names(ctx, id, limit)
	if err != nil {
		return nil
	}
	if refs == nil {
		refs = []GoalRef{}
	}
	return &CorrelatedGoals{Items: refs, Total: total, Returned: len(refs), Truncated: len(refs) < total}
}
