package goal

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/redact"
)

// Store persists Goals and their session associations. Every mutation is
// durable when it returns nil.
type Store interface {
	// Create stores g unless its owner already holds max Goals
	// (failure.GoalLimitReached).
	Create(ctx context.Context, g Goal, max int) error
	// Get returns a Goal or failure.UnknownGoalID.
	Get(ctx context.Context, id string) (Goal, error)
	// List returns a page of f.Owner's Goals, newest update first, and
	// their total.
	List(ctx context.Context, f ListFilter) ([]Goal, int, error)
	// Update reads Goal id and calls fn on it inside one transaction;
	// the Goal as fn left it is stored when fn returns changed and no
	// error. It returns the stored Goal.
	Update(ctx context.Context, id string, fn func(g *Goal) (changed bool, err error)) (Goal, error)
	// Associate records a unless it exists (then it returns the stored
	// association and changed false) or the Goal already correlates max
	// sessions (failure.GoalLimitReached).
	Associate(ctx context.Context, a Association, max int) (stored Association, changed bool, err error)
	// Sessions returns a Goal's associations, oldest first.
	Sessions(ctx context.Context, goalID string) ([]Association, error)
	// OfSession returns up to limit Goals associated with a session,
	// oldest association first, and how many there are.
	OfSession(ctx context.Context, sessionID string, limit int) ([]Ref, int, error)
}

// ListFilter selects Goals.
type ListFilter struct {
	// Owner is the authority group whose Goals are listed; AllOwners
	// lists every group's (the operator CLI only).
	Owner     string
	AllOwners bool
	Project   string // "" for every project (and none)
	Status    Status // "" for every status
	Limit     int
	Offset    int
}

// Service is the Goal API of the tools and the CLI.
type Service struct {
	store Store
	now   func() time.Time
}

// NewService returns a Service over store; now may be nil (time.Now).
func NewService(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now}
}

// CreateParams describe a new Goal.
type CreateParams struct {
	Owner     string
	Project   string
	Title     string
	Objective string
}

// text checks a field's bound and returns it redacted, still within the
// bound (a redaction marker longer than the secret it replaces is cut).
func text(name, s string, minChars, maxChars int) (string, error) {
	n := utf8.RuneCountInString(s)
	if utf8.RuneCountInString(strings.TrimSpace(s)) < minChars || n > maxChars {
		return "", errorf("%s must be %d-%d characters", name, minChars, maxChars)
	}
	return redact.Bounded(s, maxChars), nil
}

// Create stores a new active Goal at generation 1.
func (s *Service) Create(ctx context.Context, p CreateParams) (Goal, error) {
	if p.Owner == "" {
		return Goal{}, errorf("a goal needs an owner")
	}
	title, err := text("title", p.Title, 1, TitleMaxChars)
	if err != nil {
		return Goal{}, err
	}
	objective, err := text("objective", p.Objective, 0, ObjectiveMaxChars)
	if err != nil {
		return Goal{}, err
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	g := Goal{ID: NewID(), Owner: p.Owner, Project: p.Project, Title: title, Objective: objective,
		Status: Active, Generation: 1, Steps: []Step{}, CreatedAt: now, UpdatedAt: now}
	g.Revision = revisionOf(g)
	if err := s.store.Create(ctx, g, MaxGoalsPerOwner); err != nil {
		return Goal{}, err
	}
	return g, nil
}

// Get returns owner's Goal id. A Goal of another owner is reported as
// unknown, never disclosed.
func (s *Service) Get(ctx context.Context, owner, id string) (Goal, error) {
	if _, err := ParseID(id); err != nil {
		return Goal{}, err
	}
	g, err := s.store.Get(ctx, id)
	if err != nil {
		return Goal{}, err
	}
	if g.Owner != owner {
		return Goal{}, unknown(id)
	}
	return g, nil
}

// List returns a page of f.Owner's Goals and their total.
func (s *Service) List(ctx context.Context, f ListFilter) ([]Goal, int, error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, 0, errorf("status must be active, blocked, completed or abandoned")
	}
	if f.Limit < 0 || f.Limit > ListMax || f.Offset < 0 {
		return nil, 0, errorf("limit must be 0-%d and offset non-negative", ListMax)
	}
	if f.Owner == "" && !f.AllOwners {
		return nil, 0, errorf("a goal list needs an owner")
	}
	if f.Limit == 0 {
		f.Limit = ListDefault
	}
	return s.store.List(ctx, f)
}

// Inspect returns any owner's Goal id and its associations, for the
// operator CLI (never for a tool: tools see only their caller's Goals).
func (s *Service) Inspect(ctx context.Context, id string) (Goal, []Association, error) {
	if _, err := ParseID(id); err != nil {
		return Goal{}, nil, err
	}
	g, err := s.store.Get(ctx, id)
	if err != nil {
		return Goal{}, nil, err
	}
	as, err := s.store.Sessions(ctx, id)
	return g, as, err
}

// Sessions returns the associations of owner's Goal id.
func (s *Service) Sessions(ctx context.Context, owner, id string) ([]Association, error) {
	if _, err := s.Get(ctx, owner, id); err != nil {
		return nil, err
	}
	return s.store.Sessions(ctx, id)
}

// UpdateParams change a Goal under compare-and-swap: nil fields are kept.
type UpdateParams struct {
	Owner, ID        string
	ExpectedRevision string
	Title            *string
	Objective        *string
	Status           *Status
}

