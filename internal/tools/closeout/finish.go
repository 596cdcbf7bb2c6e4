package closeout

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// Bounds of the closeout snapshot.
const (
	// MaxChangedPaths bounds the session's changed paths.
	MaxChangedPaths = 50
	// MaxIdentities bounds resolved and unresolved identity lists.
	MaxIdentities = 20
	// MaxCurrentEvidence bounds the latest-run-per-scope list.
	MaxCurrentEvidence = 8
)

// Outcome statuses.
const (
	StatusPass = "pass"
	StatusWarn = "warn"
	StatusFail = "fail"
)

// Hard blockers, advisories and outcome reasons.
const (
	BlockerUnresolvedValidationFailure = "unresolved_validation_failure"
	BlockerBlockingJobs                = "blocking_jobs"
	BlockerWorkspaceConflict           = "workspace_conflict"

	AdvisoryDirtyWorktree                = "dirty_worktree"
	AdvisoryNoValidationSinceLastChange  = "no_validation_since_last_change"
	AdvisoryValidationNotRun             = "validation_not_run"
	AdvisoryNoPassingValidation          = "no_passing_validation"
	AdvisoryEvidenceGap                  = "evidence_gap"
	AdvisoryValidationNotRequested       = "validation_not_requested"
	AdvisoryValidationUnavailable        = "validation_unavailable"
	AdvisoryWorkspaceUnavailable         = "workspace_unavailable"
	AdvisoryJobSummaryUnavailable        = "job_summary_unavailable"
	AdvisoryActiveJobsPresent            = "active_jobs_present"
	AdvisoryUnexpectedToolFailures       = "unexpected_tool_failures"
	AdvisorySessionChangedDuringSnapshot = "session_changed_during_snapshot"
	// AdvisoryOutcomeUnknownCalls: calls whose outcome is unknown
	// (interrupted, cancelled, or recovered after a crash) may have made
	// changes no event records.
	AdvisoryOutcomeUnknownCalls = "outcome_unknown_calls"
	// Open collaboration on the session's board (read under the snapshot
	// fence): todos, questions and risks still open, and open messages that
	// require an ACK. They never block: the board is not a lock.
	AdvisoryOpenTodos             = "open_todos"
	AdvisoryOpenQuestions         = "open_questions"
	AdvisoryOpenRisks             = "open_risks"
	AdvisoryUnresolvedAckRequired = "unresolved_ack_required_messages"
	// AdvisoryCollaborationUnavailable: the board's counts were not read.
	AdvisoryCollaborationUnavailable = "collaboration_unavailable"

	ReasonFreshPassingValidation = "fresh_passing_validation"
)

// Block statuses.
const (
	Available     = "available"
	NotRequested  = "not_requested"
	Unavailable   = "unavailable"
	NotConfigured = "not_configured"
)

// registerFinish adds finish_coding_task to reg.
//
// The tool reads the session header, its retained events and the caller's
// Job aggregate, optionally the workspace snapshot (include_workspace,
// default true), and projects them into workspace, changes, validation,
// tool failures, Jobs, hard blockers, advisories, a task_outcome and the
// shared version-1 handoff_brief. It never claims that the work is
// correct: task_outcome only says what the recorded evidence proves.
//
// Outcome rule: pass requires a passing validation run (verdict passed,
// expectation success) whose ledger seq is greater than the seq of the
// session's last change, and no hard blocker; any hard blocker
// (unresolved validation failure, blocking jobs, workspace conflict) makes
// it fail; everything else is warn.
func registerFinish(reg *kernel.Registry, t *Tools) {
	kernel.Register(reg, kernel.Spec[FinishInput, FinishOutput]{
		Runners: true,
		Name:    FinishToolName,
		Description: "Read-only closeout of a session: workspace, changes, validation, failures, jobs, hard_blockers and task_outcome " +
			"(pass only with a passing validation newer than the last change and no blocker). Does not close the session.",
		Category: "sessions", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Session:     kernel.SessionRequired,
		Handler:     t.finish,
	})
}

