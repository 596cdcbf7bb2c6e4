// Package tasks registers the Agent Task tools (decision 0077):
// create_agent_task, list_agent_tasks, read_agent_task,
// update_agent_task, cancel_agent_task, start_agent_task_attempt,
// heartbeat_agent_task_attempt, complete_agent_task_attempt and
// wait_for_agent_events (decision 0078).
//
// A task belongs to the authority group of its creator: every tool acts on
// the caller's own tasks only, and another group's task or attempt is
// unknown (not_found). Reads need project:read, changes project:write. An
// attempt is started, heartbeated and completed in a Workflow Session the
// kernel has authorized for the caller (session_id, required) on the
// task's project; a task grants nothing. A refused heartbeat or completion
// (stale_precondition, detail reason) is the tool's error: the kernel
// records it as a failed call, which is negative evidence.
package tasks

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/admission"
	"github.com/webcodex/webcodex/internal/agenttask"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
)

// Tools holds the Agent Task service the tools use and their clock.
type Tools struct {
	Tasks *agenttask.Service
	// Now is the clock every call takes its time from (time.Now when nil).
	Now func() time.Time
}

// Register adds the Agent Task tools to reg.
func Register(reg *kernel.Registry, t *Tools) {
	read := []auth.Scope{auth.ScopeProjectRead}
	write := []auth.Scope{auth.ScopeProjectWrite}
	kernel.Register(reg, kernel.Spec[CreateInput, CreateOutput]{
		Name: "create_agent_task",
		Description: "Create a durable Agent Task (wc_task_ id, state open) on a project, owned by your authority group. " +
			"depends_on names existing tasks; a repeated idempotency_key with the same payload returns the first task (replayed).",
		Category: "tasks", Scopes: write, Mutates: true,
		Handler: t.create,
	})
	kernel.Register(reg, kernel.Spec[ListInput, ListOutput]{
		Name:        "list_agent_tasks",
		Description: "Your Agent Tasks of a project, highest priority then oldest first; filters state and label. limit default 20, max 100.",
		Category:    "tasks", Scopes: read,
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Handler:     t.list,
	})
	kernel.Register(reg, kernel.Spec[EventsInput, agenttask.Events]{
		Name: "wait_for_agent_events",
		Description: "Your Agent Tasks of a project changed after after_events_token, each once in its current state; without a token, " +
			"a baseline token. wait_seconds (1-60, with a token) waits for a change; a timeout is wait_outcome timeout.",
		Category: "tasks", Scopes: read,
		Annotations: kernel.Annotations{ReadOnly: true},
		Handler:     t.events,
	})
	kernel.Register(reg, kernel.Spec[ReadInput, ReadOutput]{
		Name:        "read_agent_task",
		Description: "One of your Agent Tasks with its revision, fence and attempts (oldest first).",
		Category:    "tasks", Scopes: read,
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Handler:     t.read,
	})
	kernel.Register(reg, kernel.Spec[UpdateInput, TaskOutput]{
		Name: "update_agent_task",
		Description: "Change an Agent Task's title, body, labels or priority if it is still at expected_revision; " +
			"otherwise revision_conflict with the current revision. State and depends_on are not updatable.",
		Category: "tasks", Scopes: write, Mutates: true,
		Handler: t.update,
	})
	kernel.Register(reg, kernel.Spec[CancelInput, TaskOutput]{
		Name:        "cancel_agent_task",
		Description: "Cancel an open or claimed Agent Task; its live attempt becomes cancelled. A finished task is a conflict.",
		Category:    "tasks", Scopes: write, Mutates: true, Annotations: kernel.Annotations{Destructive: true},
		Handler: t.cancel,
	})
	kernel.Register(reg, kernel.Spec[StartInput, StartOutput]{
		Name: "start_agent_task_attempt",
		Description: "Claim an Agent Task for your Workflow Session with a leased attempt (attempt_id, fence): task_id, or the first ready task " +
			"of the session's project (with label). A claimed task is a conflict. lease_seconds default 300, 10-3600.",
		Category: "tasks", Scopes: write, Mutates: true, Session: kernel.SessionRequired,
		Handler: t.start,
	})
	kernel.Register(reg, kernel.Spec[HeartbeatInput, AttemptOutput]{
		Name: "heartbeat_agent_task_attempt",
		Description: "Extend your live attempt's lease to now + lease_seconds. A stale fence, lapsed lease or ended attempt is " +
			"stale_precondition (detail reason) and changes nothing.",
		Category: "tasks", Scopes: write, Mutates: true, Session: kernel.SessionRequired,
		Handler: t.heartbeat,
	})
	kernel.Register(reg, kernel.Spec[CompleteInput, CompleteOutput]{
		Name: "complete_agent_task_attempt",
		Description: "End your live attempt with outcome done or failed, setting its task to the same state. Repeating the same completion_key " +
			"and payload returns it (replayed). A stale fence or lapsed lease is stale_precondition and changes nothing.",
		Category: "tasks", Scopes: write, Mutates: true, Session: kernel.SessionRequired,
		Annotations: kernel.Annotations{Idempotent: true},
		Handler:     t.complete,
	})
}

