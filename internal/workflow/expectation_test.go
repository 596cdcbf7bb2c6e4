package workflow_test

import (
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
)

// TestClassifyFailure: the expectation decides only the class, from the
// facts the tools record beside the real outcome.
func TestClassifyFailure(t *testing.T) {
	finished := func(o workflow.Outcome, kind failure.Kind, facts map[string]string) workflow.Event {
		return workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "t", Outcome: o, ErrorKind: string(kind), Facts: facts}
	}
	validation := func(exp string, matched bool, v workflow.Verdict) workflow.Event {
		return workflow.Event{Kind: workflow.EventValidationRecorded, Validation: &workflow.Validation{Expectation: exp, ExpectationMatched: matched, Verdict: v}}
	}
	for name, tc := range map[string]struct {
		ev   workflow.Event
		want workflow.FailureClass
	}{
		"Success": {finished(workflow.OutcomeOK, "", map[string]string{"expectation": "success", "expectation_matched": "true", "exit_code": "0"}), workflow.NoFailure},
		"SuccessNotExpected": {finished(workflow.OutcomeOK, "", map[string]string{"expectation": "failure", "expectation_matched": "false", "exit_code": "0"}),
			workflow.FailureActionable},
		"ExpectedFailure": {finished(workflow.OutcomeFailed, failure.CommandFailed, map[string]string{"expectation": "failure", "expectation_matched": "true", "exit_code": "1"}),
			workflow.FailureNonActionable},
		"UnexpectedFailure": {finished(workflow.OutcomeFailed, failure.CommandFailed, map[string]string{"expectation": "success", "expectation_matched": "false", "exit_code": "1"}),
			workflow.FailureActionable},
		"PlainFailure": {finished(workflow.OutcomeFailed, failure.EditConflict, nil), workflow.FailureActionable},
		"TimedOutNeverNeutral": {finished(workflow.OutcomeFailed, failure.TimedOut, map[string]string{"expectation": "observe", "expectation_matched": "true"}),
			workflow.FailureUnexpected},
		"Cancelled":   {finished(workflow.OutcomeCancelled, failure.Cancelled, nil), workflow.FailureUnexpected},
		"Interrupted": {finished(workflow.OutcomeInterrupted, failure.Interrupted, nil), workflow.FailureUnexpected},
		// Records written while expected failures were reported as successes.
		"LegacyRewrittenSuccess": {finished(workflow.OutcomeOK, "", map[string]string{"expectation": "failure", "expectation_matched": "true", "exit_code": "1"}),
			workflow.FailureNonActionable},
		// A validation tool's matched failure counts once, by its evidence.
		"ValidationCallMatched": {finished(workflow.OutcomeFailed, failure.ValidationFailed, map[string]string{"verdict": "failed", "expectation": "failure", "expectation_matched": "true"}),
			workflow.NoFailure},
		"ValidationEvidenceMatched":   {validation("failure", true, workflow.VerdictFailed), workflow.FailureNonActionable},
		"ValidationCallUnmatched":     {finished(workflow.OutcomeFailed, failure.ValidationFailed, map[string]string{"verdict": "failed", "expectation": "success", "expectation_matched": "false"}), workflow.FailureActionable},
		"ValidationEvidenceUnmatched": {validation("success", false, workflow.VerdictFailed), workflow.NoFailure},
		"ValidationObserveNoTests":    {validation("observe", true, workflow.VerdictNoTests), workflow.NoFailure},
		"GuardDenied":                 {workflow.Event{Kind: workflow.EventGuardDenied}, workflow.FailureActionable},
		"Started":                     {workflow.Event{Kind: workflow.EventToolCallStarted}, workflow.NoFailure},
	} {
		if got := workflow.ClassifyFailure(tc.ev); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}