// FinishInput is the input of finish_coding_task. As for
// session_handoff_summary, the authorized business session supplies the
// project when project is omitted; an explicit project must be the
// session's (session_project_mismatch).
type FinishInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
	SummaryOnly       bool  `json:"summary_only,omitempty" jsonschema:"return only task_outcome, counts and suggested_next_actions"`
	IncludeWorkspace  *bool `json:"include_workspace,omitempty" jsonschema:"run one read-only git status; default true"`
	IncludeValidation *bool `json:"include_validation,omitempty" jsonschema:"report validation evidence; default true"`
	IncludeHandoff    *bool `json:"include_handoff,omitempty" jsonschema:"include handoff_brief; default true"`
}

// TaskOutcome is what the recorded evidence says about the task. It never
// claims that the work is correct.
type TaskOutcome struct {
	Status   string   `json:"status" jsonschema:"pass, warn or fail"`
	Blocking bool     `json:"blocking"`
	Reasons  []string `json:"reasons"`
}

// Counts are the closeout's headline numbers.
type Counts struct {
	ChangedPaths       int `json:"changed_paths"`
	ValidationRuns     int `json:"validation_runs"`
	UnresolvedFailures int `json:"unresolved_failures"`
	Unexpected         int `json:"tool_failures_unexpected"`
	OutcomeUnknown     int `json:"outcome_unknown_calls"`
	Actionable         int `json:"tool_failures_actionable"`
	NonActionable      int `json:"tool_failures_non_actionable"`
	ActiveJobs         int `json:"active_jobs"`
	BlockingJobs       int `json:"blocking_jobs"`
	HardBlockers       int `json:"hard_blockers"`
	Advisories         int `json:"advisories"`
}

// FinishOutput is the result of finish_coding_task. The large blocks are typed
// loosely (see the exported block types) so that the published output
// schema stays within the per-tool tools/list budget; with summary_only
// they are omitted.
type FinishOutput struct {
	Project              string      `json:"project"`
	SessionID            string      `json:"session_id"`
	TaskOutcome          TaskOutcome `json:"task_outcome"`
	Counts               Counts      `json:"counts"`
	SuggestedNextActions []string    `json:"suggested_next_actions"`

	Workspace    kernel.Object `json:"workspace,omitempty" jsonschema:"status available|not_requested|unavailable, branch, head, dirty, conflicted, ahead, behind, changed_paths"`
	Changes      kernel.Object `json:"changes,omitempty" jsonschema:"paths changed in the session (newest first, bounded) and last_change_seq"`
	Validation   kernel.Object `json:"validation,omitempty" jsonschema:"status, historical_runs, resolved, unresolved, current_evidence (latest run per scope)"`
	ToolFailures kernel.Object `json:"tool_failures,omitempty" jsonschema:"expectation-classified counts: unexpected, actionable, non_actionable"`
	Jobs         kernel.Object `json:"jobs,omitempty" jsonschema:"status, active, blocking (only this session's active jobs block)"`
	HardBlockers []string      `json:"hard_blockers,omitzero" jsonschema:"sorted blocker codes"`
	Advisories   []string      `json:"advisories,omitzero" jsonschema:"sorted advisory codes"`
	Intents      kernel.Object `json:"intents,omitempty" jsonschema:"the session's declared intent: globs, untouched_globs, undeclared_paths"`
	HandoffBrief kernel.Object `json:"handoff_brief,omitempty" jsonschema:"handoff_brief version 1, as session_handoff_summary returns it"`
}

// Workspace is the workspace block.
type Workspace struct {
	Status       string            `json:"status"`
	Branch       string            `json:"branch,omitempty"`
	Head         string            `json:"head,omitempty"`
	Dirty        *bool             `json:"dirty,omitempty"`
	Conflicted   *bool             `json:"conflicted,omitempty"`
	Ahead        *int              `json:"ahead,omitempty"`
	Behind       *int              `json:"behind,omitempty"`
	ChangedPaths *handoff.PathList `json:"changed_paths,omitempty"`
	Conflicts    *handoff.PathList `json:"conflicts,omitempty"`
}

