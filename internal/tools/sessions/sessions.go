// Package sessions registers the Workflow Session tools: work_on_project,
// list_sessions, session_summary, update_session_context and close_session.
//
// A session is created only by work_on_project without session_id, and
// continued only by the exact, authorized session_id; no tool selects a
// session from the caller's credential, project or history.
package sessions

import (
	"context"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/mcpprovider"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/skill"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
	"github.com/webcodex/webcodex/internal/worktree"
)

// Tools holds the dependencies of the session tools.
type Tools struct {
	Sessions *workflow.Service
	// OnClose, when set, is called after a session was closed (for
	// example to release its persistent shell, or to sign an evidence
	// checkpoint).
	OnClose func(sessionID string)
	// Evidence, when set, counts the session's evidence journal records
	// for session_summary.
	Evidence EvidenceCounter
	// Goals, when set, names the Goals correlated with the session in
	// session_summary (id and title only).
	Goals workflow.GoalNames
	// Worktrees, when set, serves mode worktree.
	Worktrees *worktree.Manager
	// Guidance is the workflow guidance work_on_project projects.
	Guidance string
	// StartupProfile overrides StartupProfile (a diagnostic control for
	// tests only; never a wire field).
	StartupProfile handoff.Profile
	// Resources, when set, says which SSH resources the runner serving a
	// project has (none without it).
	Resources Resources
	// Skills, when set, gives the skills part of the extension catalog
	// (unavailable with kernel.NoExtensionRuntime without it).
	Skills SkillCatalog
	// Plugins, when set, gives the plugins part of the extension catalog:
	// the MCP providers configured where the project's files are
	// (unavailable with kernel.NoExtensionRuntime without it).
	Plugins PluginCatalog
}

// PluginCatalog gives the selection metadata of the MCP providers serving
// a project; it starts none.
type PluginCatalog interface {
	Catalog(ctx context.Context, p project.Project) (mcpprovider.Catalog, error)
}

// SkillCatalog gives the selection metadata of a project's Agent Skills.
type SkillCatalog interface {
	Catalog(ctx context.Context, p project.Project) (skill.Catalog, error)
}

// Resources tells whether the runner serving a project has an SSH resource
// of a name.
type Resources interface {
	HasResource(ctx context.Context, p project.Project, name string) bool
}

// EvidenceCounter counts a session's evidence journal records by binding.
type EvidenceCounter interface {
	SessionCounts(ctx context.Context, sessionID string) (evidence.Counts, error)
}

// EvidenceView is session_summary's evidence block.
type EvidenceView struct {
	evidence.Counts
	// Proves states what a verified binding proves, and what it does not.
	Proves string `json:"proves"`
}

// Register adds the session tools to reg.
func Register(reg *kernel.Registry, t *Tools) {
	kernel.Register(reg, kernel.Spec[WorkInput, WorkOutput]{
		Runners: true,
		Name:    "work_on_project",
		Description: "Start a coding task (a new Workflow Session) or continue the session session_id names; " +
			"returns session_id, for later calls, and the instruction files.",
		Category: "sessions", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Mutates: true, Session: kernel.SessionOptional,
		Handler: t.workOnProject,
	})
	kernel.Register(reg, kernel.Spec[ListInput, ListOutput]{
		Runners:     true,
		Name:        "list_sessions",
		Description: "List your Workflow Sessions on one project, newest first; it never selects one.",
		Category:    "sessions", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Handler:     t.listSessions,
	})
	kernel.Register(reg, kernel.Spec[SummaryInput, SummaryOutput]{
		Runners:     true,
		Name:        "session_summary",
		Description: "One session: lifecycle, mode, execution context, counters and newest events.",
		Category:    "sessions", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Session:     kernel.SessionRequired,
		Handler:     t.sessionSummary,
	})
	kernel.Register(reg, kernel.Spec[ContextInput, ContextOutput]{
		Runners:     true,
		Name:        "update_session_context",
		Description: "Replace a session's default_cwd and default_shell; omitted fields are cleared.",
		Category:    "sessions", Scopes: []auth.Scope{auth.ScopeProjectWrite},
		Annotations: kernel.Annotations{Idempotent: true},
		Mutates:     true, Session: kernel.SessionRequired,
		Handler: t.updateContext,
	})
	kernel.Register(reg, kernel.Spec[CloseInput, CloseOutput]{
		Runners:     true,
		Name:        "close_session",
		Description: "Close a Workflow Session; closing a closed session changes nothing.",
		Category:    "sessions", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Annotations: kernel.Annotations{Idempotent: true},
		Session:     kernel.SessionRequired,
		Handler:     t.closeSession,
	})
}

