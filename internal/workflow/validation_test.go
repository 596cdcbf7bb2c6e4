package workflow_test

import (
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/workflow"
)

// TestOnlyProvenRunsResolve: a no_tests or evidence_gap run resolves
// nothing, whatever its record says, and a no_tests record that counts or
// resolves tests is refused.
func TestOnlyProvenRunsResolve(t *testing.T) {
	scope := "validation_scope:v1:" + strings.Repeat("a", 64)
	run := func(seq int64, v workflow.Verdict, failures, resolved []string) workflow.ValidationRun {
		return workflow.ValidationRun{Seq: seq, Validation: workflow.Validation{Tool: "go_test", ScopeID: scope, Expectation: "success",
			Verdict: v, Failures: failures, Resolved: resolved}}
	}
	failed := run(1, workflow.VerdictFailed, []string{"T"}, nil)
	for _, v := range []workflow.Verdict{workflow.VerdictNoTests, workflow.VerdictEvidenceGap} {
		open := workflow.UnresolvedIn([]workflow.ValidationRun{failed, run(2, v, nil, []string{"T"})}, scope)
		if open["T"] != 1 {
			t.Errorf("a %s run resolved T: %v", v, open)
		}
	}
	if open := workflow.UnresolvedIn([]workflow.ValidationRun{failed, run(2, workflow.VerdictPassed, nil, []string{"T"})}, scope); len(open) != 0 {
		t.Errorf("a passing run did not resolve T: %v", open)
	}
	ok := run(2, workflow.VerdictNoTests, nil, nil).Validation
	if err := ok.Validate(); err != nil {
		t.Fatalf("no_tests record refused: %v", err)
	}
	bad := ok
	bad.Resolved = []string{"T"}
	if err := bad.Validate(); err == nil {
		t.Fatal("a no_tests record that resolves a test was accepted")
	}
	bad = ok
	bad.Passed = 1
	if err := bad.Validate(); err == nil {
		t.Fatal("a no_tests record that counts a test was accepted")
	}
}
