package handoff

import (
	"fmt"
	"slices"
	"time"

	"github.com/webcodex/webcodex/internal/redact"
	"github.com/webcodex/webcodex/internal/workflow"
)

// briefTask is the task block: the root instruction (only when the
// session's first events are retained) and the latest retained one.
// Redaction is the costly part: an excerpt already made for the same
// event is reused.
func briefTask(in BriefInput) BriefTask {
	var t BriefTask
	t.RootInstruction, t.LatestInstruction = Excerpt{}, Excerpt{}
	latest := int64(-1)
	for i := len(in.Events) - 1; i >= 0; i-- {
		if e := in.Events[i]; e.Kind == workflow.EventTaskInstruction {
			latest = e.Seq
			if in.Feedback != nil && in.Feedback.Attempt.Boundary.Seq == e.Seq && in.Feedback.Attempt.Instruction.Text != nil {
				t.LatestInstruction = in.Feedback.Attempt.Instruction
			} else {
				t.LatestInstruction = excerpt(e.Text)
			}
			break
		}
	}
	if !evicted(in.Session, in.Events) {
		for _, e := range in.Events {
			if e.Kind == workflow.EventTaskInstruction {
				if e.Seq == latest {
					t.RootInstruction = t.LatestInstruction
				} else {
					t.RootInstruction = excerpt(e.Text)
				}
				break
			}
		}
	}
	return t
}

// briefUnknownCalls lists the calls whose outcome is unknown.
func briefUnknownCalls(unknown UnknownOutcomeCalls) BriefUnknownCalls {
	u := BriefUnknownCalls{Items: []BriefUnknownCall{}, Total: unknown.Total,
		Returned: unknown.Returned, Truncated: unknown.Truncated}
	for _, c := range unknown.Items {
		bc := BriefUnknownCall{Tool: c.Tool, Outcome: c.Outcome, At: c.At.UTC().Format(time.RFC3339Nano)}
		if !c.StartedAt.IsZero() {
			bc.StartedAt = c.StartedAt.UTC().Format(time.RFC3339Nano)
		}
		u.Items = append(u.Items, bc)
	}
	return u
}

// briefWorkspace fills b's workspace block (and its conflict attention)
// and reports whether the workspace is conflicted and the basis reasons
// it adds.
func briefWorkspace(b *HandoffBrief, in BriefInput) (conflict bool, reasons []string) {
	switch {
	case in.Workspace != nil:
		w := in.Workspace
		branch, _ := redact.Truncate(redact.String(w.Branch), BriefMaxRefChars)
		head, _ := redact.Truncate(w.Head, BriefMaxRefChars)
		b.Workspace = BriefWorkspace{Status: WorkspaceAvailable, Branch: ptr(branch), Head: ptr(head),
			Dirty: ptr(w.Dirty), Conflicted: ptr(w.Conflicted), Ahead: ptr(w.Ahead), Behind: ptr(w.Behind)}
		b.Attention.WorkspaceConflict = ptr(w.Conflicted)
		conflict = w.Conflicted
	case in.IncludeWorkspace:
		b.Workspace = BriefWorkspace{Status: WorkspaceUnavailable, ReasonCode: ptr(BasisWorkspaceUnavailable)}
		reasons = append(reasons, BasisWorkspaceUnavailable)
	default:
		b.Workspace = BriefWorkspace{Status: WorkspaceNotRequested, ReasonCode: ptr(BasisWorkspaceNotRequested)}
		reasons = append(reasons, BasisWorkspaceNotRequested)
	}
	return conflict, reasons
}