// Changes is the changes block: paths changed in the session, newest first.
type Changes struct {
	handoff.PathList
	LastChangeSeq int64 `json:"last_change_seq"`
}

// Identities is a bounded list of test identities.
type Identities struct {
	Items     []string `json:"items"`
	Total     int      `json:"total"`
	Truncated bool     `json:"truncated"`
}

// Evidence is the latest validation run of one scope.
type Evidence struct {
	Seq                int64  `json:"seq"`
	Tool               string `json:"tool"`
	ScopeID            string `json:"scope_id"`
	Verdict            string `json:"verdict"`
	Expectation        string `json:"expectation"`
	ExpectationMatched bool   `json:"expectation_matched"`
	Passed             int    `json:"passed"`
	Failed             int    `json:"failed"`
	Skipped            int    `json:"skipped"`
	Complete           bool   `json:"complete"`
	// AfterLastChange is true when the run is newer than the last change.
	AfterLastChange bool `json:"after_last_change"`
}

// Validation is the validation block.
type Validation struct {
	Status         string                       `json:"status"`
	ReasonCode     string                       `json:"reason_code,omitempty"`
	HistoricalRuns int                          `json:"historical_runs"`
	Resolved       Identities                   `json:"resolved"`
	Unresolved     []workflow.UnresolvedFailure `json:"unresolved"`
	UnresolvedN    int                          `json:"unresolved_total"`
	Current        []Evidence                   `json:"current_evidence"`
	// FreshPassSeq is the seq of the newest passing success-expectation
	// run newer than the last change (0 when none).
	FreshPassSeq int64 `json:"fresh_pass_seq"`
}

// ToolFailures classifies recorded tool failures by expectation.
type ToolFailures struct {
	// Unexpected: fail-closed outcomes (unknown, interrupted, cancelled,
	// timed out, unavailable, not started, internal).
	Unexpected int `json:"unexpected"`
	// Actionable: ordinary failures (failed commands and validations,
	// edit conflicts, invalid arguments, guard denials, ...).
	Actionable int `json:"actionable"`
	// NonActionable: completed results that matched a pre-declared
	// failure/observe expectation.
	NonActionable int `json:"non_actionable"`
}

// Jobs is the Job block.
type Jobs struct {
	Status   string `json:"status"`
	Active   int    `json:"active"`
	Blocking int    `json:"blocking"`
}

func (t *Tools) finish(ctx context.Context, inv *kernel.Invocation, in FinishInput) (FinishOutput, error) {
	includeWorkspace := in.IncludeWorkspace == nil || *in.IncludeWorkspace
	includeValidation := in.IncludeValidation == nil || *in.IncludeValidation
	includeHandoff := in.IncludeHandoff == nil || *in.IncludeHandoff

	g, err := t.gather(ctx, inv, in.SessionID, includeWorkspace)
	if err != nil {
		return FinishOutput{}, err
	}
	sess, jobSnap, changed := g.sess, g.jobs, g.changed
	evs := taskEvents(g.events)

	out := FinishOutput{Project: sess.Project, SessionID: sess.ID}
	var f findings
	ws, bws := f.judgeWorkspace(g.workspace, includeWorkspace)
	changes, lastChange, tf := sessionChanges(evs)
	fb := handoff.Feedback(sess, evs, handoff.FeedbackOptions{
		Profile: handoff.ProfileFull, SkipValidation: !includeValidation, Jobs: jobSnap,
	})
	val := f.judgeValidation(includeValidation, fb.Validation.Status, evs, lastChange)
	jb := f.judgeJobs(jobSnap, g.jobsStatus)
	unknown := handoff.UnknownOutcomes(sess, evs, 0)
	f.judgeSession(tf, unknown.Total, changed, g.guidance)
	cover := t.judgeIntents(ctx, &f, sess.ID, changes.Items)
	hard, adv := f.sorted()
	out.TaskOutcome = taskOutcome(hard, adv, includeValidation && val.FreshPassSeq > 0)

	// Handoff brief and next actions (the brief's, which name the first
	// unresolved failing test first).
	brief, raw := handoff.Brief(handoff.BriefInput{
		Session: sess, Events: evs, Feedback: &fb,
		IncludeWorkspace: includeWorkspace, Workspace: bws, Guidance: g.guidance, SessionChanged: changed,
		Evidence: BriefEvidence(ctx, t.Evidence, sess.ID),
		// Named only: finishing never transitions a correlated Goal.
		Goals: workflow.Correlated(ctx, t.Goals, sess.ID, handoff.BriefMaxGoals),
	})
	out.SuggestedNextActions = append([]string{}, brief.NextActions...)
	if len(out.SuggestedNextActions) > handoff.MaxSuggestedActions {
		out.SuggestedNextActions = out.SuggestedNextActions[:handoff.MaxSuggestedActions]
	}

	out.Counts = Counts{
		ChangedPaths: changes.Total, ValidationRuns: val.HistoricalRuns, UnresolvedFailures: val.UnresolvedN,
		Unexpected: tf.Unexpected, OutcomeUnknown: unknown.Total, Actionable: tf.Actionable, NonActionable: tf.NonActionable,
		ActiveJobs: jb.Active, BlockingJobs: jb.Blocking, HardBlockers: len(hard), Advisories: len(adv),
	}
	if in.SummaryOnly {
		return out, nil
	}
	out.Workspace, out.Changes, out.Validation = ws, changes, val
	out.ToolFailures, out.Jobs, out.HardBlockers, out.Advisories = tf, jb, hard, adv
	if cover != nil {
		out.Intents = cover
	}
	if includeHandoff {
		out.HandoffBrief = json.RawMessage(raw)
	}
	return out, nil
}

