// Package handoff holds the deterministic, read-only projections a new
// window, a new agent or a human receiver uses to pick up a Workflow
// Session: continuation_feedback ([Feedback]) and the version-1
// handoff_brief ([Brief]).
//
// Both are pure: they consume only the session header, its retained events
// and the bounded snapshots the caller already obtained (Jobs, workspace).
// They perform no I/O, append nothing, consume no guidance and call no
// LLM; the same input always yields the same output, byte for byte.
package handoff

import (
	"fmt"
	"slices"
	"strings"

	"github.com/webcodex/webcodex/internal/redact"
	"github.com/webcodex/webcodex/internal/workflow"
)

// Profile selects how many exploration paths continuation feedback
// returns.
type Profile string

// Profiles.
const (
	ProfileMinimal  Profile = "minimal"
	ProfileStandard Profile = "standard"
	ProfileFull     Profile = "full"
)

// Bounds of continuation feedback.
const (
	// ExplorationMinimal, ExplorationStandard and ExplorationFull bound the
	// exploration workset per profile.
	ExplorationMinimal  = 3
	ExplorationStandard = 12
	ExplorationFull     = 100
	// MaxFeedbackChanges bounds the changed paths of an attempt.
	MaxFeedbackChanges = 100
	// MaxFeedbackFailures bounds the unresolved failure identities.
	MaxFeedbackFailures = 20
	// MaxErrorKinds bounds the failure buckets; further kinds count as
	// BucketOther.
	MaxErrorKinds = 16
	// MaxSuggestedActions bounds suggested_next_actions.
	MaxSuggestedActions = 5
	// ExcerptMaxChars bounds an instruction excerpt, in Unicode characters.
	ExcerptMaxChars = 600
)

// Limit returns the exploration bound of p (standard when unknown).
func (p Profile) Limit() int {
	switch p {
	case ProfileMinimal:
		return ExplorationMinimal
	case ProfileFull:
		return ExplorationFull
	}
	return ExplorationStandard
}

// Feedback statuses and reason codes.
const (
	StatusAvailable     = "available"
	StatusNotApplicable = "not_applicable"

	ReasonFreshSession           = "fresh_session"
	ReasonAttemptBoundaryEvicted = "attempt_boundary_evicted"

	// Boundary sources.
	SourceTaskInstruction = "task_instruction"
	SourceSessionStart    = "session_start"
	SourceUnavailable     = "unavailable"

	// BucketOther collects failures beyond MaxErrorKinds kinds.
	BucketOther = "other"
)

// Validation statuses.
const (
	ValidationPassed       = "passed"
	ValidationFailed       = "failed"
	ValidationInconclusive = "inconclusive"
	ValidationNotRun       = "not_run"
	ValidationNotRequested = "not_requested"
	ValidationUnavailable  = "unavailable"
)

// readTools are the tools whose successful observed paths are exploration
// evidence: focused reads, searches and typed LSP navigation (the lsp
// tool observes the requested file and the in-project paths of its
// result). Listing, overview, Git lists and shells are not.
var readTools = map[string]bool{"read_files": true, "search_project_texts": true, "search_and_read": true, "lsp": true}

// metaTools are session bookkeeping tools: their calls are not meaningful
// task activity.
var metaTools = map[string]bool{
	"work_on_project": true, "list_sessions": true, "session_summary": true, "close_session": true,
	"update_session_context": true, "validation_summary": true, "session_handoff_summary": true,
	"finish_coding_task": true,
}

// JobsSnapshot holds Job counts the caller proved over the full bounded
// active Job aggregate (never a truncated page). A nil snapshot means the
// Job summary is unavailable.
type JobsSnapshot struct {
	// Active counts queued and running jobs of the caller in the project.
	Active int `json:"active"`
	// Blocking counts active jobs of this session.
	Blocking int `json:"blocking"`
	// TerminalPending counts terminal validation jobs of this session
	// whose evidence is not yet materialized (nonblocking).
	TerminalPending int `json:"terminal_pending"`
	// Recovering counts jobs being recovered.
	Recovering int `json:"recovering"`
}

// FeedbackOptions parameterize [Feedback].
type FeedbackOptions struct {
	Profile Profile
	// SkipValidation reports validation as not_requested (never not_run).
	SkipValidation bool
	// Jobs is the proven Job snapshot; nil when unavailable.
	Jobs *JobsSnapshot
}

