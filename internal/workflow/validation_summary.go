package workflow

import (
	"slices"
	"sort"
)

// Delta reason codes: why a validation_delta is unavailable.
const (
	DeltaNoPreviousValidation       = "no_previous_validation"
	DeltaValidationScopeChanged     = "validation_scope_changed"
	DeltaPreviousEvidenceIncomplete = "previous_evidence_incomplete"
	DeltaCurrentEvidenceIncomplete  = "current_evidence_incomplete"
	DeltaParserChanged              = "parser_changed"
	DeltaParserIdentityUnavailable  = "parser_identity_unavailable"
	DeltaTestIdentityUnavailable    = "test_identity_unavailable"
)

// ValidationRun is one retained validation record with its ledger position.
type ValidationRun struct {
	Seq int64 `json:"seq"`
	Validation
}

// UnresolvedFailure is a failing test identity that no later run of its
// scope has proven passing.
type UnresolvedFailure struct {
	ID      string `json:"id"`
	ScopeID string `json:"scope_id"`
	Tool    string `json:"tool"`
	// LastSeenSeq is the ledger seq of the latest run that saw it fail.
	LastSeenSeq int64 `json:"last_seen_seq"`
}

// ValidationDelta compares the latest run with the run before it.
type ValidationDelta struct {
	PassedDelta     int      `json:"passed_delta"`
	FailedDelta     int      `json:"failed_delta"`
	SkippedDelta    int      `json:"skipped_delta"`
	NewlyFailing    []string `json:"newly_failing"`
	NoLongerFailing []string `json:"no_longer_failing"`
	NotRerun        []string `json:"not_rerun"`
}

// ValidationState is the validation picture of a session's retained ledger.
type ValidationState struct {
	// Latest holds the newest run of each scope, newest first.
	Latest []ValidationRun `json:"latest"`
	// Unresolved lists failing identities not yet proven passing, sorted
	// by scope then identity.
	Unresolved []UnresolvedFailure `json:"unresolved"`
	// Delta compares the newest run with the run before it, when they are
	// provably comparable; otherwise DeltaReason says why not.
	Delta       *ValidationDelta `json:"validation_delta"`
	DeltaReason string           `json:"delta_reason,omitempty"`
	// Runs counts the retained validation records.
	Runs int `json:"runs"`
}

// Validations returns the validation records among events, in ledger order.
func Validations(events []Event) []ValidationRun {
	var out []ValidationRun
	for _, e := range events {
		if e.Kind == EventValidationRecorded && e.Validation != nil {
			out = append(out, ValidationRun{Seq: e.Seq, Validation: *e.Validation})
		}
	}
	return out
}

// UnresolvedIn returns the identities of scope that are unresolved after
// runs (in ledger order). Only runs that declared the success expectation
// change the set: a failure expected by a failure or observe run is
// neutral, and such a run resolves nothing. Nor does a run whose verdict
// cannot resolve (no_tests, evidence_gap; Verdict.Resolves), whatever its
// record says.
func UnresolvedIn(runs []ValidationRun, scope string) map[string]int64 {
	open := map[string]int64{}
	for _, r := range runs {
		if r.ScopeID != scope || r.Expectation != "success" {
			continue
		}
		if r.Verdict.Resolves() {
			for _, id := range r.Resolved {
				delete(open, id)
			}
		}
		for _, id := range r.Failures {
			open[id] = r.Seq
		}
	}
	return open
}

// SummarizeValidation projects the validation state of a session from its
// retained events. It performs no I/O and is deterministic.
func SummarizeValidation(events []Event) ValidationState {
	runs := Validations(events)
	st := ValidationState{Runs: len(runs), Latest: []ValidationRun{}, Unresolved: []UnresolvedFailure{}}
	seen := map[string]bool{}
	for i := len(runs) - 1; i >= 0; i-- {
		if !seen[runs[i].ScopeID] {
			seen[runs[i].ScopeID] = true
			st.Latest = append(st.Latest, runs[i])
		}
	}
	scopes := make([]string, 0, len(seen))
	for s := range seen {
		scopes = append(scopes, s)
	}
	sort.Strings(scopes)
	tools := map[string]string{}
	for _, r := range runs {
		tools[r.ScopeID] = r.Tool
	}
	for _, s := range scopes {
		open := UnresolvedIn(runs, s)
		ids := make([]string, 0, len(open))
		for id := range open {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			st.Unresolved = append(st.Unresolved, UnresolvedFailure{ID: id, ScopeID: s, Tool: tools[s], LastSeenSeq: open[id]})
		}
	}
	st.Delta, st.DeltaReason = delta(runs)
	return st
}

// delta compares the newest run with the one before it.
func delta(runs []ValidationRun) (*ValidationDelta, string) {
	if len(runs) < 2 {
		return nil, DeltaNoPreviousValidation
	}
	cur, prev := runs[len(runs)-1], runs[len(runs)-2]
	switch {
	case prev.ScopeID != cur.ScopeID:
		return nil, DeltaValidationScopeChanged
	case prev.Parser == "" || cur.Parser == "":
		return nil, DeltaParserIdentityUnavailable
	case prev.Parser != cur.Parser:
		return nil, DeltaParserChanged
	case !prev.Complete:
		return nil, DeltaPreviousEvidenceIncomplete
	case !cur.Complete:
		return nil, DeltaCurrentEvidenceIncomplete
	case prev.FailuresTruncated || cur.FailuresTruncated:
		return nil, DeltaTestIdentityUnavailable
	}
	d := &ValidationDelta{
		PassedDelta: cur.Passed - prev.Passed, FailedDelta: cur.Failed - prev.Failed, SkippedDelta: cur.Skipped - prev.Skipped,
		NewlyFailing: []string{}, NoLongerFailing: []string{}, NotRerun: []string{},
	}
	for _, id := range cur.Failures {
		if !slices.Contains(prev.Failures, id) {
			d.NewlyFailing = append(d.NewlyFailing, id)
		}
	}
	for _, id := range prev.Failures {
		switch {
		case slices.Contains(cur.Failures, id):
		case slices.Contains(cur.Resolved, id):
			d.NoLongerFailing = append(d.NoLongerFailing, id)
		default:
			d.NotRerun = append(d.NotRerun, id)
		}
	}
	return d, ""
}
