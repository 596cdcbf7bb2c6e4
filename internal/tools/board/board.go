// Package board registers the Session-local message board tools:
// post_session_message, list_session_messages, resolve_session_message,
// session_discussion_summary, get_session_assignment,
// complete_session_message and observe_session_messages.
//
// Every tool takes the exact business session_id, which the kernel
// authorizes like any session. A message's author_session_id is the call's
// verified recorder (recording_session_id) and nothing else; a call
// without one posts without an author.
package board

import (
	"context"
	"slices"
	"time"

	"github.com/webcodex/webcodex/internal/admission"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workflow"
)

// Tools holds the board the tools use.
type Tools struct {
	Board *workflow.Board
	// Activity, when set, answers the stale assignment diagnostic; nil
	// leaves it absent.
	Activity Activity
}

// Activity is the window plane as the stale assignment diagnostic reads
// it (internal/app wires *window.Service).
type Activity interface {
	// Quiet reports whether window fetched at fetchedAt at least d ago
	// and has had no meaningful activity within d.
	Quiet(ctx context.Context, window string, fetchedAt time.Time, d time.Duration) (bool, error)
}

// quiet reports whether the recorded fetch f of an open todo is by a
// window other than the caller's that has been quiet for
// workflow.AssigneeQuietAfter. A fetch without a window never is; a
// failed activity read leaves the diagnostic absent (it claims nothing).
func (t *Tools) quiet(ctx context.Context, inv *kernel.Invocation, todo workflow.Message, f workflow.TodoFetch) bool {
	if t.Activity == nil || f.Window == "" || f.Window == inv.Window || todo.Kind != workflow.MessageTodo || todo.Status != workflow.MessageOpen {
		return false
	}
	q, err := t.Activity.Quiet(ctx, f.Window, f.At, workflow.AssigneeQuietAfter)
	return err == nil && q
}

// The outputs whose calls can be replays; the kernel records them as such.
var (
	_ kernel.Replayer = PostOutput{}
	_ kernel.Replayer = workflow.Completion{}
)

// Register adds the board tools to reg.
func Register(reg *kernel.Registry, t *Tools) {
	scopes := []auth.Scope{auth.ScopeProjectRead}
	kernel.Register(reg, kernel.Spec[PostInput, PostOutput]{
		Name: "post_session_message",
		Description: "Post a message on a Workflow Session's board. author_session_id is your verified recording_session_id (absent without one). " +
			"A retry with the same delivery_key returns the original.",
		Category: "board", Scopes: scopes, Mutates: true, Session: kernel.SessionRequired,
		Handler: t.post,
	})
	kernel.Register(reg, kernel.Spec[ListInput, ListOutput]{
		Name:        "list_session_messages",
		Description: "A session's retained messages, newest first; filters kind, status, message_id, reply_to (all must match). limit default 50, max 100.",
		Category:    "board", Scopes: scopes, Session: kernel.SessionRequired,
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Handler:     t.list,
	})
	kernel.Register(reg, kernel.Spec[ResolveInput, ResolveOutput]{
		Name:        "resolve_session_message",
		Description: "Mark a message resolved, with an optional resolution note. Idempotent: the first resolution stands (changed:false after it).",
		Category:    "board", Scopes: scopes, Mutates: true, Session: kernel.SessionRequired,
		Annotations: kernel.Annotations{Idempotent: true},
		Handler:     t.resolve,
	})
	kernel.Register(reg, kernel.Spec[SummaryInput, workflow.Discussion]{
		Name:        "session_discussion_summary",
		Description: "Board counts by kind and status, the newest open guidance, questions, risks and todos, and recent answers, progress and decisions (bodies cut to 240 characters).",
		Category:    "board", Scopes: scopes, Session: kernel.SessionRequired,
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Handler:     t.summary,
	})
	kernel.Register(reg, kernel.Spec[AssignmentInput, workflow.Assignment]{
		Name: "get_session_assignment",
		Description: "One atomic snapshot of a todo and its direct replies (max 50) with an assignment_fence for complete_session_message. " +
			"Only changes to the todo or its replies stale the fence.",
		Category: "board", Scopes: scopes, Session: kernel.SessionRequired,
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Handler:     t.assignment,
	})
	kernel.Register(reg, kernel.Spec[CompleteInput, workflow.Completion]{
		Name: "complete_session_message",
		Description: "Complete a todo: one answer reply and the todo resolved, atomically. Retry with the same completion_key to replay (replayed:true); " +
			"a stale fence fails with the current assignment and a fresh fence.",
		Category: "board", Scopes: scopes, Mutates: true, Session: kernel.SessionRequired,
		Annotations: kernel.Annotations{Idempotent: true},
		Handler:     t.complete,
	})
	kernel.Register(reg, kernel.Spec[ObserveInput, workflow.Observation]{
		Name: "observe_session_messages",
		Description: "Messages changed since after_observation_token (current state, not an event log); without one, a baseline token. " +
			"wait_seconds waits once for a change (a timeout is a normal result).",
		Category: "board", Scopes: scopes, Session: kernel.SessionRequired,
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Handler:     t.observe,
	})
}