// ModeWorktree is work_on_project's mode that starts the session on a new
// managed worktree of the project (the session's own mode is normal).
const ModeWorktree workflow.Mode = "worktree"

// Startup projection values.
const (
	// StartupProfile is the exploration profile of work_on_project's
	// continuation feedback: standard (at most handoff.ExplorationStandard
	// paths). Full feedback (handoff.ExplorationFull) is
	// session_handoff_summary's and finish_coding_task's.
	StartupProfile = handoff.ProfileStandard
	// InstructionsReused and InstructionsChanged are the instruction
	// status of a continued session whose files are as, or not as, the
	// session's previous work_on_project observed them.
	InstructionsReused  = "reused"
	InstructionsChanged = "changed"
	// instructionsFact is the fact of the work_on_project event that keeps
	// the instruction files' fingerprint.
	instructionsFact = "instructions_sha256"
)

// WorkInput is the input of work_on_project.
type WorkInput struct {
	kernel.ProjectRef
	kernel.SessionRef
	Instruction string        `json:"instruction" jsonschema:"the task, 1-4000 characters"`
	Mode        workflow.Mode `json:"mode,omitempty" jsonschema:"normal (default), read_only or worktree (on a new git worktree of project)"`
	BaseRef     string        `json:"base_ref,omitempty" jsonschema:"for worktree; default HEAD"`
	// The include_* flags default to true; false only leaves that
	// projection out (the instruction files are still read and their
	// status updated).
	IncludeWorkflowGuidance    *bool `json:"include_workflow_guidance,omitempty"`
	IncludeProjectInstructions *bool `json:"include_project_instructions,omitempty"`
	IncludeExtensionCatalog    *bool `json:"include_extension_catalog,omitempty"`
	// GuidanceProfile is the request-local presentation of the workflow
	// guidance: GuidanceDirect (the default, and the only one served).
	// It is neither remembered nor recorded; omission always means direct.
	GuidanceProfile string `json:"guidance_profile,omitempty" jsonschema:"direct (default)"`
}

// Guidance profiles (work_on_project guidance_profile). Only
// GuidanceDirect is served: this build has no Code Mode, so the others
// the spec and its reference name are guidance_profile_unavailable.
const (
	GuidanceDirect       = "direct"
	GuidanceCodeMode     = "code_mode"
	GuidanceHostCodeMode = "host_code_mode"
)

// Check implements kernel.Checker: an unavailable guidance profile fails
// parsing, before any session is created or continued, even with
// include_workflow_guidance false.
func (in WorkInput) Check() error {
	switch in.GuidanceProfile {
	case "", GuidanceDirect:
		return nil
	case GuidanceCodeMode, GuidanceHostCodeMode:
		return failure.New(failure.GuidanceProfileUnavailable,
			"guidance_profile %s needs an Experimental Code Mode build; this server serves only %s (omit guidance_profile)", in.GuidanceProfile, GuidanceDirect)
	}
	return failure.New(failure.InvalidArguments, "guidance_profile must be %s or %s", GuidanceDirect, GuidanceCodeMode)
}

