package workflow

import "github.com/webcodex/webcodex/internal/failure"

// FailureClass is how one ledger event counts among a session's tool
// failures once its pre-declared result expectation is taken into account
// (spec, "Pre-declared execution result expectations"). The expectation
// changes only this classification: the recorded outcome, error kind and
// exit code are the call's real result.
type FailureClass string

// Failure classes.
const (
	// NoFailure: nothing to count (a success that met its expectation, or
	// a result counted by another event).
	NoFailure FailureClass = ""
	// FailureUnexpected: a fail-closed outcome (unknown, interrupted,
	// cancelled, timed out, unavailable, not started, internal); no
	// expectation ever makes it neutral.
	FailureUnexpected FailureClass = "unexpected"
	// FailureActionable: an ordinary failure (a failed command or
	// validation, an edit conflict, invalid arguments, a guard denial, ...)
	// or a result that missed its declared expectation.
	FailureActionable FailureClass = "actionable"
	// FailureNonActionable: a completed business failure that the call
	// declared beforehand (result_expectation failure or observe, or an
	// accepted exit code).
	FailureNonActionable FailureClass = "non_actionable"
)

// failClosedKinds are the error kinds that are always FailureUnexpected.
var failClosedKinds = map[string]bool{
	string(failure.Internal): true, string(failure.OutcomeUnknown): true, string(failure.Interrupted): true,
	string(failure.Cancelled): true, string(failure.TimedOut): true, string(failure.Unavailable): true,
	string(failure.NotStarted): true,
}

// ClassifyFailure returns the failure class of e. A tool_call_finished
// event is classified by its outcome, error kind and the expectation facts
// the tool recorded (expectation, expectation_matched); a validation tool's
// matched failure (it carries a verdict fact) is counted once, by its
// validation_recorded evidence, which also covers runs that finished as
// background jobs. A guard denial is actionable.
func ClassifyFailure(e Event) FailureClass {
	switch e.Kind {
	case EventGuardDenied:
		return FailureActionable
	case EventValidationRecorded:
		if v := e.Validation; v != nil && v.Expectation != "success" && v.ExpectationMatched && v.Verdict == VerdictFailed {
			return FailureNonActionable
		}
		return NoFailure
	case EventToolCallFinished:
	default:
		return NoFailure
	}
	matched := e.Facts["expectation_matched"]
	validation := e.Facts["verdict"] != ""
	switch e.Outcome {
	case OutcomeOK:
		switch {
		case matched == "false":
			// A success the call declared it did not expect.
			return FailureActionable
		case !validation && matched == "true" && (e.Facts["expectation"] == "failure" || e.Facts["expectation"] == "observe") &&
			e.Facts["exit_code"] != "" && e.Facts["exit_code"] != "0":
			// Written before results stopped being rewritten: a non-zero
			// exit that was reported as a success because it was expected.
			return FailureNonActionable
		}
		return NoFailure
	case OutcomeInterrupted, OutcomeCancelled, OutcomeUnknown:
		return FailureUnexpected
	}
	switch {
	case failClosedKinds[e.ErrorKind]:
		return FailureUnexpected
	case matched == "true" && validation:
		return NoFailure
	case matched == "true":
		return FailureNonActionable
	}
	return FailureActionable
}
