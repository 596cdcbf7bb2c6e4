package workflow

import (
	"fmt"
	"regexp"
	"slices"
	"sort"

	"github.com/webcodex/webcodex/internal/redact"
)

// Bounds of one validation evidence record.
const (
	// MaxValidationIDs bounds the failing and resolved test identities kept
	// on one record.
	MaxValidationIDs = 50
	// MaxValidationIDChars bounds one test identity.
	MaxValidationIDChars = 512
	// MaxValidationPackages bounds the package patterns shown on a record.
	MaxValidationPackages = 8
	// MaxValidationProblems bounds the problem codes on a record.
	MaxValidationProblems = 16
	// MaxValidationMessages bounds the failure messages kept on one
	// record, and ValidationMessageMaxChars one message (redacted, then
	// cut): enough to say why a test failed, never the run's output.
	MaxValidationMessages     = 5
	ValidationMessageMaxChars = 1000
)

// FailureMessage is what the runner reported about one failing test: the
// identity (one of the record's Failures) and its message, redacted and
// bounded (ValidationMessageMaxChars) before it is stored.
type FailureMessage struct {
	ID      string `json:"id"`
	Message string `json:"message"`
}

// Verdict is what a validation run proves.
type Verdict string

// Verdicts. A run is passed only when its output proves that at least one
// test ran and none failed (and any requested minimum was met); failed when
// a test failed or the tests did not build; no_tests when the runner exited
// 0 and its output proves that no test ran, with no minimum asked (a
// successful execution that proves nothing about the code); otherwise it
// is an evidence gap. Neither no_tests nor an evidence gap passes or
// resolves anything (Resolves).
const (
	VerdictPassed      Verdict = "passed"
	VerdictFailed      Verdict = "failed"
	VerdictNoTests     Verdict = "no_tests"
	VerdictEvidenceGap Verdict = "evidence_gap"
)

// Resolves reports whether a run with verdict v can resolve an earlier
// failure: only a run whose output proves its test results (passed or
// failed) can show a test passing again.
func (v Verdict) Resolves() bool { return v == VerdictPassed || v == VerdictFailed }

// Validation is the evidence a structured validation run leaves in a
// session (event kind validation_recorded). It holds counts, identities and
// codes — never test output.
type Validation struct {
	// Tool that ran the validation (go_test, cargo_test, ...).
	Tool string `json:"tool"`
	// ScopeID is the opaque validation_scope:v1:<sha256> identity of the
	// structured scope; runs are comparable only within one scope.
	ScopeID string `json:"scope_id"`
	// Packages and Filter describe the scope for people (bounded).
	Packages []string `json:"packages,omitempty"`
	Filter   string   `json:"filter,omitempty"`
	// Parser is the parser identity (go_test_json/v1, ...); empty when
	// nothing could be parsed.
	Parser  string `json:"parser,omitempty"`
	Passed  int    `json:"passed"`
	Failed  int    `json:"failed"`
	Skipped int    `json:"skipped"`
	// Failures are failing test identities (sorted, bounded);
	// FailuresTotal counts all failed results.
	Failures          []string `json:"failures,omitempty"`
	FailuresTotal     int      `json:"failures_total"`
	FailuresTruncated bool     `json:"failures_truncated,omitempty"`
	// FailureMessages are the messages of the first failing tests that
	// reported one (at most MaxValidationMessages; the Go and JUnit
	// parsers report them).
	FailureMessages []FailureMessage `json:"failure_messages,omitempty"`
	// Resolved are identities that failed in an earlier run of this scope
	// in this session and that this run proves passing.
	Resolved []string `json:"resolved,omitempty"`
	// CachedPackages are the packages whose result the runner replayed
	// from its cache instead of running (go test "(cached)"; sorted,
	// bounded); CachedTotal counts them all. Their results did not run
	// in this call, and resolve nothing.
	CachedPackages []string `json:"cached_packages,omitempty"`
	CachedTotal    int      `json:"cached_total,omitempty"`
	// Complete is true when the output proved the counts; Problems say
	// why not.
	Complete bool     `json:"complete"`
	Problems []string `json:"problems,omitempty"`
	// CountCheck is the verdict of a min_tests assertion, when one was asked.
	CountCheck string  `json:"count_check,omitempty"`
	Verdict    Verdict `json:"verdict"`
	// Expectation is the declared result expectation and whether it held.
	Expectation        string `json:"expectation"`
	ExpectationMatched bool   `json:"expectation_matched"`
	ExitCode           int    `json:"exit_code"`
	DurationMS         int64  `json:"duration_ms"`
	// JobID is set when the run continued as a background job.
	JobID string `json:"job_id,omitempty"`
}