func (t *Tools) service() (*agenttask.Service, error) {
	if t.Tasks == nil {
		return nil, failure.New(failure.Unavailable, "agent tasks are not available")
	}
	return t.Tasks, nil
}

func (t *Tools) now() time.Time {
	if t.Now == nil {
		return time.Now()
	}
	return t.Now()
}

func leaseOf(seconds int) time.Duration { return time.Duration(seconds) * time.Second }

// CreateInput is the input of create_agent_task.
type CreateInput struct {
	kernel.ProjectRef
	Title          string   `json:"title" jsonschema:"1-200 characters"`
	Body           string   `json:"body,omitempty" jsonschema:"at most 8000 characters"`
	Labels         []string `json:"labels,omitempty" jsonschema:"at most 16, each 1-64 characters"`
	Priority       int      `json:"priority,omitempty" jsonschema:"-1000 to 1000, higher first; default 0"`
	DependsOn      []string `json:"depends_on,omitempty" jsonschema:"at most 32 task ids of the same project; immutable"`
	IdempotencyKey string   `json:"idempotency_key,omitempty" jsonschema:"at most 128 characters"`
}

// CreateOutput is the result of create_agent_task.
type CreateOutput struct {
	Task agenttask.Task `json:"task"`
	// Replayed is true when an earlier create with the same
	// idempotency_key and payload made the task.
	Replayed bool `json:"replayed"`
}

func (t *Tools) create(ctx context.Context, inv *kernel.Invocation, in CreateInput) (CreateOutput, error) {
	svc, err := t.service()
	if err != nil {
		return CreateOutput{}, err
	}
	task, replayed, err := svc.Create(ctx, agenttask.CreateParams{Owner: inv.Principal.AuthorityFingerprint(), Project: inv.Project.ID,
		Title: in.Title, Body: in.Body, Labels: in.Labels, Priority: in.Priority, DependsOn: in.DependsOn,
		IdempotencyKey: in.IdempotencyKey}, t.now())
	if err != nil {
		return CreateOutput{}, err
	}
	inv.Fact("task_id", task.ID)
	return CreateOutput{Task: task, Replayed: replayed}, nil
}

// ListInput is the input of list_agent_tasks.
type ListInput struct {
	kernel.ProjectRef
	State  agenttask.State `json:"state,omitempty" jsonschema:"open, claimed, done, failed or cancelled"`
	Label  string          `json:"label,omitempty"`
	Limit  int             `json:"limit,omitempty" jsonschema:"default 20, max 100"`
	Offset int             `json:"offset,omitempty"`
}

// ListOutput is the result of list_agent_tasks.
type ListOutput struct {
	Tasks []agenttask.Task `json:"tasks"`
	Total int              `json:"total"`
}