// WorkOutput is the result of work_on_project.
type WorkOutput struct {
	SessionID        string                    `json:"session_id"`
	Continuation     string                    `json:"continuation"`
	Project          string                    `json:"project"`
	Mode             workflow.Mode             `json:"mode"`
	ExecutionContext workflow.ExecutionContext `json:"execution_context"`
	EventsObserved   int64                     `json:"events_observed"`
	// Workflow is the workflow guidance (omitted on request).
	Workflow string `json:"workflow,omitempty"`
	// Instructions are the project's instruction files; bodies are left
	// out on request.
	Instructions project.Instructions `json:"instructions"`
	// Extensions is the extension catalog, an ExtensionCatalog (omitted
	// on request).
	Extensions kernel.Object `json:"extensions,omitempty"`
	// Worktree is the session's managed worktree, a WorktreeView (absent
	// for an ordinary project).
	Worktree kernel.Object `json:"worktree,omitempty"`
	// Warnings lists warning codes (WarningSourceDirty).
	Warnings []string `json:"warnings,omitempty"`
	// ContinuationFeedback describes the previous attempt of a continued
	// session (a fresh session reports not_applicable / fresh_session).
	// (Typed as kernel.Object so the tools/list schema stays small; the
	// value is a handoff.ContinuationFeedback.)
	ContinuationFeedback kernel.Object `json:"continuation_feedback,omitempty" jsonschema:"on continue: the previous attempt's instruction, activity, changes, workset, unresolved failures, validation and next actions"`
}

// WarningSourceDirty says the source checkout of a new worktree had
// uncommitted changes or untracked files, which the worktree (checked
// out at the base commit) does not have.
const WarningSourceDirty = "source_dirty"

// WorktreeView is work_on_project's worktree block.
type WorktreeView struct {
	Managed       bool   `json:"managed"`
	Project       string `json:"project"`
	Path          string `json:"path"`
	SourceProject string `json:"source_project"`
	BaseRef       string `json:"base_ref,omitempty"`
	BaseCommit    string `json:"base_commit"`
	SourceDirty   bool   `json:"source_dirty"`
}

// ExtensionCatalog is the extension catalog. Skills is a skill.Catalog
// (selection metadata only, never instructions), or an Unavailable when
// the skills cannot be listed; Plugins is an mcpprovider.Catalog (ready
// providers whose cwd is the project root and that answered list; the
// others unavailable with their reason), or an Unavailable.
type ExtensionCatalog struct {
	Skills  any `json:"skills"`
	Plugins any `json:"plugins"`
}

