package testreport

import (
	"reflect"
	"testing"
)

func TestCompareReasons(t *testing.T) {
	scope := ScopeID(Scope{Kind: "go_test", Packages: []string{"./..."}})
	other := ScopeID(Scope{Kind: "go_test", Packages: []string{"./a"}})
	goPass := parseFile(t, ParseGoTestJSON, "go_all_pass.jsonl")
	goFail := parseFile(t, ParseGoTestJSON, "go_panic.jsonl")
	goNone := parseFile(t, ParseGoTestJSON, "go_no_tests_matched.jsonl")
	goBuild := parseFile(t, ParseGoTestJSON, "go_build_failed.jsonl")
	cargo := parseFile(t, ParseCargoTest, "cargo_all_pass.out")
	truncated := goFail
	truncated.FailuresTruncated = true
	unknown := goPass
	unknown.Parser = "pytest_terminal/v9"

	run := func(id string, r Report) *Run { return &Run{ScopeID: id, Report: r} }
	for _, c := range []struct {
		name      string
		prev      *Run
		cur       Run
		want      DeltaReason
		wantDelta bool
	}{
		{"no previous", nil, *run(scope, goPass), NoPreviousValidation, false},
		{"empty scope identity", run("", goFail), *run(scope, goPass), InsufficientScopeIdentity, false},
		{"raw scope text is not an identity", run(scope, goFail), *run("./...", goPass), InsufficientScopeIdentity, false},
		{"scope changed", run(other, goFail), *run(scope, goPass), ValidationScopeChanged, false},
		{"parser unknown", run(scope, goFail), *run(scope, unknown), ParserIdentityUnavailable, false},
		{"parser missing", run(scope, Report{}), *run(scope, goPass), ParserIdentityUnavailable, false},
		{"parser changed", run(scope, goFail), *run(scope, cargo), ParserChanged, false},
		{"previous incomplete", run(scope, goBuild), *run(scope, goPass), PreviousEvidenceIncomplete, false},
		{"zero-test success never resolves a failure", run(scope, goFail), *run(scope, goNone), CurrentEvidenceIncomplete, false},
		{"truncated identities", run(scope, truncated), *run(scope, goPass), TestIdentityUnavailable, false},
		{"comparable", run(scope, goFail), *run(scope, goPass), "", true},
	} {
		d, reason, ok := Compare(c.prev, c.cur)
		if reason != c.want || ok != c.wantDelta {
			t.Errorf("%s: reason=%q ok=%v, want %q %v", c.name, reason, ok, c.want, c.wantDelta)
		}
		if !ok && !reflect.DeepEqual(d, Delta{}) {
			t.Errorf("%s: non-zero delta without comparability: %+v", c.name, d)
		}
	}
}

func TestCompareDelta(t *testing.T) {
	scope := ScopeID(Scope{Kind: "go_test", Packages: []string{"./..."}})
	prev := parseString(t, ParseGoTestJSON, goEvents(
		"run p TestFixed", "fail p TestFixed",
		"run p TestRemoved", "fail p TestRemoved",
		"run p TestNowSkipped", "fail p TestNowSkipped",
		"run p TestStill", "fail p TestStill",
		"run p TestBreaks", "pass p TestBreaks",
		"run p TestOther", "pass p TestOther",
		"fail p"))
	cur := parseString(t, ParseGoTestJSON, goEvents(
		"run p TestFixed", "pass p TestFixed",
		"run p TestNowSkipped", "skip p TestNowSkipped",
		"run p TestStill", "fail p TestStill",
		"run p TestBreaks", "fail p TestBreaks",
		"fail p"))
	if !prev.Complete || !cur.Complete {
		t.Fatalf("fixtures incomplete: %v / %v", prev.Problems, cur.Problems)
	}
	d, reason, ok := Compare(&Run{ScopeID: scope, Report: prev}, Run{ScopeID: scope, Report: cur})
	if !ok || reason != "" {
		t.Fatalf("not comparable: %q", reason)
	}
	want := Delta{
		PassedDelta:     -1, // 2 -> 1: a decrease is negative
		FailedDelta:     -2, // 4 -> 2
		SkippedDelta:    1,
		NewlyFailing:    []string{"p.TestBreaks"},
		NoLongerFailing: []string{"p.TestFixed"},
		NotRerun:        []string{"p.TestNowSkipped", "p.TestRemoved"},
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("delta:\n got %+v\nwant %+v", d, want)
	}
}

func TestCheckTestCount(t *testing.T) {
	pass := parseFile(t, ParseCargoTest, "cargo_all_pass.out") // 5 passed, 3 ignored
	none := parseFile(t, ParseCargoTest, "cargo_no_tests_matched.out")
	abort := parseFile(t, ParseCargoTest, "cargo_process_abort.out")
	for _, c := range []struct {
		name string
		r    Report
		min  int
		want CountCheck
	}{
		{"omitted assertion keeps zero-test runs compatible", none, 0, CountSatisfied},
		{"require_tests on zero tests", none, 1, CountBelowMinimum},
		{"ignored tests do not count", pass, 6, CountBelowMinimum},
		{"exact minimum", pass, 5, CountSatisfied},
		{"crashed run cannot prove a count", abort, 1, CountUnproven},
		{"zero Report proves nothing", Report{}, 1, CountUnproven},
		{"maximum minimum", pass, MaxMinTests, CountBelowMinimum},
	} {
		got, err := CheckTestCount(c.r, c.min)
		if err != nil || got != c.want {
			t.Errorf("%s: %q %v, want %q", c.name, got, err, c.want)
		}
	}
	for _, bad := range []int{-1, MaxMinTests + 1} {
		if _, err := CheckTestCount(pass, bad); err == nil {
			t.Errorf("min_tests %d accepted", bad)
		}
	}
}