func (t *Tools) list(ctx context.Context, inv *kernel.Invocation, in ListInput) (ListOutput, error) {
	svc, err := t.service()
	if err != nil {
		return ListOutput{}, err
	}
	ts, total, err := svc.List(ctx, agenttask.ListFilter{Owner: inv.Principal.AuthorityFingerprint(), Project: inv.Project.ID,
		State: in.State, Label: in.Label, Limit: in.Limit, Offset: in.Offset})
	if err != nil {
		return ListOutput{}, err
	}
	if ts == nil {
		ts = []agenttask.Task{}
	}
	return ListOutput{Tasks: ts, Total: total}, nil
}

// EventsInput is the input of wait_for_agent_events.
type EventsInput struct {
	kernel.ProjectRef
	AfterToken  string `json:"after_events_token,omitempty" jsonschema:"events_token of your last call"`
	WaitSeconds int    `json:"wait_seconds,omitempty" jsonschema:"1-60, only with a token"`
	Limit       int    `json:"limit,omitempty" jsonschema:"default 50, max 100"`
}

func (t *Tools) events(ctx context.Context, inv *kernel.Invocation, in EventsInput) (agenttask.Events, error) {
	svc, err := t.service()
	if err != nil {
		return agenttask.Events{}, err
	}
	if in.WaitSeconds < 0 || in.WaitSeconds > int(agenttask.MaxEventsWait/time.Second) {
		return agenttask.Events{}, failure.New(failure.InvalidArguments, "wait_seconds must be 1-60 and needs after_events_token")
	}
	return svc.Events(ctx, agenttask.EventsParams{Owner: inv.Principal.AuthorityFingerprint(), Project: inv.Project.ID,
		Token: in.AfterToken, Wait: time.Duration(in.WaitSeconds) * time.Second, Limit: in.Limit,
		// The wait holds no request slot: it takes one of the caller's
		// bounded waiter slots instead, or is refused (too_many_requests).
		BeforeWait: func() error { return admission.BeginWait(ctx) },
	})
}

// ReadInput is the input of read_agent_task.
type ReadInput struct {
	TaskID string `json:"task_id"`
}

// ReadOutput is the result of read_agent_task.
type ReadOutput struct {
	Task agenttask.Task `json:"task"`
	// Attempts are the task's attempts, oldest (lowest fence) first.
	Attempts []agenttask.Attempt `json:"attempts"`
}

func (t *Tools) read(ctx context.Context, inv *kernel.Invocation, in ReadInput) (ReadOutput, error) {
	svc, err := t.service()
	if err != nil {
		return ReadOutput{}, err
	}
	task, err := reachID(ctx, svc, inv, in.TaskID)
	if err != nil {
		return ReadOutput{}, err
	}
	as, err := svc.Attempts(ctx, inv.Principal.AuthorityFingerprint(), task.ID)
	if err != nil {
		return ReadOutput{}, err
	}
	if as == nil {
		as = []agenttask.Attempt{}
	}
	return ReadOutput{Task: task, Attempts: as}, nil
}

// UpdateInput is the input of update_agent_task.
type UpdateInput struct {
	TaskID           string    `json:"task_id"`
	ExpectedRevision string    `json:"expected_revision" jsonschema:"the task's current revision"`
	Title            *string   `json:"title,omitempty"`
	Body             *string   `json:"body,omitempty"`
	Labels           *[]string `json:"labels,omitempty" jsonschema:"replaces every label"`
	Priority         *int      `json:"priority,omitempty"`
}

// TaskOutput is the result of update_agent_task and cancel_agent_task.
type TaskOutput struct {
	Task agenttask.Task `json:"task"`
}

