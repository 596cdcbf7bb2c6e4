package closeout

import (
	"context"
	"encoding/json"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// Bounds of session_handoff_summary.
const (
	// DefaultEventLimit and MaxEventLimit bound the diagnostic events list.
	DefaultEventLimit = 20
	MaxEventLimit     = 100
)

// registerHandoff adds session_handoff_summary to reg.
//
// The tool reads the session header, its retained events
// and the caller's Job aggregate, then projects them with
// internal/workflow/handoff into the version-1 handoff_brief (hard-capped
// at 8 KiB) and, with diagnostic, continuation_feedback and the newest
// events. Only include_workspace=true reads the workspace snapshot. A
// concurrent change of the session is reported as basis.complete=false
// with session_changed_during_snapshot.
func registerHandoff(reg *kernel.Registry, t *Tools) {
	kernel.Register(reg, kernel.Spec[HandoffInput, HandoffOutput]{
		Runners: true,
		Name:    HandoffToolName,
		Description: "Recover a session by exact session_id: a handoff_brief (at most 8 KiB) of instructions, progress, changed files, " +
			"validation, jobs and next actions. Works on closed sessions; runs nothing unless include_workspace.",
		Category: "sessions", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Session:     kernel.SessionRequired,
		Handler:     t.summary,
	})
}

// HandoffInput is the input of session_handoff_summary.
type HandoffInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
	IncludeWorkspace  *bool `json:"include_workspace,omitempty" jsonschema:"run one git status and report the workspace; default false"`
	IncludeValidation *bool `json:"include_validation,omitempty" jsonschema:"report validation evidence; default true"`
	// IncludeCheckpoints asks for workspace checkpoints, which this server
	// does not have yet: true is reported as checkpoints_unavailable in
	// the brief's basis.
	IncludeCheckpoints bool `json:"include_checkpoints,omitempty" jsonschema:"reported unavailable (none yet)"`
	Limit              int  `json:"limit,omitempty" jsonschema:"diagnostic events to return, default 20, max 100"`
	Diagnostic         bool `json:"diagnostic,omitempty" jsonschema:"also return continuation_feedback and the newest events"`
}

// HandoffOutput is the result of session_handoff_summary.
type HandoffOutput struct {
	SessionID string `json:"session_id"`
	Project   string `json:"project"`
	// HandoffBrief holds the exact, size-capped encoding of the
	// handoff.HandoffBrief (a json.RawMessage, at most
	// handoff.BriefMaxBytes). It and the diagnostic fields are typed
	// loosely so that the published output schema stays within the
	// per-tool tools/list budget.
	HandoffBrief kernel.Object `json:"handoff_brief" jsonschema:"handoff_brief version 1 (at most 8192 bytes): version, deterministic, llm_summary, session, task, workspace, progress, validation, attention, next_actions, basis"`
	// ContinuationFeedback (a handoff.ContinuationFeedback) and Events (the
	// newest workflow.Events) are set with diagnostic only.
	ContinuationFeedback kernel.Object `json:"continuation_feedback,omitempty" jsonschema:"diagnostic only: the continuation_feedback projection"`
	Events               kernel.Array  `json:"events,omitempty" jsonschema:"diagnostic only: the newest limit session events"`
}

func (t *Tools) summary(ctx context.Context, inv *kernel.Invocation, in HandoffInput) (HandoffOutput, error) {
	if in.Limit < 0 {
		return HandoffOutput{}, failure.New(failure.InvalidArguments, "limit must be 0-%d", MaxEventLimit)
	}
	limit := in.Limit
	if limit == 0 {
		limit = DefaultEventLimit
	}
	limit = min(limit, MaxEventLimit)
	includeWorkspace := in.IncludeWorkspace != nil && *in.IncludeWorkspace
	includeValidation := in.IncludeValidation == nil || *in.IncludeValidation

	g, err := t.gather(ctx, inv, in.SessionID, includeWorkspace)
	if err != nil {
		return HandoffOutput{}, err
	}
	sess, evs, jobSnap, ws, changed := g.sess, g.events, g.jobs, g.workspace, g.changed

	fb := handoff.Feedback(sess, evs, handoff.FeedbackOptions{
		Profile: handoff.ProfileFull, SkipValidation: !includeValidation, Jobs: jobSnap,
	})
	_, raw := handoff.Brief(handoff.BriefInput{
		Session: sess, Events: evs, Feedback: &fb,
		// Git is queried only when include_workspace is true; a snapshot
		// that cannot be proven is reported unavailable.
		IncludeWorkspace: includeWorkspace, Workspace: ws.brief(), IncludeCheckpoints: in.IncludeCheckpoints,
		Guidance: g.guidance, SessionChanged: changed,
		Evidence: BriefEvidence(ctx, t.Evidence, sess.ID),
		Goals:    workflow.Correlated(ctx, t.Goals, sess.ID, handoff.BriefMaxGoals),
	})
	out := HandoffOutput{SessionID: sess.ID, Project: sess.Project, HandoffBrief: json.RawMessage(raw)}
	if in.Diagnostic {
		tail := evs[max(0, len(evs)-limit):]
		if tail == nil {
			tail = []workflow.Event{}
		}
		out.ContinuationFeedback, out.Events = &fb, tail
	}
	return out, nil
}