// Unavailable is a projection that cannot be served, and why.
type Unavailable struct {
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// ReasonSkillsUnreadable is the reason of an unavailable skills catalog
// whose project could not be listed (its runner is away, say).
const ReasonSkillsUnreadable = "skills_unreadable"

// ReasonPluginsUnreadable is the reason of an unavailable plugins catalog
// whose project's providers could not be read (its runner is away, say).
const ReasonPluginsUnreadable = "plugins_unreadable"

// extensionCatalog is p's extension catalog.
func (t *Tools) extensionCatalog(ctx context.Context, p project.Project) ExtensionCatalog {
	c := ExtensionCatalog{
		Skills:  Unavailable{Status: "unavailable", Reason: kernel.NoExtensionRuntime},
		Plugins: Unavailable{Status: "unavailable", Reason: kernel.NoExtensionRuntime},
	}
	if t.Plugins != nil {
		if pc, err := t.Plugins.Catalog(ctx, p); err != nil {
			c.Plugins = Unavailable{Status: "unavailable", Reason: ReasonPluginsUnreadable}
		} else {
			c.Plugins = pc
		}
	}
	if t.Skills == nil {
		return c
	}
	sc, err := t.Skills.Catalog(ctx, p)
	if err != nil {
		c.Skills = Unavailable{Status: "unavailable", Reason: ReasonSkillsUnreadable}
		return c
	}
	c.Skills = sc
	return c
}

func include(b *bool) bool { return b == nil || *b }

func (t *Tools) profile() handoff.Profile {
	if t.StartupProfile != "" {
		return t.StartupProfile
	}
	return StartupProfile
}

func (t *Tools) workOnProject(ctx context.Context, inv *kernel.Invocation, in WorkInput) (WorkOutput, error) {
	var (
		sess         workflow.Session
		err          error
		continuation string
		wt           *worktree.Worktree
		prevEvents   []workflow.Event
	)
	mode := in.Mode
	if in.BaseRef != "" && mode != ModeWorktree {
		return WorkOutput{}, failure.New(failure.InvalidArguments, "base_ref needs mode worktree")
	}
	if mode == ModeWorktree {
		if t.Worktrees == nil {
			return WorkOutput{}, failure.New(failure.Unavailable, "managed worktrees are not available on this server")
		}
		mode = ""
	}
	var feedback *handoff.ContinuationFeedback
	if in.SessionID != "" {
		if in.Mode == ModeWorktree {
			// An exact resume re-observes the session's own worktree
			// (the kernel has checked the session is on inv.Project); it
			// never creates another.
			w, werr := t.Worktrees.Resume(ctx, inv.Project, in.BaseRef)
			if werr != nil {
				return WorkOutput{}, werr
			}
			wt = &w
		}
		// Describe the previous attempt from the session as it stands
		// before the new instruction is appended.
		if prev, gerr := t.Sessions.Get(ctx, in.SessionID); gerr == nil {
			if evs, eerr := t.Sessions.Store().Events(ctx, in.SessionID, 0); eerr == nil {
				prevEvents = evs
				fb := handoff.Feedback(prev, evs, handoff.FeedbackOptions{Profile: t.profile()})
				feedback = &fb
			}
		}
		sess, err = t.Sessions.Continue(ctx, in.SessionID, in.Instruction, mode)
		continuation = "continued"
	} else {
		projectID := inv.Project.ID
		if in.Mode == ModeWorktree {
			if !inv.Principal.Has(auth.ScopeProjectWrite) {
				return WorkOutput{}, failure.New(failure.InsufficientScope, "mode worktree requires scope %s", auth.ScopeProjectWrite)
			}
			if err := workflow.ValidateInstruction(in.Instruction); err != nil {
				return WorkOutput{}, err
			}
			w, werr := t.Worktrees.Create(ctx, inv.Project, in.BaseRef)
			if werr != nil {
				return WorkOutput{}, werr
			}
			wt, projectID = &w, w.Project.ID
		}
		sess, err = t.Sessions.Start(ctx, workflow.StartParams{
			Project: projectID, Fingerprint: inv.Principal.AuthorityFingerprint(),
			Mode: mode, Instruction: in.Instruction,
		})
		if err != nil && wt != nil {
			// The session could not be created: the worktree goes too.
			t.Worktrees.Discard(ctx, *wt)
		}
		if err == nil {
			inv.Adopt(sess)
			// A fresh session has no previous attempt: the feedback says
			// so (not_applicable / fresh_session).
			if evs, eerr := t.Sessions.Store().Events(ctx, sess.ID, 0); eerr == nil {
				fb := handoff.Feedback(sess, evs, handoff.FeedbackOptions{Profile: t.profile()})
				feedback = &fb
			}
		}
		continuation = "created"
	}
	if err != nil {
		return WorkOutput{}, err
	}
	target := inv.Project
	if wt != nil {
		target = wt.Project
	} else if inv.Project.Worktree() {
		wt = &worktree.Worktree{Project: inv.Project, Source: inv.Project.Source, BaseCommit: inv.Project.BaseCommit}
	}
	// The instruction files are read (and their status decided) whatever
	// the caller asked to be shown.
	ins := target.ReadInstructions()
	fp := ins.Fingerprint()
	inv.Fact(instructionsFact, fp)
	if prevFP := lastInstructionsFingerprint(prevEvents); prevFP != "" && ins.Status == "loaded" {
		ins.Status = InstructionsChanged
		if prevFP == fp {
			ins.Status = InstructionsReused
		}
	}
	if !include(in.IncludeProjectInstructions) {
		ins = ins.WithoutContent()
	}
	out := WorkOutput{
		SessionID: sess.ID, Continuation: continuation, Project: sess.Project, Mode: sess.Mode,
		ExecutionContext: sess.ExecutionContext, EventsObserved: sess.EventsObserved,
		Instructions: ins, ContinuationFeedback: feedbackValue(feedback),
	}
	if include(in.IncludeWorkflowGuidance) {
		out.Workflow = t.Guidance
	}
	if include(in.IncludeExtensionCatalog) {
		out.Extensions = t.extensionCatalog(ctx, target)
	}
	if wt != nil {
		v := WorktreeView{Managed: true, Project: wt.Project.ID, Path: wt.Project.Root, SourceProject: wt.Source,
			BaseRef: wt.BaseRef, BaseCommit: wt.BaseCommit, SourceDirty: wt.SourceDirty}
		out.Worktree = v
		inv.Fact("worktree_project", v.Project)
		inv.Fact("base_commit", v.BaseCommit)
		if v.SourceDirty {
			out.Warnings = []string{WarningSourceDirty}
		}
	}
	return out, nil
}

// lastInstructionsFingerprint is the instruction fingerprint the newest
// retained successful work_on_project of events recorded ("" none).
func lastInstructionsFingerprint(events []workflow.Event) string {
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.Tool == "work_on_project" && e.Outcome == workflow.OutcomeOK && e.Facts[instructionsFact] != "" {
			return e.Facts[instructionsFact]
		}
	}
	return ""
}