func (t *Tools) update(ctx context.Context, inv *kernel.Invocation, in UpdateInput) (TaskOutput, error) {
	svc, err := t.service()
	if err != nil {
		return TaskOutput{}, err
	}
	if _, err := reachID(ctx, svc, inv, in.TaskID); err != nil {
		return TaskOutput{}, err
	}
	task, err := svc.Update(ctx, agenttask.UpdateParams{Owner: inv.Principal.AuthorityFingerprint(), ID: in.TaskID,
		ExpectedRevision: in.ExpectedRevision, Title: in.Title, Body: in.Body, Labels: in.Labels, Priority: in.Priority}, t.now())
	if err != nil {
		return TaskOutput{}, err
	}
	inv.Fact("task_id", task.ID)
	inv.Fact("task_revision", task.Revision)
	return TaskOutput{Task: task}, nil
}

// CancelInput is the input of cancel_agent_task.
type CancelInput struct {
	TaskID string `json:"task_id"`
}

func (t *Tools) cancel(ctx context.Context, inv *kernel.Invocation, in CancelInput) (TaskOutput, error) {
	svc, err := t.service()
	if err != nil {
		return TaskOutput{}, err
	}
	if _, err := reachID(ctx, svc, inv, in.TaskID); err != nil {
		return TaskOutput{}, err
	}
	task, err := svc.Cancel(ctx, inv.Principal.AuthorityFingerprint(), in.TaskID, t.now())
	if err != nil {
		return TaskOutput{}, err
	}
	inv.Fact("task_id", task.ID)
	return TaskOutput{Task: task}, nil
}

// StartInput is the input of start_agent_task_attempt.
type StartInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
	TaskID       string `json:"task_id,omitempty" jsonschema:"the task to claim; without it, the first ready task of the project"`
	Label        string `json:"label,omitempty" jsonschema:"without task_id: only tasks carrying this label"`
	LeaseSeconds int    `json:"lease_seconds,omitempty" jsonschema:"default 300, 10-3600"`
}

// StartOutput is the result of start_agent_task_attempt.
type StartOutput struct {
	// Started is false when no task of the project was ready (without
	// task_id); Attempt and Task are then absent.
	Started bool               `json:"started"`
	Attempt *agenttask.Attempt `json:"attempt,omitempty"`
	Task    *agenttask.Task    `json:"task,omitempty"`
}

func (t *Tools) start(ctx context.Context, inv *kernel.Invocation, in StartInput) (StartOutput, error) {
	svc, err := t.service()
	if err != nil {
		return StartOutput{}, err
	}
	if inv.Session == nil {
		return StartOutput{}, failure.New(failure.InvalidArguments, "session_id is required")
	}
	owner := inv.Principal.AuthorityFingerprint()
	var a agenttask.Attempt
	var task agenttask.Task
	if in.TaskID != "" {
		if in.Label != "" {
			return StartOutput{}, failure.New(failure.InvalidArguments, "label selects a ready task only without task_id")
		}
		found, err := reachID(ctx, svc, inv, in.TaskID)
		if err != nil {
			return StartOutput{}, err
		}
		if found.Project != inv.Session.Project {
			return StartOutput{}, failure.New(failure.SessionProjectMismatch, "agent task %s is on project %s, not session %s's project %s",
				found.ID, found.Project, inv.Session.ID, inv.Session.Project)
		}
		a, task, err = svc.StartAttempt(ctx, agenttask.StartParams{Owner: owner, TaskID: in.TaskID, SessionID: inv.Session.ID,
			Lease: leaseOf(in.LeaseSeconds)}, t.now())
		if err != nil {
			return StartOutput{}, err
		}
	} else {
		var ok bool
		a, task, ok, err = svc.StartNextAttempt(ctx, agenttask.NextParams{Owner: owner, Project: inv.Session.Project, Label: in.Label,
			SessionID: inv.Session.ID, Lease: leaseOf(in.LeaseSeconds)}, t.now())
		if err != nil {
			return StartOutput{}, err
		}
		if !ok {
			return StartOutput{}, nil
		}
	}
	inv.Fact("task_id", task.ID)
	inv.Fact("attempt_id", a.ID)
	return StartOutput{Started: true, Attempt: &a, Task: &task}, nil
}