// PathList is a bounded, newest-first, deduplicated list of paths.
type PathList struct {
	Items     []string `json:"items"`
	Total     int      `json:"total"`
	Returned  int      `json:"returned"`
	Truncated bool     `json:"truncated"`
}

// Exploration is the attempt's exploration workset.
type Exploration struct {
	PathList
	// Complete is false when the attempt boundary was evicted.
	Complete bool `json:"complete"`
}

// Boundary says where the attempt starts.
type Boundary struct {
	Source     string `json:"source"`
	ReasonCode string `json:"reason_code,omitempty"`
	// Seq is the seq of the boundary task_instruction (0 otherwise).
	Seq int64 `json:"seq"`
}

// EventRange is the retained event range of the attempt.
type EventRange struct {
	FirstSeq int64 `json:"first_seq"`
	LastSeq  int64 `json:"last_seq"`
	Complete bool  `json:"complete"`
}

// Excerpt is a redacted, bounded instruction excerpt; Text is nil when no
// such instruction is retained.
type Excerpt struct {
	Text      *string `json:"excerpt"`
	Truncated bool    `json:"truncated"`
}

// Activity counts the attempt's tool activity. A replay (a call that
// returned an earlier call's result under an idempotency key, changing
// nothing) is a tool call, never a meaningful one: it is counted in
// ToolCalls and Replays only.
type Activity struct {
	ToolCalls           int            `json:"tool_calls"`
	MeaningfulToolCalls int            `json:"meaningful_tool_calls"`
	Replays             int            `json:"replays"`
	Failures            int            `json:"failures"`
	FailuresByKind      map[string]int `json:"failures_by_kind"`
	GuardDenials        int            `json:"guard_denials"`
}

// Attempt describes the current attempt (since the latest retained
// task_instruction).
type Attempt struct {
	Boundary    Boundary    `json:"boundary"`
	EventRange  EventRange  `json:"event_range"`
	Instruction Excerpt     `json:"instruction"`
	Activity    Activity    `json:"activity"`
	Changes     PathList    `json:"changes"`
	Exploration Exploration `json:"exploration"`
	// LastChangeSeq is the seq of the newest change (0 when none).
	LastChangeSeq int64 `json:"last_change_seq"`
}

// FailureList is a bounded list of unresolved failure identities.
type FailureList struct {
	Items     []workflow.UnresolvedFailure `json:"items"`
	Total     int                          `json:"total"`
	Returned  int                          `json:"returned"`
	Truncated bool                         `json:"truncated"`
}

// FeedbackValidation is the validation picture over the retained ledger.
type FeedbackValidation struct {
	Status     string `json:"status"`
	ReasonCode string `json:"reason_code,omitempty"`
	Runs       int    `json:"runs"`
	// LatestSeq is the seq of the newest validation run (0 when none).
	LatestSeq  int64       `json:"latest_seq"`
	Unresolved FailureList `json:"unresolved"`
}

// ContinuationFeedback is the continuation_feedback projection.
type ContinuationFeedback struct {
	Status                string                    `json:"status"`
	ReasonCode            string                    `json:"reason_code,omitempty"`
	Attempt               Attempt                   `json:"attempt"`
	Validation            FeedbackValidation        `json:"validation"`
	ValidationDelta       *workflow.ValidationDelta `json:"validation_delta"`
	ValidationDeltaReason string                    `json:"validation_delta_reason,omitempty"`
	// Jobs is nil when the Job summary is unavailable.
	Jobs                 *JobsSnapshot `json:"jobs"`
	SuggestedNextActions []string      `json:"suggested_next_actions"`
}

// excerpt redacts and bounds an instruction.
func excerpt(text string) Excerpt {
	r := redact.String(text)
	out, cut := redact.Truncate(r, ExcerptMaxChars)
	// Stored text was redacted at write time: a marker means redaction
	// changed it.
	return Excerpt{Text: &out, Truncated: cut || r != text || strings.Contains(r, redact.Marker)}
}

// evicted reports whether the session's first events are no longer
// retained.
func evicted(s workflow.Session, events []workflow.Event) bool {
	if len(events) > 0 {
		return events[0].Seq > 1
	}
	return s.RetentionTruncated || s.EventsObserved > 0
}

