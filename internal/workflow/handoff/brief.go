package handoff

import (
	"encoding/json"
	"slices"
	"sort"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/redact"
	"github.com/webcodex/webcodex/internal/workflow"
)

// Bounds of the version-1 handoff_brief.
const (
	// BriefVersion is the handoff_brief version.
	BriefVersion = 1
	// BriefMaxBytes hard-caps the serialized brief.
	BriefMaxBytes = 8192
	// BriefMaxChanges bounds progress.changes.
	BriefMaxChanges = 12
	// BriefMaxRecentFiles bounds progress.recent_files.
	BriefMaxRecentFiles = 8
	// BriefMaxFailures bounds validation.open_failures.
	BriefMaxFailures = 5
	// BriefMaxNextActions bounds next_actions.
	BriefMaxNextActions = 5
	// BriefMaxRefChars bounds workspace branch and head.
	BriefMaxRefChars = 200
	// BriefMaxGoals bounds goals, the correlated Goals (id and title).
	BriefMaxGoals = 5
)

// Progress states, in precedence order.
const (
	StateClosed               = "closed"
	StateBlocked              = "blocked"
	StateNeedsValidation      = "needs_validation"
	StateInsufficientEvidence = "insufficient_evidence"
	StateReadyToContinue      = "ready_to_continue"
)

// Workspace statuses.
const (
	WorkspaceAvailable    = "available"
	WorkspaceNotRequested = "not_requested"
	WorkspaceUnavailable  = "unavailable"
)

// Basis reason codes (the fixed set).
const (
	BasisAttemptBoundaryEvicted = "attempt_boundary_evicted"
	// BasisCheckpointsUnavailable: workspace checkpoints were requested
	// (include_checkpoints) and this server has none to observe.
	BasisCheckpointsUnavailable       = "checkpoints_unavailable"
	BasisContinuationUnavailable      = "continuation_unavailable"
	BasisGuidanceUnavailable          = "guidance_unavailable"
	BasisJobSummaryUnavailable        = "job_summary_unavailable"
	BasisSessionChangedDuringSnapshot = "session_changed_during_snapshot"
	BasisValidationNotRequested       = "validation_not_requested"
	BasisValidationUnavailable        = "validation_unavailable"
	BasisWorkspaceNotRequested        = "workspace_not_requested"
	BasisWorkspaceUnavailable         = "workspace_unavailable"
)

// WorkspaceSnapshot is the Git state the caller observed.
type WorkspaceSnapshot struct {
	Branch     string
	Head       string
	Dirty      bool
	Conflicted bool
	Ahead      int
	Behind     int
}

// GuidanceSnapshot holds the open message-board counts the caller proved.
type GuidanceSnapshot struct {
	OpenGuidance, OpenRisks, OpenQuestions, OpenTodos int
	// UnresolvedAckRequired counts the open requires_ack messages.
	UnresolvedAckRequired int
}

// GuidanceOf is the brief's view of a board's open collaboration counts.
func GuidanceOf(c workflow.CollaborationCounts) *GuidanceSnapshot {
	return &GuidanceSnapshot{OpenGuidance: c.OpenGuidance, OpenRisks: c.OpenRisks, OpenQuestions: c.OpenQuestions,
		OpenTodos: c.OpenTodos, UnresolvedAckRequired: c.UnresolvedAckRequired}
}