// AttemptRef names an attempt of the caller's session by its id and fence.
type AttemptRef struct {
	kernel.RequiredSessionRef
	AttemptID string `json:"attempt_id"`
	Fence     int64  `json:"fence" jsonschema:"the fence start_agent_task_attempt returned"`
}

func (r AttemptRef) params(inv *kernel.Invocation) agenttask.AttemptParams {
	return agenttask.AttemptParams{Owner: inv.Principal.AuthorityFingerprint(), AttemptID: r.AttemptID,
		SessionID: inv.Session.ID, Fence: r.Fence}
}

// HeartbeatInput is the input of heartbeat_agent_task_attempt.
type HeartbeatInput struct {
	AttemptRef
	LeaseSeconds int `json:"lease_seconds,omitempty" jsonschema:"default 300, 10-3600"`
}

// AttemptOutput is the result of heartbeat_agent_task_attempt.
type AttemptOutput struct {
	Attempt agenttask.Attempt `json:"attempt"`
}

func (t *Tools) heartbeat(ctx context.Context, inv *kernel.Invocation, in HeartbeatInput) (AttemptOutput, error) {
	svc, err := t.service()
	if err != nil {
		return AttemptOutput{}, err
	}
	if inv.Session == nil {
		return AttemptOutput{}, failure.New(failure.InvalidArguments, "session_id is required")
	}
	a, err := svc.Heartbeat(ctx, in.params(inv), leaseOf(in.LeaseSeconds), t.now())
	if err != nil {
		return AttemptOutput{}, err
	}
	inv.Fact("attempt_id", a.ID)
	return AttemptOutput{Attempt: a}, nil
}

// CompleteInput is the input of complete_agent_task_attempt.
type CompleteInput struct {
	AttemptRef
	Outcome       agenttask.Outcome `json:"outcome" jsonschema:"done or failed"`
	Summary       string            `json:"summary" jsonschema:"at most 4000 characters"`
	CompletionKey string            `json:"completion_key" jsonschema:"1-128 characters; repeat it to retry safely"`
}

// CompleteOutput is the result of complete_agent_task_attempt.
type CompleteOutput struct {
	Attempt agenttask.Attempt `json:"attempt"`
	Task    agenttask.Task    `json:"task"`
	// Replayed is true when this completion_key had already completed the
	// attempt with the same payload: nothing changed.
	Replayed bool `json:"replayed"`
}

func (t *Tools) complete(ctx context.Context, inv *kernel.Invocation, in CompleteInput) (CompleteOutput, error) {
	svc, err := t.service()
	if err != nil {
		return CompleteOutput{}, err
	}
	if inv.Session == nil {
		return CompleteOutput{}, failure.New(failure.InvalidArguments, "session_id is required")
	}
	a, task, replayed, err := svc.Complete(ctx, agenttask.CompleteParams{AttemptParams: in.params(inv), Outcome: in.Outcome,
		Summary: in.Summary, CompletionKey: in.CompletionKey}, t.now())
	if err != nil {
		return CompleteOutput{}, err
	}
	inv.Fact("task_id", task.ID)
	inv.Fact("attempt_id", a.ID)
	return CompleteOutput{Attempt: a, Task: task, Replayed: replayed}, nil
}

// reachID reads the caller's task id, refusing it to a principal bound to
// one project (auth.Principal.Project) when the task is on another: nothing
// is changed for a principal the task is refused to.
func reachID(ctx context.Context, svc *agenttask.Service, inv *kernel.Invocation, id string) (agenttask.Task, error) {
	task, err := svc.Get(ctx, inv.Principal.AuthorityFingerprint(), id)
	if err != nil {
		return agenttask.Task{}, err
	}
	if b := inv.Principal.Project; b != "" && task.Project != b {
		return agenttask.Task{}, failure.New(failure.PermissionDenied, "this credential reaches only project %q", b)
	}
	return task, nil
}