// mutate runs fn on owner's Goal id under expected (a revision, or ""
// for no compare), and bumps generation and revision when fn changed it.
func (s *Service) mutate(ctx context.Context, owner, id, expected string, fn func(g *Goal) bool) (Goal, bool, error) {
	if _, err := ParseID(id); err != nil {
		return Goal{}, false, err
	}
	changed := false
	g, err := s.store.Update(ctx, id, func(g *Goal) (bool, error) {
		if g.Owner != owner {
			return false, unknown(id)
		}
		if expected != "" && g.Revision != expected {
			return false, conflict(*g, expected)
		}
		if !fn(g) {
			return false, nil
		}
		g.Generation++
		g.UpdatedAt = s.now().UTC().Truncate(time.Millisecond)
		g.Revision = revisionOf(*g)
		changed = true
		return true, nil
	})
	return g, changed, err
}

// Update changes title, objective or status. A stale expected revision
// is failure.RevisionConflict with the current revision, and changes
// nothing. An update that changes nothing keeps the revision.
func (s *Service) Update(ctx context.Context, p UpdateParams) (Goal, bool, error) {
	if _, err := ParseRevision(p.ExpectedRevision); err != nil {
		return Goal{}, false, err
	}
	var title, objective string
	var err error
	if p.Title != nil {
		if title, err = text("title", *p.Title, 1, TitleMaxChars); err != nil {
			return Goal{}, false, err
		}
	}
	if p.Objective != nil {
		if objective, err = text("objective", *p.Objective, 0, ObjectiveMaxChars); err != nil {
			return Goal{}, false, err
		}
	}
	if p.Status != nil && !p.Status.Valid() {
		return Goal{}, false, errorf("status must be active, blocked, completed or abandoned")
	}
	return s.mutate(ctx, p.Owner, p.ID, p.ExpectedRevision, func(g *Goal) bool {
		before := *g
		if p.Title != nil {
			g.Title = title
		}
		if p.Objective != nil {
			g.Objective = objective
		}
		if p.Status != nil {
			g.Status = *p.Status
		}
		return g.Title != before.Title || g.Objective != before.Objective || g.Status != before.Status
	})
}

// CheckpointParams record a Goal's step progress and recovery summary.
type CheckpointParams struct {
	Owner, ID string
	// ExpectedRevision, when set, makes the checkpoint a compare-and-swap.
	ExpectedRevision string
	Steps            []Step
	RecoverySummary  string
	// Recorder is the call's verified recorder session ("" for none).
	Recorder string
}

// Checkpoint replaces the Goal's steps and recovery summary, counts the
// checkpoint and bumps the revision. It never changes the Goal's status.
func (s *Service) Checkpoint(ctx context.Context, p CheckpointParams) (Goal, error) {
	if p.ExpectedRevision != "" {
		if _, err := ParseRevision(p.ExpectedRevision); err != nil {
			return Goal{}, err
		}
	}
	if len(p.Steps) > MaxSteps {
		return Goal{}, errorf("at most %d steps", MaxSteps)
	}
	steps := make([]Step, len(p.Steps))
	for i, st := range p.Steps {
		t, err := text("a step title", st.Title, 1, StepTitleMaxChars)
		if err != nil {
			return Goal{}, err
		}
		if !st.Status.Valid() {
			return Goal{}, errorf("step status must be pending, in_progress, done or skipped")
		}
		steps[i] = Step{Title: t, Status: st.Status}
	}
	summary, err := text("recovery_summary", p.RecoverySummary, 1, RecoverySummaryMaxChars)
	if err != nil {
		return Goal{}, err
	}
	g, _, err := s.mutate(ctx, p.Owner, p.ID, p.ExpectedRevision, func(g *Goal) bool {
		at := s.now().UTC().Truncate(time.Millisecond)
		g.Steps, g.RecoverySummary = slices.Clone(steps), summary
		g.Checkpoints++
		g.CheckpointedAt, g.CheckpointSession = &at, p.Recorder
		return true
	})
	return g, err
}

// AssociateParams correlate owner's Goal with a Workflow Session the
// caller has authorized: SessionOwner and SessionProject are the
// session's stored owner fingerprint and project.
type AssociateParams struct {
	Owner, ID      string
	SessionID      string
	SessionOwner   string
	SessionProject string
}

// Associate records the correlation (changed false when it exists). A
// session of another authority group is failure.SessionAuthorityDenied,
// one of another project than the Goal's failure.SessionProjectMismatch;
// neither changes anything. The association grants nothing and changes
// neither the Goal nor the session.
func (s *Service) Associate(ctx context.Context, p AssociateParams) (Association, bool, error) {
	g, err := s.Get(ctx, p.Owner, p.ID)
	if err != nil {
		return Association{}, false, err
	}
	if p.SessionOwner != g.Owner {
		return Association{}, false, failure.New(failure.SessionAuthorityDenied, "session %s belongs to another authority group than goal %s", p.SessionID, g.ID)
	}
	if g.Project != "" && p.SessionProject != g.Project {
		return Association{}, false, failure.New(failure.SessionProjectMismatch, "goal %s is bound to project %s; session %s is on %s", g.ID, g.Project, p.SessionID, p.SessionProject)
	}
	a := Association{GoalID: g.ID, SessionID: p.SessionID, Project: p.SessionProject, At: s.now().UTC().Truncate(time.Millisecond)}
	return s.store.Associate(ctx, a, MaxSessionsPerGoal)
}

// OfSession names up to limit (at least 1) Goals associated with session
// id (id and title only) and how many there are.
func (s *Service) OfSession(ctx context.Context, sessionID string, limit int) ([]Ref, int, error) {
	return s.store.OfSession(ctx, sessionID, limit)
}