// BriefInput is everything [Brief] projects; it gathers nothing itself.
type BriefInput struct {
	Session workflow.Session
	// Events are the session's retained events, ascending.
	Events []workflow.Event
	// Feedback is the continuation feedback over Events; nil when it is
	// unavailable.
	Feedback *ContinuationFeedback
	// IncludeWorkspace says whether workspace state was requested;
	// Workspace is nil when it was not observed.
	IncludeWorkspace bool
	Workspace        *WorkspaceSnapshot
	// IncludeCheckpoints says workspace checkpoints were requested. This
	// server has no checkpoint store, so the basis reports
	// checkpoints_unavailable (never a made-up empty list).
	IncludeCheckpoints bool
	// Guidance is the board's open counts, read under the snapshot fence;
	// nil when they could not be read (guidance_unavailable).
	Guidance *GuidanceSnapshot
	// SessionChanged reports that the snapshot fence moved while the
	// evidence was gathered (or the session disappeared).
	SessionChanged bool
	// Evidence is the evidence journal's view of the session; nil when no
	// journal was consulted (the basis then shows evidence: null).
	Evidence *BriefEvidence
	// Goals are the Goals correlated with the session; nil when no Goal
	// reader was consulted or it failed (the brief then has no goals).
	Goals *workflow.CorrelatedGoals
}

// EvidenceProves states, in every brief that carries evidence counts, what
// a verified binding proves and what it does not.
const EvidenceProves = "a verified binding proves which session a call was attributed to, never that the work was correct"

// BriefEvidence is the basis's evidence block: how the session's journal
// records are bound, and the signed checkpoint that covers them.
type BriefEvidence struct {
	Verified     int64 `json:"verified"`
	Sessionless  int64 `json:"sessionless"`
	InvalidClaim int64 `json:"invalid_claim"`
	Unknown      int64 `json:"unknown"`
	// Checkpoint is the journal head signed for this brief; nil when none
	// could be signed.
	Checkpoint *BriefCheckpoint `json:"checkpoint"`
	Proves     string           `json:"proves"`
}

// BriefCheckpoint is a signed journal checkpoint: keep Note to check later,
// offline, that the journal was not rolled back or rewritten
// (webcodex evidence verify --from).
type BriefCheckpoint struct {
	Origin   string `json:"origin"`
	Size     uint64 `json:"size"`
	RootHash string `json:"root_hash"`
	KeyID    string `json:"key_id"`
	Note     string `json:"note"`
}

// HandoffBrief is handoff_brief version 1.
type HandoffBrief struct {
	Version       int             `json:"version"`
	Deterministic bool            `json:"deterministic"`
	LLMSummary    bool            `json:"llm_summary"`
	Session       BriefSession    `json:"session"`
	Task          BriefTask       `json:"task"`
	Workspace     BriefWorkspace  `json:"workspace"`
	Progress      BriefProgress   `json:"progress"`
	Validation    BriefValidation `json:"validation"`
	Attention     BriefAttention  `json:"attention"`
	NextActions   []string        `json:"next_actions"`
	Basis         BriefBasis      `json:"basis"`
	// Goals names the correlated Goals (at most BriefMaxGoals, id and
	// title only); absent when they were not read.
	Goals *workflow.CorrelatedGoals `json:"goals,omitempty"`
}

// BriefSession identifies the session.
type BriefSession struct {
	SessionID string             `json:"session_id"`
	Lifecycle workflow.Lifecycle `json:"lifecycle"`
	Mode      workflow.Mode      `json:"mode"`
}

// BriefTask holds the root and latest instruction excerpts.
type BriefTask struct {
	RootInstruction   Excerpt `json:"root_instruction"`
	LatestInstruction Excerpt `json:"latest_instruction"`
}

// BriefWorkspace is the workspace block; fields are null unless
// available.
type BriefWorkspace struct {
	Status     string  `json:"status"`
	ReasonCode *string `json:"reason_code"`
	Branch     *string `json:"branch"`
	Head       *string `json:"head"`
	Dirty      *bool   `json:"dirty"`
	Conflicted *bool   `json:"conflicted"`
	Ahead      *int    `json:"ahead"`
	Behind     *int    `json:"behind"`
}

// BriefProgress is the progress block.
type BriefProgress struct {
	State               string   `json:"state"`
	MeaningfulToolCalls int      `json:"meaningful_tool_calls"`
	Changes             PathList `json:"changes"`
	RecentFiles         PathList `json:"recent_files"`
	// MayHaveChanged lists the calls whose outcome is unknown (at most
	// BriefMaxUnknownCalls, newest first), except those of the read tools,
	// which change nothing: what they changed, if anything, is not in
	// Changes.
	MayHaveChanged BriefUnknownCalls `json:"may_have_changed"`
}