// board returns the board or unavailable (a registry built without stores).
func (t *Tools) board() (*workflow.Board, error) {
	if t.Board == nil {
		return nil, failure.New(failure.Unavailable, "the message board is not available")
	}
	return t.Board, nil
}

// PostInput is the input of post_session_message.
type PostInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
	Kind        workflow.MessageKind `json:"kind" jsonschema:"note, proposal, question, answer, decision, risk, progress, guidance or todo"`
	Message     string               `json:"message" jsonschema:"1-8000 characters"`
	Tags        []string             `json:"tags,omitempty" jsonschema:"at most 16, each 1-64 characters"`
	ReplyTo     string               `json:"reply_to,omitempty" jsonschema:"wc_msg_ id of a message in the same session"`
	Priority    workflow.Priority    `json:"priority,omitempty" jsonschema:"low, normal (default) or high"`
	RequiresAck bool                 `json:"requires_ack,omitempty"`
	DeliveryKey string               `json:"delivery_key,omitempty" jsonschema:"1-128 characters"`
}

// PostOutput is the result of post_session_message.
type PostOutput struct {
	Message  workflow.Message `json:"message"`
	Replayed bool             `json:"replayed"`
}

// Replay is the board's verdict on the post (kernel.Replayer): a replayed
// delivery_key names the original message.
func (o PostOutput) Replay() workflow.Replay { return workflow.PostReplay(o.Message, o.Replayed) }

func (t *Tools) post(ctx context.Context, inv *kernel.Invocation, in PostInput) (PostOutput, error) {
	b, err := t.board()
	if err != nil {
		return PostOutput{}, err
	}
	m, replayed, err := b.Post(ctx, workflow.PostParams{
		SessionID: in.SessionID, Kind: in.Kind, Body: in.Message, Tags: in.Tags, ReplyTo: in.ReplyTo,
		Priority: in.Priority, RequiresAck: in.RequiresAck, DeliveryKey: in.DeliveryKey, Author: inv.Recorder(),
	})
	if err != nil {
		return PostOutput{}, err
	}
	inv.Fact("message_id", m.ID)
	return PostOutput{Message: m, Replayed: replayed}, nil
}

// ListInput is the input of list_session_messages.
type ListInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
	Kind      workflow.MessageKind   `json:"kind,omitempty"`
	Status    workflow.MessageStatus `json:"status,omitempty" jsonschema:"open or resolved"`
	MessageID string                 `json:"message_id,omitempty"`
	ReplyTo   string                 `json:"reply_to,omitempty"`
	Limit     int                    `json:"limit,omitempty" jsonschema:"default 50, max 100"`
}

// ListOutput is the result of list_session_messages.
type ListOutput struct {
	Messages []workflow.Message `json:"messages"`
	Returned int                `json:"returned"`
	HasMore  bool               `json:"has_more"`
}

func (t *Tools) list(ctx context.Context, inv *kernel.Invocation, in ListInput) (ListOutput, error) {
	b, err := t.board()
	if err != nil {
		return ListOutput{}, err
	}
	ms, more, err := b.List(ctx, in.SessionID, workflow.MessageFilter{Kind: in.Kind, Status: in.Status,
		MessageID: in.MessageID, ReplyTo: in.ReplyTo, Limit: in.Limit})
	if err != nil {
		return ListOutput{}, err
	}
	if ms == nil {
		ms = []workflow.Message{}
	}
	return ListOutput{Messages: ms, Returned: len(ms), HasMore: more}, nil
}

// ResolveInput is the input of resolve_session_message.
type ResolveInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
	MessageID  string `json:"message_id"`
	Resolution string `json:"resolution,omitempty" jsonschema:"at most 2000 characters"`
}

// ResolveOutput is the result of resolve_session_message.
type ResolveOutput struct {
	Message workflow.Message `json:"message"`
	Changed bool             `json:"changed"`
}

func (t *Tools) resolve(ctx context.Context, inv *kernel.Invocation, in ResolveInput) (ResolveOutput, error) {
	b, err := t.board()
	if err != nil {
		return ResolveOutput{}, err
	}
	m, changed, err := b.Resolve(ctx, workflow.ResolveParams{SessionID: in.SessionID, MessageID: in.MessageID, Resolution: in.Resolution})
	if err != nil {
		return ResolveOutput{}, err
	}
	return ResolveOutput{Message: m, Changed: changed}, nil
}

