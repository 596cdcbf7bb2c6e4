// Package handoff registers session_handoff_summary: the explicit,
// read-only recovery view of one Workflow Session for a new window, a new
// agent or a human receiver.
//
// The tool reads the session header, its retained events and (when a Job
// manager is wired) the caller's Job aggregate, then projects them with
// internal/workflow/handoff into the version-1 handoff_brief (hard-capped
// at 8 KiB) and, with diagnostic, continuation_feedback and the newest
// events. Only include_workspace=true runs one bounded, read-only
// `git status --porcelain=v2 --branch` in the project root; the tool never
// runs shells or validation, never appends a
// business event, and works on closed sessions. A snapshot fence on the
// session's events_observed, read before and after gathering, reports a
// concurrent change as basis.complete=false with
// session_changed_during_snapshot.
package handoff

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// Bounds of session_handoff_summary.
const (
	// DefaultLimit and MaxLimit bound the diagnostic events list.
	DefaultLimit = 20
	MaxLimit     = 100
)

// Tools holds the dependencies of session_handoff_summary. Jobs may be
// nil: the brief then reports the Job summary as unavailable.
type Tools struct {
	Sessions *workflow.Service
	Jobs     *jobs.Manager
	// Evidence, when set, is the evidence journal: every brief signs its
	// head and carries the session's binding counts in its basis.
	Evidence Journal
	// Host runs git for the workspace snapshot (nil: runner.Local).
	Host runner.Host
}

// Journal is the evidence journal as a brief's basis needs it.
type Journal interface {
	Checkpoint(ctx context.Context) (evidence.SignedCheckpoint, error)
	SessionCounts(ctx context.Context, sessionID string) (evidence.Counts, error)
}

// BriefEvidence signs the journal head and counts the session's records
// by binding, for a brief's basis. It returns nil when j is nil or the
// counts cannot be read; a checkpoint that cannot be signed leaves
// Checkpoint nil. Records of the calls still running (this one included)
// are not covered yet.
func BriefEvidence(ctx context.Context, j Journal, sessionID string) *handoff.BriefEvidence {
	if j == nil {
		return nil
	}
	c, err := j.SessionCounts(ctx, sessionID)
	if err != nil {
		return nil
	}
	ev := &handoff.BriefEvidence{Verified: c.Verified, Sessionless: c.Sessionless, InvalidClaim: c.InvalidClaim, Unknown: c.Unknown}
	if cp, err := j.Checkpoint(ctx); err == nil {
		ev.Checkpoint = &handoff.BriefCheckpoint{Origin: cp.Origin, Size: cp.Size,
			RootHash: base64.StdEncoding.EncodeToString(cp.Root), KeyID: cp.KeyID, Note: cp.Note}
	}
	return ev
}

// Register adds session_handoff_summary to reg.
func Register(reg *kernel.Registry, t *Tools) {
	kernel.Register(reg, kernel.Spec[Input, Output]{
		Name: "session_handoff_summary",
		Description: "Recover one Workflow Session by exact session_id: a deterministic handoff_brief (≤ 8 KiB) with the root and latest " +
			"instructions, progress state, changed and recently read files, validation status and open failures, Job attention, " +
			"next actions and basis completeness. diagnostic=true adds continuation_feedback and the newest events. Works on closed sessions; " +
			"runs nothing except, with include_workspace=true, one read-only git status.",
		Category: "sessions", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Session:     kernel.SessionRequired,
		Handler:     t.summary,
	})
}

// Input is the input of session_handoff_summary.
type Input struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
	IncludeWorkspace  *bool `json:"include_workspace,omitempty" jsonschema:"run git status in the project root and report branch, head, dirty, conflicted, ahead and behind; default false (reported as not_requested)"`
	IncludeValidation *bool `json:"include_validation,omitempty" jsonschema:"report validation evidence; default true (false is reported as not_requested)"`
	Limit             int   `json:"limit,omitempty" jsonschema:"diagnostic events to return, default 20, max 100"`
	Diagnostic        bool  `json:"diagnostic,omitempty" jsonschema:"also return continuation_feedback and the newest events"`
}