// BriefUnknownCall is one call whose outcome is unknown.
type BriefUnknownCall struct {
	Tool    string           `json:"tool"`
	Outcome workflow.Outcome `json:"outcome"`
	// At is when the call's finish was recorded (for a call recovered
	// after a crash, the restart).
	At string `json:"at"`
	// StartedAt is when the call started ("" when that event is no longer
	// retained).
	StartedAt string `json:"started_at"`
}

// BriefUnknownCalls is progress.may_have_changed.
type BriefUnknownCalls struct {
	Items     []BriefUnknownCall `json:"items"`
	Total     int                `json:"total"`
	Returned  int                `json:"returned"`
	Truncated bool               `json:"truncated"`
}

// BriefFailures lists open failure identities.
type BriefFailures struct {
	Items     []string `json:"items"`
	Total     int      `json:"total"`
	Returned  int      `json:"returned"`
	Truncated bool     `json:"truncated"`
}

// BriefValidation is the validation block.
type BriefValidation struct {
	Status       string        `json:"status"`
	OpenFailures BriefFailures `json:"open_failures"`
	ReasonCode   *string       `json:"reason_code"`
}

// BriefAttention holds attention counts; null means unavailable.
type BriefAttention struct {
	WorkspaceConflict   *bool `json:"workspace_conflict"`
	ActiveJobs          *int  `json:"active_jobs"`
	BlockingJobs        *int  `json:"blocking_jobs"`
	TerminalPendingJobs *int  `json:"terminal_pending_jobs"`
	RecoveringJobs      *int  `json:"recovering_jobs"`
	OpenGuidance        *int  `json:"open_guidance"`
	OpenRisks           *int  `json:"open_risks"`
	OpenQuestions       *int  `json:"open_questions"`
	OpenTodos           *int  `json:"open_todos"`
	// UnresolvedAckRequired counts the open messages that require an ACK.
	UnresolvedAckRequired *int `json:"unresolved_ack_required"`
}

// BriefBasis says whether the brief rests on complete evidence, and
// carries the evidence journal's counts and checkpoint.
type BriefBasis struct {
	Complete    bool           `json:"complete"`
	ReasonCodes []string       `json:"reason_codes"`
	Evidence    *BriefEvidence `json:"evidence"`
}

func ptr[T any](v T) *T { return &v }

// Brief builds handoff_brief version 1 and its JSON encoding, which never
// exceeds BriefMaxBytes. The same input yields byte-identical output.
func Brief(in BriefInput) (HandoffBrief, []byte) {
	s := in.Session
	b := HandoffBrief{
		Version: BriefVersion, Deterministic: true, LLMSummary: false,
		Session:     BriefSession{SessionID: s.ID, Lifecycle: s.Lifecycle, Mode: s.Mode},
		NextActions: []string{},
	}
	var reasons []string

	b.Task = briefTask(in)
	unknown := UnknownOutcomes(s, mayChange(in.Events), BriefMaxUnknownCalls)
	b.Progress.MayHaveChanged = briefUnknownCalls(unknown)
	conflict, r := briefWorkspace(&b, in)
	reasons = append(reasons, r...)
	blockingJobs, r := briefFeedback(&b, in.Feedback)
	reasons = append(reasons, r...)
	reasons = append(reasons, briefAttention(&b, in)...)
	sort.Strings(reasons)
	reasons = slices.Compact(reasons)
	b.Basis = BriefBasis{Complete: len(reasons) == 0, ReasonCodes: append([]string{}, reasons...)}
	if in.Evidence != nil {
		ev := *in.Evidence
		ev.Proves = EvidenceProves
		b.Basis.Evidence = &ev
	}
	if g := in.Goals; g != nil {
		n := min(len(g.Items), BriefMaxGoals)
		b.Goals = &workflow.CorrelatedGoals{Items: slices.Clone(g.Items[:n]), Total: g.Total, Returned: n, Truncated: n < g.Total}
	}
	b.Progress.State = progressState(in, conflict || blockingJobs || b.Validation.Status == ValidationFailed, reasons)
	b.NextActions = nextActions(b.NextActions, in, conflict, unknown, len(b.Validation.OpenFailures.Items) > 0)
	return b, fit(&b)
}