// SummaryInput is the input of session_discussion_summary.
type SummaryInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
}

func (t *Tools) summary(ctx context.Context, inv *kernel.Invocation, in SummaryInput) (workflow.Discussion, error) {
	b, err := t.board()
	if err != nil {
		return workflow.Discussion{}, err
	}
	return b.Summary(ctx, in.SessionID)
}

// AssignmentInput is the input of get_session_assignment.
type AssignmentInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
	MessageID string `json:"message_id" jsonschema:"wc_msg_ id of the todo"`
}

func (t *Tools) assignment(ctx context.Context, inv *kernel.Invocation, in AssignmentInput) (workflow.Assignment, error) {
	b, err := t.board()
	if err != nil {
		return workflow.Assignment{}, err
	}
	a, err := b.Assignment(ctx, in.SessionID, in.MessageID)
	if err != nil {
		return a, err
	}
	// A caller told that the last fetcher went quiet is looking at
	// someone else's fetch: recording its own would erase that fact.
	if t.quiet(ctx, inv, a.Todo, a.Fetch) {
		a.Todo.AssigneeRecentActivity = workflow.AssigneeNoneWithin10m
	} else if a.Todo.Status == workflow.MessageOpen {
		b.RecordFetch(ctx, in.SessionID, in.MessageID, inv.Window)
	}
	return a, nil
}

// CompleteInput is the input of complete_session_message.
type CompleteInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
	MessageID     string            `json:"message_id" jsonschema:"wc_msg_ id of the todo"`
	Answer        string            `json:"answer" jsonschema:"1-8000 characters"`
	CompletionKey string            `json:"completion_key" jsonschema:"1-128 characters, chosen by you; reuse it to retry"`
	ExpectedFence string            `json:"expected_assignment_fence" jsonschema:"assignment_fence from get_session_assignment"`
	Tags          []string          `json:"tags,omitempty"`
	Priority      workflow.Priority `json:"priority,omitempty"`
}

func (t *Tools) complete(ctx context.Context, inv *kernel.Invocation, in CompleteInput) (workflow.Completion, error) {
	b, err := t.board()
	if err != nil {
		return workflow.Completion{}, err
	}
	c, err := b.Complete(ctx, workflow.CompleteParams{
		SessionID: in.SessionID, MessageID: in.MessageID, Answer: in.Answer, CompletionKey: in.CompletionKey,
		Fence: in.ExpectedFence, Tags: in.Tags, Priority: in.Priority, Author: inv.Recorder(),
	})
	if err != nil {
		return workflow.Completion{}, err
	}
	inv.Fact("message_id", c.Todo.ID)
	inv.Fact("answer_message_id", c.Answer.ID)
	// The completion a replay names (replay_of) is this one.
	inv.Fact("completion_id", c.Todo.CompletionID)
	return c, nil
}

// ObserveInput is the input of observe_session_messages.
type ObserveInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
	AfterToken  string `json:"after_observation_token,omitempty" jsonschema:"observation_token of your last call"`
	WaitSeconds int    `json:"wait_seconds,omitempty" jsonschema:"1-60, only with a token"`
	Limit       int    `json:"limit,omitempty" jsonschema:"default 50, max 100"`
}

func (t *Tools) observe(ctx context.Context, inv *kernel.Invocation, in ObserveInput) (workflow.Observation, error) {
	b, err := t.board()
	if err != nil {
		return workflow.Observation{}, err
	}
	if in.WaitSeconds < 0 || in.WaitSeconds > int(workflow.MaxObserveWait/time.Second) {
		return workflow.Observation{}, failure.New(failure.InvalidArguments, "wait_seconds must be 1-60 and needs after_observation_token")
	}
	o, err := b.Observe(ctx, workflow.ObserveParams{
		SessionID: in.SessionID, Token: in.AfterToken, Wait: time.Duration(in.WaitSeconds) * time.Second, Limit: in.Limit,
		// The wait holds no request slot: it takes one of the caller's
		// bounded waiter slots instead, or is refused (too_many_requests).
		BeforeWait: func() error { return admission.BeginWait(ctx) },
	})
	if err != nil || len(o.Fetches) == 0 {
		return o, err
	}
	// The observation may be shared with other observers: copy before
	// marking.
	ms := slices.Clone(o.Messages)
	for i, m := range ms {
		if t.quiet(ctx, inv, m, o.Fetches[m.ID]) {
			ms[i].AssigneeRecentActivity = workflow.AssigneeNoneWithin10m
		}
	}
	o.Messages = ms
	return o, nil
}