// classify counts an event into its expectation class
// (workflow.ClassifyFailure).
func classify(e *workflow.Event, tf *ToolFailures) {
	switch workflow.ClassifyFailure(*e) {
	case workflow.FailureUnexpected:
		tf.Unexpected++
	case workflow.FailureActionable:
		tf.Actionable++
	case workflow.FailureNonActionable:
		tf.NonActionable++
	}
}

// validation projects the validation block over the retained events.
func validation(status string, evs []workflow.Event, lastChange int64) Validation {
	st := workflow.SummarizeValidation(evs)
	runs := workflow.Validations(evs)
	v := Validation{HistoricalRuns: st.Runs, Unresolved: []workflow.UnresolvedFailure{}, Current: []Evidence{},
		Resolved: Identities{Items: []string{}}}
	open := map[string]bool{}
	for _, u := range st.Unresolved {
		open[u.ScopeID+"\x00"+u.ID] = true
	}
	var resolved []string
	seen := map[string]bool{}
	for _, r := range runs {
		if r.Expectation != "success" {
			continue
		}
		for _, id := range r.Resolved {
			if !open[r.ScopeID+"\x00"+id] && !seen[id] {
				seen[id] = true
				resolved = append(resolved, id)
			}
		}
		if r.Verdict == workflow.VerdictPassed && r.Seq > lastChange {
			v.FreshPassSeq = max(v.FreshPassSeq, r.Seq)
		}
	}
	sort.Strings(resolved)
	v.Resolved.Total = len(resolved)
	n := min(len(resolved), MaxIdentities)
	v.Resolved.Items = append(v.Resolved.Items, resolved[:n]...)
	v.Resolved.Truncated = n < len(resolved)
	v.UnresolvedN = len(st.Unresolved)
	v.Unresolved = append(v.Unresolved, st.Unresolved[:min(len(st.Unresolved), MaxIdentities)]...)
	for _, r := range st.Latest[:min(len(st.Latest), MaxCurrentEvidence)] {
		v.Current = append(v.Current, Evidence{
			Seq: r.Seq, Tool: r.Tool, ScopeID: r.ScopeID, Verdict: string(r.Verdict), Expectation: r.Expectation,
			ExpectationMatched: r.ExpectationMatched, Passed: r.Passed, Failed: r.Failed, Skipped: r.Skipped,
			Complete: r.Complete, AfterLastChange: r.Seq > lastChange,
		})
	}
	v.Status = status
	if v.Status == handoff.ValidationUnavailable {
		v.ReasonCode = "validation_unavailable"
	}
	return v
}