var scopeIDRE = regexp.MustCompile(`^validation_scope:v1:[0-9a-f]{64}$`)

// boundIDs sorts, deduplicates, redacts and bounds a list of identities,
// reporting whether it had to drop any.
func boundIDs(ids []string) ([]string, bool) {
	if len(ids) == 0 {
		return nil, false
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, redact.Bounded(id, MaxValidationIDChars))
	}
	sort.Strings(out)
	out = slices.Compact(out)
	if len(out) > MaxValidationIDs {
		return out[:MaxValidationIDs], true
	}
	return out, false
}

// sanitizeValidation applies the bounds of a Validation before it is
// stored.
func sanitizeValidation(v *Validation) *Validation {
	if v == nil {
		return nil
	}
	c := *v
	c.Tool, _ = redact.Truncate(c.Tool, 64)
	c.Parser, _ = redact.Truncate(c.Parser, 64)
	c.Filter = redact.Bounded(c.Filter, FactMaxChars)
	if len(c.Packages) > MaxValidationPackages {
		c.Packages = c.Packages[:MaxValidationPackages]
	}
	for i, p := range c.Packages {
		c.Packages[i] = redact.Bounded(p, FactMaxChars)
	}
	var cut bool
	c.Failures, cut = boundIDs(c.Failures)
	c.FailuresTruncated = c.FailuresTruncated || cut
	c.Resolved, _ = boundIDs(c.Resolved)
	c.CachedPackages, _ = boundIDs(c.CachedPackages)
	c.FailureMessages = boundMessages(c.FailureMessages)
	if len(c.Problems) > MaxValidationProblems {
		c.Problems = c.Problems[:MaxValidationProblems]
	}
	return &c
}

// boundMessages redacts and bounds failure messages: at most
// MaxValidationMessages, each identity MaxValidationIDChars and each
// message ValidationMessageMaxChars characters.
func boundMessages(ms []FailureMessage) []FailureMessage {
	if len(ms) == 0 {
		return nil
	}
	out := make([]FailureMessage, 0, min(len(ms), MaxValidationMessages))
	for _, m := range ms[:min(len(ms), MaxValidationMessages)] {
		out = append(out, FailureMessage{ID: redact.Bounded(m.ID, MaxValidationIDChars), Message: redact.Bounded(m.Message, ValidationMessageMaxChars)})
	}
	return out
}

// Validate checks a stored or imported validation record.
func (v Validation) Validate() error {
	switch {
	case v.Tool == "":
		return fmt.Errorf("validation: tool missing")
	case !scopeIDRE.MatchString(v.ScopeID):
		return fmt.Errorf("validation: scope_id malformed")
	case v.Passed < 0 || v.Failed < 0 || v.Skipped < 0 || v.FailuresTotal < 0 || v.CachedTotal < 0:
		return fmt.Errorf("validation: negative count")
	case len(v.FailureMessages) > MaxValidationMessages:
		return fmt.Errorf("validation: more than %d failure messages", MaxValidationMessages)
	case len(v.Failures) > MaxValidationIDs || len(v.Resolved) > MaxValidationIDs || len(v.CachedPackages) > MaxValidationIDs:
		return fmt.Errorf("validation: more than %d identities", MaxValidationIDs)
	case len(v.Packages) > MaxValidationPackages || len(v.Problems) > MaxValidationProblems:
		return fmt.Errorf("validation: bounds exceeded")
	}
	switch v.Verdict {
	case VerdictPassed, VerdictFailed, VerdictEvidenceGap:
	case VerdictNoTests:
		if v.Passed+v.Failed > 0 || len(v.Resolved) > 0 {
			return fmt.Errorf("validation: a no_tests run counts or resolves tests")
		}
	default:
		return fmt.Errorf("validation: unknown verdict %q", v.Verdict)
	}
	return nil
}