// feedbackValue keeps an absent feedback absent (a nil pointer in an any
// would serialize as null).
func feedbackValue(f *handoff.ContinuationFeedback) any {
	if f == nil {
		return nil
	}
	return f
}

// ListInput is the input of list_sessions.
type ListInput struct {
	kernel.ProjectRef
	Lifecycle workflow.Lifecycle `json:"lifecycle,omitempty" jsonschema:"active or closed; both when omitted"`
	Limit     int                `json:"limit,omitempty" jsonschema:"page size, default 20, max 50"`
	Offset    int                `json:"offset,omitempty"`
}

// SessionView is a session as tools show it (without the fingerprint).
type SessionView struct {
	SessionID          string                    `json:"session_id"`
	Project            string                    `json:"project"`
	Title              string                    `json:"title"`
	Mode               workflow.Mode             `json:"mode"`
	Lifecycle          workflow.Lifecycle        `json:"lifecycle"`
	ExecutionContext   workflow.ExecutionContext `json:"execution_context"`
	CreatedAt          string                    `json:"created_at"`
	UpdatedAt          string                    `json:"updated_at"`
	ClosedAt           string                    `json:"closed_at,omitempty"`
	EventsObserved     int64                     `json:"events_observed"`
	RetentionTruncated bool                      `json:"retention_truncated"`
	// EventsPurged counts the events the retention policy removed after
	// the session closed (omitted when none).
	EventsPurged int64             `json:"events_purged,omitempty"`
	Counters     workflow.Counters `json:"counters"`
}

// View converts a session header for display.
func View(s workflow.Session) SessionView {
	v := SessionView{
		SessionID: s.ID, Project: s.Project, Title: s.Title, Mode: s.Mode, Lifecycle: s.Lifecycle,
		ExecutionContext: s.ExecutionContext, CreatedAt: s.CreatedAt.Format(timeFormat),
		UpdatedAt: s.UpdatedAt.Format(timeFormat), EventsObserved: s.EventsObserved,
		RetentionTruncated: s.RetentionTruncated, EventsPurged: s.EventsPurged, Counters: s.Counters,
	}
	if s.ClosedAt != nil {
		v.ClosedAt = s.ClosedAt.Format(timeFormat)
	}
	return v
}

const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// ListOutput is the result of list_sessions.
type ListOutput struct {
	Sessions []SessionView `json:"sessions"`
	Total    int           `json:"total"`
	Offset   int           `json:"offset"`
}