// Output is the result of session_handoff_summary.
type Output struct {
	SessionID string `json:"session_id"`
	Project   string `json:"project"`
	// HandoffBrief holds the exact, size-capped encoding of the
	// handoff.HandoffBrief (a json.RawMessage, at most
	// handoff.BriefMaxBytes). It and the diagnostic fields are typed
	// loosely so that the published output schema stays within the
	// per-tool tools/list budget.
	HandoffBrief any `json:"handoff_brief" jsonschema:"handoff_brief version 1 (at most 8192 bytes): version, deterministic, llm_summary, session, task, workspace, progress, validation, attention, next_actions, basis"`
	// ContinuationFeedback (a handoff.ContinuationFeedback) and Events (the
	// newest workflow.Events) are set with diagnostic only.
	ContinuationFeedback any `json:"continuation_feedback,omitempty" jsonschema:"diagnostic only: the continuation_feedback projection"`
	Events               any `json:"events,omitempty" jsonschema:"diagnostic only: the newest limit session events"`
}

func (t *Tools) summary(ctx context.Context, inv *kernel.Invocation, in Input) (Output, error) {
	if in.Limit < 0 {
		return Output{}, failure.New(failure.InvalidArguments, "limit must be 0-%d", MaxLimit)
	}
	limit := in.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	includeWorkspace := in.IncludeWorkspace != nil && *in.IncludeWorkspace
	includeValidation := in.IncludeValidation == nil || *in.IncludeValidation

	// Snapshot fence: events_observed before and after gathering.
	sess, err := t.Sessions.Get(ctx, in.SessionID)
	if err != nil {
		return Output{}, err
	}
	evs, err := t.Sessions.Store().Events(ctx, in.SessionID, 0)
	if err != nil {
		return Output{}, err
	}
	jobSnap := t.jobs(ctx, sess)
	var ws *handoff.WorkspaceSnapshot
	if includeWorkspace && inv.HasProject {
		ws = workspace(ctx, t.Host, inv.Project.Root)
	}
	after, err := t.Sessions.Get(ctx, in.SessionID)
	changed := err != nil || after.EventsObserved != sess.EventsObserved

	fb := handoff.Feedback(sess, evs, handoff.FeedbackOptions{
		Profile: handoff.ProfileFull, SkipValidation: !includeValidation, Jobs: jobSnap,
	})
	_, raw := handoff.Brief(handoff.BriefInput{
		Session: sess, Events: evs, Feedback: &fb,
		// Git is queried only when include_workspace is true; a snapshot
		// that cannot be proven is reported unavailable.
		IncludeWorkspace: includeWorkspace, Workspace: ws,
		SessionChanged: changed,
		Evidence:       BriefEvidence(ctx, t.Evidence, sess.ID),
	})
	out := Output{SessionID: sess.ID, Project: sess.Project, HandoffBrief: json.RawMessage(raw)}
	if in.Diagnostic {
		tail := evs[max(0, len(evs)-limit):]
		if tail == nil {
			tail = []workflow.Event{}
		}
		out.ContinuationFeedback, out.Events = &fb, tail
	}
	return out, nil
}

// jobs returns the Job counts it can prove over the caller's full active
// aggregate in the session's project, or nil.
func (t *Tools) jobs(ctx context.Context, sess workflow.Session) *handoff.JobsSnapshot {
	if t.Jobs == nil {
		return nil
	}
	acc := jobs.Access{Project: sess.Project, Fingerprint: sess.OwnerFingerprint}
	active, total, err := t.Jobs.List(ctx, acc, jobs.ListFilter{Active: true, Limit: jobs.MaxListLimit})
	if err != nil || total > len(active) {
		return nil
	}
	snap := &handoff.JobsSnapshot{Active: total}
	for _, j := range active {
		if inSession(j, sess.ID) {
			snap.Blocking++
		}
	}
	bg, bgTotal, err := t.Jobs.List(ctx, acc, jobs.ListFilter{BackgroundOnly: true, Limit: jobs.MaxListLimit})
	if err != nil || bgTotal > len(bg) {
		return nil
	}
	for _, j := range bg {
		if j.State.Terminal() && j.Validation != nil && inSession(j, sess.ID) && !slices.Contains(sess.JobMarkers, j.ID) {
			snap.TerminalPending++
		}
	}
	return snap
}

// inSession reports whether job j was run in, or recorded in, session id.
func inSession(j jobs.Job, id string) bool {
	return j.SessionID == id || (j.Validation != nil && slices.Contains(j.Validation.Sessions, id))
}