// criticalMissing reports whether evidence a receiver needs to continue is
// missing (job, guidance and workspace summaries are not critical).
func criticalMissing(reasons []string) bool {
	for _, r := range reasons {
		switch r {
		case BasisAttemptBoundaryEvicted, BasisContinuationUnavailable, BasisSessionChangedDuringSnapshot, BasisValidationUnavailable:
			return true
		}
	}
	return false
}

// rebound narrows a path list to max items, keeping its real total.
func rebound(l PathList, max int) PathList {
	out := PathList{Items: []string{}, Total: l.Total}
	n := min(len(l.Items), max)
	out.Items = append(out.Items, l.Items[:n]...)
	out.Returned, out.Truncated = n, n < l.Total
	return out
}

func encode(b *HandoffBrief) []byte {
	out, err := json.Marshal(b)
	if err != nil {
		// Only plain strings, ints and bools: cannot fail.
		panic("handoff: marshal brief: " + err.Error())
	}
	return out
}

// fit reduces b, in a stable order, until its encoding fits BriefMaxBytes:
// recent files, changed paths, failure identities, next actions, goals,
// then instruction excerpt characters (root first, then latest).
func fit(b *HandoffBrief) []byte {
	out := encode(b)
	popPath := func(l *PathList) bool {
		if len(l.Items) == 0 {
			return false
		}
		l.Items = l.Items[:len(l.Items)-1]
		l.Returned, l.Truncated = len(l.Items), true
		return true
	}
	steps := []func() bool{
		func() bool { return popPath(&b.Progress.RecentFiles) },
		func() bool { return popPath(&b.Progress.Changes) },
		func() bool {
			u := &b.Progress.MayHaveChanged
			if len(u.Items) == 0 {
				return false
			}
			u.Items = u.Items[:len(u.Items)-1]
			u.Returned, u.Truncated = len(u.Items), true
			return true
		},
		func() bool {
			f := &b.Validation.OpenFailures
			if len(f.Items) == 0 {
				return false
			}
			f.Items = f.Items[:len(f.Items)-1]
			f.Returned, f.Truncated = len(f.Items), true
			return true
		},
		func() bool {
			if len(b.NextActions) == 0 {
				return false
			}
			b.NextActions = b.NextActions[:len(b.NextActions)-1]
			return true
		},
		func() bool {
			g := b.Goals
			if g == nil || len(g.Items) == 0 {
				return false
			}
			g.Items = g.Items[:len(g.Items)-1]
			g.Returned, g.Truncated = len(g.Items), true
			return true
		},
	}
	for _, step := range steps {
		for len(out) > BriefMaxBytes && step() {
			out = encode(b)
		}
	}
	for _, e := range []*Excerpt{&b.Task.RootInstruction, &b.Task.LatestInstruction} {
		for len(out) > BriefMaxBytes && e.Text != nil && *e.Text != "" {
			// Each character encodes to at most 6 bytes, so cutting
			// ceil(over/6) characters never removes much more than needed.
			over := len(out) - BriefMaxBytes
			n := utf8.RuneCountInString(*e.Text)
			t, _ := redact.Truncate(*e.Text, max(0, n-(over+5)/6))
			e.Text, e.Truncated = &t, true
			out = encode(b)
		}
	}
	return out
}

// mayChange returns events without the finishes of read tools.
func mayChange(events []workflow.Event) []workflow.Event {
	out := make([]workflow.Event, 0, len(events))
	for _, e := range events {
		if e.Kind == workflow.EventToolCallFinished && readTools[e.Tool] {
			continue
		}
		out = append(out, e)
	}
	return out
}
