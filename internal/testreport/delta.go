package testreport

import (
	"errors"
	"slices"
)

// DeltaReason is the stable code explaining why two runs have no delta.
type DeltaReason string

// The reasons, in the order Compare checks them.
const (
	NoPreviousValidation       DeltaReason = "no_previous_validation"
	InsufficientScopeIdentity  DeltaReason = "insufficient_scope_identity"
	ValidationScopeChanged     DeltaReason = "validation_scope_changed"
	ParserIdentityUnavailable  DeltaReason = "parser_identity_unavailable"
	ParserChanged              DeltaReason = "parser_changed"
	PreviousEvidenceIncomplete DeltaReason = "previous_evidence_incomplete"
	CurrentEvidenceIncomplete  DeltaReason = "current_evidence_incomplete"
	TestIdentityUnavailable    DeltaReason = "test_identity_unavailable"
)

// DeltaReasons lists every reason, in the order Compare checks them.
var DeltaReasons = []DeltaReason{
	NoPreviousValidation, InsufficientScopeIdentity, ValidationScopeChanged,
	ParserIdentityUnavailable, ParserChanged, PreviousEvidenceIncomplete,
	CurrentEvidenceIncomplete, TestIdentityUnavailable,
}

// Run is one validation run's evidence: the identity of its scope (from
// ScopeID) and its parsed Report.
type Run struct {
	ScopeID string
	Report  Report
}

// Delta is the difference from a previous run to the current one of the
// same scope. Each identity list is sorted and holds at most MaxFailures
// entries (it is a subset of one Report's Failures).
type Delta struct {
	// PassedDelta, FailedDelta and SkippedDelta are current minus
	// previous: negative when a count went down.
	PassedDelta, FailedDelta, SkippedDelta int
	// NewlyFailing holds identities failing now that did not fail before.
	NewlyFailing []string
	// NoLongerFailing holds identities that failed before and that the
	// current run proves passing (a passed case among its Cases).
	NoLongerFailing []string
	// NotRerun holds identities that failed before, do not fail now, and
	// were not proven passing: absent, skipped, or beyond the retained
	// Cases. They remain unresolved.
	NotRerun []string
}

// Compare returns the delta from prev to cur and ok == true only when the
// two runs are provably comparable: prev exists, both scope identities are
// well formed and equal, both reports carry the same known parser identity,
// both are Complete, and neither truncated its failure identities.
// Otherwise it returns a zero Delta, ok == false, and the first failing
// condition as reason, checked in the order of DeltaReasons.
//
// A previous failure is resolved (NoLongerFailing) only by a current passed
// case of the same identity. Because a Complete report executed at least one
// test, a zero-test success never yields a delta, so it never resolves a
// prior failure.
func Compare(prev *Run, cur Run) (d Delta, reason DeltaReason, ok bool) {
	switch {
	case prev == nil:
		return Delta{}, NoPreviousValidation, false
	case !ValidScopeID(prev.ScopeID) || !ValidScopeID(cur.ScopeID):
		return Delta{}, InsufficientScopeIdentity, false
	case prev.ScopeID != cur.ScopeID:
		return Delta{}, ValidationScopeChanged, false
	case !prev.Report.Parser.Known() || !cur.Report.Parser.Known():
		return Delta{}, ParserIdentityUnavailable, false
	case prev.Report.Parser != cur.Report.Parser:
		return Delta{}, ParserChanged, false
	case !prev.Report.Complete:
		return Delta{}, PreviousEvidenceIncomplete, false
	case !cur.Report.Complete:
		return Delta{}, CurrentEvidenceIncomplete, false
	case prev.Report.FailuresTruncated || cur.Report.FailuresTruncated:
		return Delta{}, TestIdentityUnavailable, false
	}
	p, c := prev.Report, cur.Report
	d = Delta{
		PassedDelta:  c.Passed - p.Passed,
		FailedDelta:  c.Failed - p.Failed,
		SkippedDelta: c.Skipped - p.Skipped,
	}
	passing := map[string]bool{}
	for _, k := range c.Cases {
		if k.Outcome == Passed {
			passing[k.ID] = true
		}
	}
	for _, id := range c.Failures {
		if !slices.Contains(p.Failures, id) {
			d.NewlyFailing = append(d.NewlyFailing, id)
		}
	}
	for _, id := range p.Failures {
		switch {
		case slices.Contains(c.Failures, id):
		case passing[id]:
			d.NoLongerFailing = append(d.NoLongerFailing, id)
		default:
			d.NotRerun = append(d.NotRerun, id)
		}
	}
	return d, "", true
}

// CountCheck is the verdict of a test-count assertion (cargo_test's
// require_tests / min_tests) on a Report.
type CountCheck string

// The verdicts.
const (
	// CountSatisfied: no minimum was asked, or the proven count meets it.
	CountSatisfied CountCheck = "satisfied"
	// CountBelowMinimum: the output proves fewer executed tests.
	CountBelowMinimum CountCheck = "below_minimum"
	// CountUnproven: the output cannot prove the count.
	CountUnproven CountCheck = "count_unproven"
)

// MaxMinTests is the largest minimum test count an assertion may ask for.
const MaxMinTests = 1_000_000

// CheckTestCount evaluates the assertion "at least minTests tests executed"
// (Passed+Failed) on r; require_tests maps to minTests == 1, and a
// minTests of 0 is the omitted assertion, always satisfied, which keeps
// zero-test runs compatible. The count is proven when r is Complete or its
// only problem is ProblemNoTestsFound (a proven zero). A verdict other than
// CountSatisfied is an evidence gap, not a test failure. minTests outside
// [0, MaxMinTests] is an error.
func CheckTestCount(r Report, minTests int) (CountCheck, error) {
	if minTests < 0 || minTests > MaxMinTests {
		return "", errors.New("testreport: min_tests out of range")
	}
	if minTests == 0 {
		return CountSatisfied, nil
	}
	proven := r.Complete || slices.Equal(r.Problems, []Problem{ProblemNoTestsFound})
	if !proven {
		return CountUnproven, nil
	}
	if r.Executed() < minTests {
		return CountBelowMinimum, nil
	}
	return CountSatisfied, nil
}