func (t *Tools) listSessions(ctx context.Context, inv *kernel.Invocation, in ListInput) (ListOutput, error) {
	if in.Lifecycle != "" && in.Lifecycle != workflow.Active && in.Lifecycle != workflow.Closed {
		return ListOutput{}, failure.New(failure.InvalidArguments, "lifecycle must be active or closed")
	}
	if in.Limit < 0 || in.Limit > workflow.ListMax || in.Offset < 0 {
		return ListOutput{}, failure.New(failure.InvalidArguments, "limit must be 0-%d and offset non-negative", workflow.ListMax)
	}
	ss, total, err := t.Sessions.List(ctx, workflow.ListFilter{
		Project: inv.Project.ID, Fingerprint: inv.Principal.AuthorityFingerprint(),
		Lifecycle: in.Lifecycle, Limit: in.Limit, Offset: in.Offset,
	})
	if err != nil {
		return ListOutput{}, err
	}
	out := ListOutput{Sessions: make([]SessionView, 0, len(ss)), Total: total, Offset: in.Offset}
	for _, s := range ss {
		out.Sessions = append(out.Sessions, View(s))
	}
	return out, nil
}

// SummaryInput is the input of session_summary.
type SummaryInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
	Limit int `json:"limit,omitempty" jsonschema:"events, default 50, max 200"`
}

// SummaryOutput is the result of session_summary.
type SummaryOutput struct {
	Session        SessionView      `json:"session"`
	Events         []workflow.Event `json:"events"`
	EventsReturned int              `json:"events_returned"`
	// EventsComplete is false when older events exist beyond those returned
	// or were removed by retention.
	EventsComplete bool `json:"events_complete"`
	// Evidence counts the session's evidence journal records by binding
	// (null when the journal is not available).
	Evidence *EvidenceView `json:"evidence"`
	// OutcomeUnknown lists the retained calls whose outcome is unknown
	// (interrupted, cancelled, or recovered as outcome_unknown after a
	// crash): their count, tools and the newest of them. Typed loosely
	// (a handoff.UnknownOutcomeCalls) to keep the published schema small.
	OutcomeUnknown kernel.Object `json:"outcome_unknown"`
	// Goals names the correlated Goals (a workflow.CorrelatedGoals, at
	// most workflow.SummaryMaxGoals); absent when they were not read.
	Goals kernel.Object `json:"goals,omitempty" jsonschema:"correlated goals: items (goal_id, title), total, returned, truncated"`
}

func (t *Tools) sessionSummary(ctx context.Context, inv *kernel.Invocation, in SummaryInput) (SummaryOutput, error) {
	if in.Limit < 0 || in.Limit > workflow.SummaryMax {
		return SummaryOutput{}, failure.New(failure.InvalidArguments, "limit must be 1-%d", workflow.SummaryMax)
	}
	sess, evs, err := t.Sessions.Summary(ctx, in.SessionID, in.Limit)
	if err != nil {
		return SummaryOutput{}, err
	}
	if evs == nil {
		evs = []workflow.Event{}
	}
	complete := !sess.RetentionTruncated && (len(evs) == 0 || evs[0].Seq == 1)
	out := SummaryOutput{Session: View(sess), Events: evs, EventsReturned: len(evs), EventsComplete: complete}
	all, err := t.Sessions.Store().Events(ctx, sess.ID, 0)
	if err != nil {
		return SummaryOutput{}, err
	}
	out.OutcomeUnknown = handoff.UnknownOutcomes(sess, all, handoff.MaxUnknownCalls)
	if g := workflow.Correlated(ctx, t.Goals, sess.ID, workflow.SummaryMaxGoals); g != nil {
		out.Goals = g
	}
	if t.Evidence != nil {
		if c, err := t.Evidence.SessionCounts(ctx, sess.ID); err == nil {
			out.Evidence = &EvidenceView{Counts: c, Proves: handoff.EvidenceProves}
		}
	}
	return out, nil
}

// ContextInput is the input of update_session_context.
type ContextInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
	DefaultCwd   string         `json:"default_cwd,omitempty" jsonschema:"project-relative directory"`
	DefaultShell workflow.Shell `json:"default_shell,omitempty" jsonschema:"sh or bash"`
	Resource     string         `json:"resource,omitempty" jsonschema:"SSH resource of the project's runner: run_shell runs there; default_cwd is then remote"`
}

