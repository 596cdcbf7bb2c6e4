// Package goals registers the Goal tools: create_goal, get_goal,
// list_goals, update_goal, checkpoint_goal and
// associate_goal_workflow_session.
//
// A Goal belongs to the authority group of its creator: every tool acts
// on the caller's own Goals only, and another group's Goal is unknown.
// Reads need project:read, changes project:write. A Goal is correlation
// only: associating it with a Workflow Session grants no session or
// project authority (the session is authorized by the kernel like any
// business session), and nothing but update_goal changes its status.
package goals

import (
	"context"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/goal"
	"github.com/webcodex/webcodex/internal/kernel"
)

// Tools holds the Goal service the tools use.
type Tools struct {
	Goals *goal.Service
}

// Register adds the Goal tools to reg.
func Register(reg *kernel.Registry, t *Tools) {
	read := []auth.Scope{auth.ScopeProjectRead}
	write := []auth.Scope{auth.ScopeProjectWrite}
	kernel.Register(reg, kernel.Spec[CreateInput, GoalOutput]{
		Name:        "create_goal",
		Description: "Create a durable Goal (wc_goal_ id, status active) owned by your authority group, optionally bound to a project.",
		Category:    "goals", Scopes: write, Mutates: true,
		Handler: t.create,
	})
	kernel.Register(reg, kernel.Spec[GetInput, GetOutput]{
		Name:        "get_goal",
		Description: "One of your Goals with its revision, steps, recovery summary and correlated sessions.",
		Category:    "goals", Scopes: read,
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Handler:     t.get,
	})
	kernel.Register(reg, kernel.Spec[ListInput, ListOutput]{
		Name:        "list_goals",
		Description: "Your Goals, most recently changed first; filters project and status. limit default 20, max 100.",
		Category:    "goals", Scopes: read,
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Handler:     t.list,
	})
	kernel.Register(reg, kernel.Spec[UpdateInput, UpdateOutput]{
		Name: "update_goal",
		Description: "Change a Goal's title, objective or status (active, blocked, completed, abandoned) if it is still at expected_revision; " +
			"otherwise revision_conflict with the current revision.",
		Category: "goals", Scopes: write, Mutates: true,
		Handler: t.update,
	})
	kernel.Register(reg, kernel.Spec[CheckpointInput, GoalOutput]{
		Name: "checkpoint_goal",
		Description: "Record a Goal's step progress (at most 32 steps) and a recovery summary for whoever resumes it; never changes its status. " +
			"expected_revision, when given, must be current.",
		Category: "goals", Scopes: write, Mutates: true,
		Handler: t.checkpoint,
	})
	kernel.Register(reg, kernel.Spec[AssociateInput, AssociateOutput]{
		Name: "associate_goal_workflow_session",
		Description: "Correlate a Goal with one of your active Workflow Sessions of the Goal's project. " +
			"It grants no authority and never changes the Goal; repeating it changes nothing.",
		Category: "goals", Scopes: write, Mutates: true, Session: kernel.SessionRequired,
		Annotations: kernel.Annotations{Idempotent: true},
		Handler:     t.associate,
	})
}

func (t *Tools) service() (*goal.Service, error) {
	if t.Goals == nil {
		return nil, failure.New(failure.Unavailable, "goals are not available")
	}
	return t.Goals, nil
}

// View is a Goal as the tools show it (without its owner fingerprint).
type View struct {
	goal.Goal
	Progress goal.Progress `json:"progress"`
}

func view(g goal.Goal) View { return View{Goal: g, Progress: g.Progress()} }

// GoalOutput is the result of create_goal and checkpoint_goal.
type GoalOutput struct {
	Goal View `json:"goal"`
}

// CreateInput is the input of create_goal.
type CreateInput struct {
	Project   string `json:"project,omitempty" jsonschema:"bind the goal to this project (optional)"`
	Title     string `json:"title" jsonschema:"1-200 characters"`
	Objective string `json:"objective,omitempty" jsonschema:"what done means, at most 4000 characters"`
}

// ProjectID implements kernel.ProjectScoped: a named project is resolved
// (and must be registered) before the Goal is bound to it.
func (in CreateInput) ProjectID() string { return in.Project }