// Feedback projects the continuation feedback of a session from its
// retained events (ascending seq). It is pure and deterministic.
func Feedback(s workflow.Session, events []workflow.Event, opts FeedbackOptions) ContinuationFeedback {
	fb := ContinuationFeedback{Status: StatusAvailable, Jobs: opts.Jobs}
	if opts.Jobs != nil {
		j := *opts.Jobs
		fb.Jobs = &j
	}
	// Attempt boundary: the latest retained task_instruction.
	start := -1
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == workflow.EventTaskInstruction {
			start = i
			break
		}
	}
	a := &fb.Attempt
	lost := evicted(s, events)
	window := events
	switch {
	case start >= 0:
		a.Boundary = Boundary{Source: SourceTaskInstruction, Seq: events[start].Seq}
		a.Instruction = excerpt(events[start].Text)
		window = events[start:]
		a.EventRange.Complete = true
	case lost:
		a.Boundary = Boundary{Source: SourceUnavailable, ReasonCode: ReasonAttemptBoundaryEvicted}
	default:
		a.Boundary = Boundary{Source: SourceSessionStart}
		a.EventRange.Complete = true
	}
	if len(window) > 0 {
		a.EventRange.FirstSeq, a.EventRange.LastSeq = window[0].Seq, window[len(window)-1].Seq
	}

	// Activity, changes and exploration, newest first.
	a.Activity.FailuresByKind = map[string]int{}
	var changed, explored []string
	seenC, seenE := map[string]bool{}, map[string]bool{}
	for i := len(window) - 1; i >= 0; i-- {
		e := &window[i]
		switch e.Kind {
		case workflow.EventGuardDenied:
			a.Activity.GuardDenials++
		case workflow.EventToolCallFinished:
			a.Activity.ToolCalls++
			switch {
			case e.Replayed:
				a.Activity.Replays++
			case !metaTools[e.Tool]:
				a.Activity.MeaningfulToolCalls++
			}
			if e.Outcome != workflow.OutcomeOK {
				a.Activity.Failures++
				k := e.ErrorKind
				if k == "" {
					k = string(e.Outcome)
				}
				if k == "" {
					k = BucketOther
				}
				if _, ok := a.Activity.FailuresByKind[k]; !ok && len(a.Activity.FailuresByKind) >= MaxErrorKinds-1 {
					k = BucketOther
				}
				a.Activity.FailuresByKind[k]++
			}
			for _, p := range e.ChangedPaths {
				if !seenC[p] {
					seenC[p] = true
					changed = append(changed, p)
				}
			}
			if len(e.ChangedPaths) > 0 && a.LastChangeSeq == 0 {
				a.LastChangeSeq = e.Seq
			}
			if e.Outcome == workflow.OutcomeOK && readTools[e.Tool] {
				for _, p := range e.ObservedPaths {
					if !seenE[p] {
						seenE[p] = true
						explored = append(explored, p)
					}
				}
			}
		}
	}
	a.Changes = BoundPaths(changed, MaxFeedbackChanges)
	a.Exploration = Exploration{PathList: BoundPaths(explored, opts.Profile.Limit()), Complete: a.EventRange.Complete}

	// Validation over every retained event.
	fb.Validation, fb.ValidationDelta, fb.ValidationDeltaReason = validation(s, events, opts.SkipValidation)

	if start >= 0 && s.Counters.Instructions <= 1 && !lost && a.Activity.MeaningfulToolCalls == 0 &&
		a.Activity.GuardDenials == 0 && fb.Validation.Runs == 0 {
		fb.Status, fb.ReasonCode = StatusNotApplicable, ReasonFreshSession
	}
	fb.SuggestedNextActions = suggest(s, &fb, false)
	return fb
}

// BoundPaths returns the first max items of paths with the list's counts.
func BoundPaths(paths []string, max int) PathList {
	l := PathList{Total: len(paths), Items: []string{}}
	n := min(len(paths), max)
	l.Items = append(l.Items, paths[:n]...)
	l.Returned, l.Truncated = n, n < len(paths)
	return l
}