// briefFeedback fills b's progress, validation and job attention from the
// continuation feedback fb (nil: unavailable) and reports whether a job
// blocks and the basis reasons it adds.
func briefFeedback(b *HandoffBrief, fb *ContinuationFeedback) (blockingJobs bool, reasons []string) {
	b.Progress.Changes = PathList{Items: []string{}}
	b.Progress.RecentFiles = PathList{Items: []string{}}
	b.Validation = BriefValidation{Status: ValidationUnavailable, OpenFailures: BriefFailures{Items: []string{}}}
	if fb == nil {
		reasons = append(reasons, BasisContinuationUnavailable, BasisValidationUnavailable, BasisJobSummaryUnavailable)
		b.Validation.ReasonCode = ptr(BasisValidationUnavailable)
		return false, reasons
	}
	a := fb.Attempt
	if a.Boundary.Source == SourceUnavailable {
		reasons = append(reasons, BasisAttemptBoundaryEvicted)
	}
	b.Progress.MeaningfulToolCalls = a.Activity.MeaningfulToolCalls
	b.Progress.Changes = rebound(a.Changes, BriefMaxChanges)
	b.Progress.RecentFiles = rebound(a.Exploration.PathList, BriefMaxRecentFiles)
	v := fb.Validation
	b.Validation.Status = v.Status
	switch v.Status {
	case ValidationNotRequested:
		reasons = append(reasons, BasisValidationNotRequested)
		b.Validation.ReasonCode = ptr(BasisValidationNotRequested)
	case ValidationUnavailable:
		reasons = append(reasons, BasisValidationUnavailable)
		b.Validation.ReasonCode = ptr(BasisValidationUnavailable)
	}
	of := &b.Validation.OpenFailures
	of.Total = v.Unresolved.Total
	for _, f := range v.Unresolved.Items {
		if len(of.Items) == BriefMaxFailures {
			break
		}
		of.Items = append(of.Items, f.ID)
	}
	of.Returned, of.Truncated = len(of.Items), len(of.Items) < of.Total
	if j := fb.Jobs; j != nil {
		b.Attention.ActiveJobs, b.Attention.BlockingJobs = ptr(j.Active), ptr(j.Blocking)
		b.Attention.TerminalPendingJobs, b.Attention.RecoveringJobs = ptr(j.TerminalPending), ptr(j.Recovering)
		blockingJobs = j.Blocking > 0 || j.Recovering > 0
	} else {
		reasons = append(reasons, BasisJobSummaryUnavailable)
	}
	return blockingJobs, reasons
}

// briefAttention fills b's board attention from the guidance snapshot and
// returns the basis reasons the snapshot's gaps add.
func briefAttention(b *HandoffBrief, in BriefInput) []string {
	var reasons []string
	if g := in.Guidance; g != nil {
		b.Attention.OpenGuidance, b.Attention.OpenRisks = ptr(g.OpenGuidance), ptr(g.OpenRisks)
		b.Attention.OpenQuestions, b.Attention.OpenTodos = ptr(g.OpenQuestions), ptr(g.OpenTodos)
		b.Attention.UnresolvedAckRequired = ptr(g.UnresolvedAckRequired)
	} else {
		reasons = append(reasons, BasisGuidanceUnavailable)
	}
	if in.SessionChanged {
		reasons = append(reasons, BasisSessionChangedDuringSnapshot)
	}
	if in.IncludeCheckpoints {
		reasons = append(reasons, BasisCheckpointsUnavailable)
	}
	return reasons
}

// progressState is the brief's progress state, in precedence order:
// closed; blocked (blocked reports a workspace conflict, a blocking job or
// a failed validation; an open risk blocks too); needs validation;
// insufficient evidence (judged on the basis reasons); ready to continue.
func progressState(in BriefInput, blocked bool, reasons []string) string {
	fb := in.Feedback
	openRisk := in.Guidance != nil && in.Guidance.OpenRisks > 0
	switch {
	case !in.Session.Mutable():
		return StateClosed
	case blocked || openRisk:
		return StateBlocked
	case fb != nil && fb.Attempt.Changes.Total > 0 &&
		!(fb.Validation.Status == ValidationPassed && fb.Validation.LatestSeq > fb.Attempt.LastChangeSeq):
		return StateNeedsValidation
	case criticalMissing(reasons):
		return StateInsufficientEvidence
	default:
		return StateReadyToContinue
	}
}

// nextActions are the brief's next actions, starting from actions: the
// feedback's, re-derived with the workspace conflict, with the first
// unknown-outcome call to inspect right after the first failing test
// (openFailures: one is named), bounded by BriefMaxNextActions.
func nextActions(actions []string, in BriefInput, conflict bool, unknown UnknownOutcomeCalls, openFailures bool) []string {
	s, fb := in.Session, in.Feedback
	if fb != nil {
		actions = suggest(s, fb, conflict)
	} else if !s.Mutable() {
		actions = []string{ActionClosed}
	}
	if len(unknown.Items) > 0 {
		at := 0
		if openFailures && len(actions) > 0 {
			at = 1
		}
		actions = slices.Insert(actions, at, fmt.Sprintf(ActionInspectUnknown, unknown.Items[0].Tool))
	}
	if len(actions) > BriefMaxNextActions {
		actions = actions[:BriefMaxNextActions]
	}
	return actions
}