func (t *Tools) create(ctx context.Context, inv *kernel.Invocation, in CreateInput) (GoalOutput, error) {
	svc, err := t.service()
	if err != nil {
		return GoalOutput{}, err
	}
	project := inv.Project.ID
	if project == "" {
		// A principal bound to one project makes goals on it only.
		project = inv.Principal.Project
	}
	g, err := svc.Create(ctx, goal.CreateParams{Owner: inv.Principal.AuthorityFingerprint(), Project: project,
		Title: in.Title, Objective: in.Objective})
	if err != nil {
		return GoalOutput{}, err
	}
	inv.Fact("goal_id", g.ID)
	return GoalOutput{Goal: view(g)}, nil
}

// GetInput is the input of get_goal.
type GetInput struct {
	GoalID string `json:"goal_id"`
}

// GetOutput is the result of get_goal.
type GetOutput struct {
	Goal View `json:"goal"`
	// Sessions are the correlated Workflow Sessions, oldest first (at
	// most goal.MaxSessionsPerGoal).
	Sessions []goal.Association `json:"sessions"`
}

func (t *Tools) get(ctx context.Context, inv *kernel.Invocation, in GetInput) (GetOutput, error) {
	svc, err := t.service()
	if err != nil {
		return GetOutput{}, err
	}
	owner := inv.Principal.AuthorityFingerprint()
	g, err := svc.Get(ctx, owner, in.GoalID)
	if err != nil {
		return GetOutput{}, err
	}
	if err := reach(inv, g); err != nil {
		return GetOutput{}, err
	}
	as, err := svc.Sessions(ctx, owner, g.ID)
	if err != nil {
		return GetOutput{}, err
	}
	return GetOutput{Goal: view(g), Sessions: as}, nil
}

// ListInput is the input of list_goals.
type ListInput struct {
	Project string      `json:"project,omitempty" jsonschema:"only goals bound to this project"`
	Status  goal.Status `json:"status,omitempty" jsonschema:"active, blocked, completed or abandoned"`
	Limit   int         `json:"limit,omitempty" jsonschema:"default 20, max 100"`
	Offset  int         `json:"offset,omitempty"`
}

// ProjectID implements kernel.ProjectScoped.
func (in ListInput) ProjectID() string { return in.Project }

// ListOutput is the result of list_goals.
type ListOutput struct {
	Goals []View `json:"goals"`
	Total int    `json:"total"`
}

func (t *Tools) list(ctx context.Context, inv *kernel.Invocation, in ListInput) (ListOutput, error) {
	svc, err := t.service()
	if err != nil {
		return ListOutput{}, err
	}
	project := inv.Project.ID
	if project == "" {
		project = inv.Principal.Project // a bound principal lists its project's goals only
	}
	gs, total, err := svc.List(ctx, goal.ListFilter{Owner: inv.Principal.AuthorityFingerprint(), Project: project,
		Status: in.Status, Limit: in.Limit, Offset: in.Offset})
	if err != nil {
		return ListOutput{}, err
	}
	out := ListOutput{Goals: make([]View, 0, len(gs)), Total: total}
	for _, g := range gs {
		out.Goals = append(out.Goals, view(g))
	}
	return out, nil
}

// UpdateInput is the input of update_goal.
type UpdateInput struct {
	GoalID           string       `json:"goal_id"`
	ExpectedRevision string       `json:"expected_revision" jsonschema:"the goal's current revision"`
	Title            *string      `json:"title,omitempty"`
	Objective        *string      `json:"objective,omitempty"`
	Status           *goal.Status `json:"status,omitempty"`
}

// UpdateOutput is the result of update_goal.
type UpdateOutput struct {
	Goal View `json:"goal"`
	// Changed is false when the update changed nothing (the revision
	// stays).
	Changed bool `json:"changed"`
}