func validation(s workflow.Session, events []workflow.Event, skip bool) (FeedbackValidation, *workflow.ValidationDelta, string) {
	v := FeedbackValidation{Unresolved: FailureList{Items: []workflow.UnresolvedFailure{}}}
	if skip {
		v.Status, v.ReasonCode = ValidationNotRequested, "validation_not_requested"
		return v, nil, "validation_not_requested"
	}
	st := workflow.SummarizeValidation(events)
	v.Runs = st.Runs
	v.Unresolved.Total = len(st.Unresolved)
	n := min(len(st.Unresolved), MaxFeedbackFailures)
	v.Unresolved.Items = append(v.Unresolved.Items, st.Unresolved[:n]...)
	v.Unresolved.Returned, v.Unresolved.Truncated = n, n < len(st.Unresolved)
	if len(st.Latest) > 0 {
		v.LatestSeq = st.Latest[0].Seq
	}
	switch {
	case st.Runs == 0 && evicted(s, events):
		v.Status, v.ReasonCode = ValidationUnavailable, "validation_unavailable"
	case st.Runs == 0:
		v.Status = ValidationNotRun
	case len(st.Unresolved) > 0 || slices.ContainsFunc(st.Latest, func(r workflow.ValidationRun) bool {
		return r.Verdict == workflow.VerdictFailed && r.Expectation == "success"
	}):
		v.Status = ValidationFailed
	case st.Latest[0].Verdict == workflow.VerdictPassed:
		v.Status = ValidationPassed
	default:
		v.Status = ValidationInconclusive
	}
	return v, st.Delta, st.DeltaReason
}

// Suggested action templates.
const (
	ActionFixTest       = "Fix the failing test %s, then re-run %s for its scope."
	ActionFixValidation = "Fix what made the latest validation fail, then re-run it."
	ActionConflict      = "Resolve the Git conflicts in the workspace before editing further."
	ActionObserveJobs   = "Observe this session's running jobs with observe_jobs before relying on their results."
	ActionValidate      = "Validate the changed code with go_test, cargo_test or run_tests."
	ActionRevalidate    = "Re-run the inconclusive validation so that it proves a result."
	ActionReread        = "Older session evidence was removed by retention: re-read the files you need before editing."
	ActionStart         = "Start the task: locate the relevant code with search_project_texts and read_files."
	ActionContinue      = "Continue from the recently read files; re-read them before editing."
	ActionReview        = "Review the changes with git_status or git_diff before finishing."
	ActionClosed        = "This session is closed: start a new session with work_on_project to continue the task."
	// ActionInspectUnknown names the newest call whose outcome is unknown.
	ActionInspectUnknown = "A %s call's outcome is unknown (see progress.may_have_changed): check the workspace with git_status and re-read what it may have changed before relying on it."
)

// ActionTemplates lists every suggested action template above, so a test
// can check that each tool an action names is registered.
var ActionTemplates = []string{
	ActionFixTest, ActionFixValidation, ActionConflict, ActionObserveJobs, ActionValidate,
	ActionRevalidate, ActionReread, ActionStart, ActionContinue, ActionReview, ActionClosed, ActionInspectUnknown,
}

// suggest returns at most MaxSuggestedActions fixed-template actions; the
// first names the first unresolved failing test when there is one.
func suggest(s workflow.Session, fb *ContinuationFeedback, conflict bool) []string {
	var out []string
	add := func(a string) {
		if len(out) < MaxSuggestedActions && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	v := fb.Validation
	if len(v.Unresolved.Items) > 0 {
		f := v.Unresolved.Items[0]
		tool := f.Tool
		if tool == "" {
			tool = "the validation"
		}
		add(fmt.Sprintf(ActionFixTest, f.ID, tool))
	}
	if !s.Mutable() {
		add(ActionClosed)
	}
	if conflict {
		add(ActionConflict)
	}
	if v.Status == ValidationFailed && len(v.Unresolved.Items) == 0 {
		add(ActionFixValidation)
	}
	if fb.Jobs != nil && (fb.Jobs.Blocking > 0 || fb.Jobs.Recovering > 0) {
		add(ActionObserveJobs)
	}
	a := fb.Attempt
	if a.Boundary.Source == SourceUnavailable {
		add(ActionReread)
	}
	if fb.Status == StatusNotApplicable {
		add(ActionStart)
	}
	if a.Changes.Total > 0 && !(v.Status == ValidationPassed && v.LatestSeq > a.LastChangeSeq) {
		switch v.Status {
		case ValidationInconclusive:
			add(ActionRevalidate)
		case ValidationFailed:
		default:
			add(ActionValidate)
		}
	}
	if a.Exploration.Total > 0 && a.Changes.Total == 0 {
		add(ActionContinue)
	}
	if a.Changes.Total > 0 {
		add(ActionReview)
	}
	if len(out) == 0 {
		add(ActionStart)
	}
	return out
}