// ContextOutput is the result of update_session_context.
type ContextOutput struct {
	SessionID        string                    `json:"session_id"`
	ExecutionContext workflow.ExecutionContext `json:"execution_context"`
}

func (t *Tools) updateContext(ctx context.Context, inv *kernel.Invocation, in ContextInput) (ContextOutput, error) {
	ec := workflow.ExecutionContext{DefaultCwd: in.DefaultCwd, DefaultShell: in.DefaultShell, Resource: in.Resource}
	if err := ec.Validate(); err != nil {
		return ContextOutput{}, err
	}
	if ec.Resource != "" && (t.Resources == nil || !t.Resources.HasResource(ctx, inv.Project, ec.Resource)) {
		return ContextOutput{}, failure.New(failure.ResourceNotAllowed, "%q is not an SSH resource of the runner serving project %s", ec.Resource, inv.Project.ID)
	}
	if ec.DefaultCwd != "" && ec.Resource == "" {
		if err := ec.Validate(); err != nil {
			return ContextOutput{}, err
		}
		_, clean, err := inv.Project.Resolve(ec.DefaultCwd)
		if err != nil {
			return ContextOutput{}, failure.New(failure.InvalidExecutionContext, "default_cwd: %s", failure.MessageOf(err))
		}
		ec.DefaultCwd = clean
	}
	sess, err := t.Sessions.UpdateContext(ctx, in.SessionID, ec)
	if err != nil {
		return ContextOutput{}, err
	}
	return ContextOutput{SessionID: sess.ID, ExecutionContext: sess.ExecutionContext}, nil
}

// CloseInput is the input of close_session.
type CloseInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
	// RemoveWorktree removes the session's managed worktree before the
	// session closes (see removeWorktree).
	RemoveWorktree bool `json:"remove_worktree,omitempty" jsonschema:"remove the session's clean worktree too"`
}

// CloseOutput is the result of close_session.
type CloseOutput struct {
	SessionID string             `json:"session_id"`
	Lifecycle workflow.Lifecycle `json:"lifecycle"`
	Changed   bool               `json:"changed"`
	ClosedAt  string             `json:"closed_at"`
	// WorktreeRemoved names the managed worktree project removed with
	// remove_worktree.
	WorktreeRemoved string `json:"worktree_removed,omitempty"`
}

func (t *Tools) closeSession(ctx context.Context, inv *kernel.Invocation, in CloseInput) (CloseOutput, error) {
	var wt project.Project
	if in.RemoveWorktree {
		if !inv.Principal.Has(auth.ScopeProjectWrite) {
			return CloseOutput{}, failure.New(failure.InsufficientScope, "remove_worktree requires scope %s", auth.ScopeProjectWrite)
		}
		p, err := t.worktreeToRemove(ctx, in.SessionID)
		if err != nil {
			return CloseOutput{}, err
		}
		wt = p
	}
	sess, changed, err := t.Sessions.Close(ctx, in.SessionID)
	if err != nil {
		return CloseOutput{}, err
	}
	if changed && t.OnClose != nil {
		// The session's shells close while its project is still served.
		t.OnClose(sess.ID)
	}
	out := CloseOutput{SessionID: sess.ID, Lifecycle: sess.Lifecycle, Changed: changed}
	if wt.ID != "" {
		// The session is closed; a removal that fails now (changes made
		// since the check, a runner gone) leaves the worktree registered,
		// and close_session remove_worktree again removes it.
		if err := t.Worktrees.Remove(ctx, wt, false); err != nil {
			return CloseOutput{}, err
		}
		out.WorktreeRemoved = wt.ID
		inv.Fact("worktree_removed", wt.ID)
	}
	if sess.ClosedAt != nil {
		out.ClosedAt = sess.ClosedAt.Format(timeFormat)
	}
	return out, nil
}