func (t *Tools) update(ctx context.Context, inv *kernel.Invocation, in UpdateInput) (UpdateOutput, error) {
	svc, err := t.service()
	if err != nil {
		return UpdateOutput{}, err
	}
	if err := reachID(ctx, svc, inv, in.GoalID); err != nil {
		return UpdateOutput{}, err
	}
	g, changed, err := svc.Update(ctx, goal.UpdateParams{Owner: inv.Principal.AuthorityFingerprint(), ID: in.GoalID,
		ExpectedRevision: in.ExpectedRevision, Title: in.Title, Objective: in.Objective, Status: in.Status})
	if err != nil {
		return UpdateOutput{}, err
	}
	inv.Fact("goal_id", g.ID)
	inv.Fact("goal_revision", g.Revision)
	return UpdateOutput{Goal: view(g), Changed: changed}, nil
}

// CheckpointInput is the input of checkpoint_goal.
type CheckpointInput struct {
	GoalID           string      `json:"goal_id"`
	ExpectedRevision string      `json:"expected_revision,omitempty"`
	Steps            []goal.Step `json:"steps" jsonschema:"at most 32; status pending, in_progress, done or skipped"`
	RecoverySummary  string      `json:"recovery_summary" jsonschema:"1-4000 characters"`
}

func (t *Tools) checkpoint(ctx context.Context, inv *kernel.Invocation, in CheckpointInput) (GoalOutput, error) {
	svc, err := t.service()
	if err != nil {
		return GoalOutput{}, err
	}
	if err := reachID(ctx, svc, inv, in.GoalID); err != nil {
		return GoalOutput{}, err
	}
	g, err := svc.Checkpoint(ctx, goal.CheckpointParams{Owner: inv.Principal.AuthorityFingerprint(), ID: in.GoalID,
		ExpectedRevision: in.ExpectedRevision, Steps: in.Steps, RecoverySummary: in.RecoverySummary, Recorder: inv.Recorder()})
	if err != nil {
		return GoalOutput{}, err
	}
	inv.Fact("goal_id", g.ID)
	inv.Fact("goal_revision", g.Revision)
	return GoalOutput{Goal: view(g)}, nil
}

// AssociateInput is the input of associate_goal_workflow_session.
type AssociateInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
	GoalID string `json:"goal_id"`
}

// AssociateOutput is the result of associate_goal_workflow_session.
type AssociateOutput struct {
	Association goal.Association `json:"association"`
	// Changed is false when the correlation was already recorded.
	Changed bool `json:"changed"`
}

func (t *Tools) associate(ctx context.Context, inv *kernel.Invocation, in AssociateInput) (AssociateOutput, error) {
	svc, err := t.service()
	if err != nil {
		return AssociateOutput{}, err
	}
	if inv.Session == nil {
		return AssociateOutput{}, failure.New(failure.InvalidArguments, "session_id is required")
	}
	if err := reachID(ctx, svc, inv, in.GoalID); err != nil {
		return AssociateOutput{}, err
	}
	// The kernel authorized the session for this caller; the goal domain
	// judges the correlation against what the session's header says.
	a, changed, err := svc.Associate(ctx, goal.AssociateParams{Owner: inv.Principal.AuthorityFingerprint(), ID: in.GoalID,
		SessionID: inv.Session.ID, SessionOwner: inv.Session.OwnerFingerprint, SessionProject: inv.Session.Project})
	if err != nil {
		return AssociateOutput{}, err
	}
	inv.Fact("goal_id", a.GoalID)
	return AssociateOutput{Association: a, Changed: changed}, nil
}

// reach refuses goal g to a principal bound to one project
// (auth.Principal.Project) when g is bound to another project or to none.
func reach(inv *kernel.Invocation, g goal.Goal) error {
	if b := inv.Principal.Project; b != "" && g.Project != b {
		return failure.New(failure.PermissionDenied, "this credential reaches only project %q", b)
	}
	return nil
}

// reachID is reach for the goal id names, read first: nothing is changed
// for a principal the goal is refused to.
func reachID(ctx context.Context, svc *goal.Service, inv *kernel.Invocation, id string) error {
	if inv.Principal.Project == "" {
		return nil
	}
	g, err := svc.Get(ctx, inv.Principal.AuthorityFingerprint(), id)
	if err != nil {
		return err
	}
	return reach(inv, g)
}
