package testreport

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRecordedOutputs pins the Report of every file in testdata/ (see
// testdata/README.md for how each was produced).
func TestRecordedOutputs(t *testing.T) {
	const (
		goCalc  = "example.com/demo/calc."
		goPanic = "example.com/demo/panicky.TestPanics"
		goBuild = "example.com/demo/broken"
	)
	for _, c := range []struct {
		file string
		fn   parseFunc
		want summary
	}{
		// go test -json
		{"go_all_pass.jsonl", ParseGoTestJSON, summary{Passed: 3}},
		{"go_mixed.jsonl", ParseGoTestJSON, summary{Passed: 7, Failed: 4, Skipped: 2,
			Failures: []string{goBuild, goCalc + "TestFails", goCalc + "TestTable/wrong", goPanic},
			Problems: problems(ProblemBuildFailed)}},
		{"go_build_failed.jsonl", ParseGoTestJSON, summary{Failed: 1, Failures: []string{goBuild},
			Problems: problems(ProblemBuildFailed)}},
		{"go_no_tests_matched.jsonl", ParseGoTestJSON, summary{Problems: problems(ProblemNoTestsFound)}},
		{"go_panic.jsonl", ParseGoTestJSON, summary{Passed: 1, Failed: 1, Failures: []string{goPanic}}},
		{"go_panic_no_test_result.jsonl", ParseGoTestJSON, summary{Passed: 1, Failed: 1, Failures: []string{goPanic}}},
		{"go_summary_altered.jsonl", ParseGoTestJSON, summary{Passed: 1, Failed: 1, Failures: []string{goPanic},
			Problems: problems(ProblemSummaryMismatch)}},
		{"go_truncated.jsonl", ParseGoTestJSON, summary{Passed: 6, Failed: 2, Skipped: 2,
			Failures: []string{goBuild, goCalc + "TestTable/wrong"},
			Problems: problems(ProblemBuildFailed, ProblemCorruptLine, ProblemNoSummary)}},
		{"go_garbage_line.jsonl", ParseGoTestJSON, summary{Passed: 3, Problems: problems(ProblemCorruptLine)}},

		// cargo test
		{"cargo_all_pass.out", ParseCargoTest, summary{Passed: 5, Skipped: 3}},
		{"cargo_mixed_no_fail_fast.out", ParseCargoTest, summary{Passed: 6, Failed: 2, Skipped: 3,
			Failures: []string{"demo::doctest::src/lib.rs - sub (line 14)", "demo::tests::it_fails"}}},
		{"cargo_fail_fast.out", ParseCargoTest, summary{Passed: 3, Failed: 1, Skipped: 2,
			Failures: []string{"demo::tests::it_fails"}}},
		{"cargo_compile_error.out", ParseCargoTest, summary{Failed: 1, Failures: []string{"demo"},
			Problems: problems(ProblemBuildFailed, ProblemNoSummary)}},
		{"cargo_no_tests_matched.out", ParseCargoTest, summary{Problems: problems(ProblemNoTestsFound)}},
		{"cargo_process_abort.out", ParseCargoTest, summary{Problems: problems(ProblemNoSummary, ProblemNoTestsFound)}},
		{"cargo_truncated.out", ParseCargoTest, summary{Passed: 4, Failed: 1, Skipped: 2,
			Failures: []string{"demo::tests::it_fails"}, Problems: problems(ProblemNoSummary)}},
		{"cargo_garbage_line.out", ParseCargoTest, summary{Passed: 5, Skipped: 3, Problems: problems(ProblemCorruptLine)}},
		{"cargo_summary_altered.out", ParseCargoTest, summary{Passed: 5, Skipped: 3, Problems: problems(ProblemSummaryMismatch)}},

		// pytest --junitxml
		{"pytest_all_pass.xml", ParseJUnitXML, summary{Passed: 2}},
		{"pytest_mixed.xml", ParseJUnitXML, summary{Passed: 4, Failed: 6, Skipped: 2, Failures: []string{
			"test_demo.test_fails", "test_demo.test_param[2]", "test_demo.test_setup_error",
			"test_teardown.test_fails_and_teardown_errors", "test_teardown.test_passes_but_teardown_errors"}}},
		{"pytest_collection_error.xml", ParseJUnitXML, summary{Failed: 1, Failures: []string{"test_collect_error"},
			Problems: problems(ProblemBuildFailed)}},
		{"pytest_no_tests.xml", ParseJUnitXML, summary{Problems: problems(ProblemNoTestsFound)}},
		{"pytest_truncated.xml", ParseJUnitXML, summary{Passed: 2, Failed: 2, Skipped: 2,
			Failures: []string{"test_demo.test_fails", "test_demo.test_param[2]"},
			Problems: problems(ProblemTruncatedOutput)}},
		{"pytest_garbage.xml", ParseJUnitXML, summary{Passed: 1, Problems: problems(ProblemCorruptDocument)}},
		{"pytest_summary_altered.xml", ParseJUnitXML, summary{Passed: 2, Problems: problems(ProblemSummaryMismatch)}},

		// node --test TAP
		{"node_tap_mixed.tap", ParseTAP, summary{Passed: 4, Failed: 2, Skipped: 2,
			Failures: []string{"fails on purpose", "parent with subtests > child fails"}}},
		{"node_tap_two_files.tap", ParseTAP, summary{Passed: 3, Skipped: 1}},
		{"node_tap_truncated.tap", ParseTAP, summary{Passed: 2, Failed: 1, Skipped: 2,
			Failures: []string{"fails on purpose"}, Problems: problems(ProblemNoSummary)}},
		{"node_tap_garbage_line.tap", ParseTAP, summary{Passed: 3, Skipped: 1, Problems: problems(ProblemCorruptLine)}},
		{"node_tap_plan_altered.tap", ParseTAP, summary{Passed: 3, Skipped: 1, Problems: problems(ProblemSummaryMismatch)}},
		{"node_tap_footer_altered.tap", ParseTAP, summary{Passed: 3, Skipped: 1, Problems: problems(ProblemSummaryMismatch)}},
		{"node_tap_bail_out.tap", ParseTAP, summary{Passed: 1, Problems: problems(ProblemBailOut, ProblemNoSummary)}},
	} {
		t.Run(c.file, func(t *testing.T) {
			expect(t, c.file, parseFile(t, c.fn, c.file), c.want)
		})
	}
}

// TestEveryTestdataFileIsPinned keeps TestRecordedOutputs exhaustive.
func TestEveryTestdataFileIsPinned(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("testdata_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		if name == "README.md" {
			continue
		}
		if !slices.Contains([]string{".jsonl", ".out", ".xml", ".tap"}, filepath.Ext(name)) ||
			!strings.Contains(string(src), `"`+name+`"`) {
			t.Errorf("testdata/%s is not pinned in TestRecordedOutputs", name)
		}
	}
}

// TestRecordedCases pins case identities, outcomes and durations where the
// recordings carry them.
func TestRecordedCases(t *testing.T) {
	for _, c := range []struct {
		file string
		fn   parseFunc
		want []Case
	}{
		{"go_all_pass.jsonl", ParseGoTestJSON, []Case{
			{"example.com/demo/allpass.TestDouble", Passed, 0, true},
			{"example.com/demo/allpass.TestDoubleSub/pos", Passed, 0, true},
			{"example.com/demo/allpass.TestDoubleSub/neg", Passed, 0, true},
		}},
		{"cargo_all_pass.out", ParseCargoTest, []Case{
			{"demo::tests::nested::deep", Passed, 0, false},
			{"demo::tests::it_works", Passed, 0, false},
			{"demo::tests::network", Skipped, 0, false},
			{"demo::tests::slow", Skipped, 0, false},
			{"integration::adds_via_public_api", Passed, 0, false},
			{"integration::also_passes", Passed, 0, false},
			{"demo::doctest::src/lib.rs - add (line 5)", Passed, 0, false},
			{"demo::doctest::src/lib.rs - noop (line 23)", Skipped, 0, false},
		}},
		{"cargo_fail_fast.out", ParseCargoTest, []Case{
			{"demo::tests::it_works", Passed, 0, false},
			{"demo::tests::nested::deep", Passed, 0, false},
			{"demo::tests::network", Skipped, 0, false},
			{"demo::tests::slow", Skipped, 0, false},
			{"demo::tests::it_fails", Failed, 0, false},
			{"demo::tests::sub_underflow", Passed, 0, false}, // " - should panic" dropped
		}},
		{"pytest_mixed.xml", ParseJUnitXML, []Case{
			{"test_demo.test_passes", Passed, 0, false},
			{"test_demo.test_fails", Failed, 0, false},
			{"test_demo.test_skipped", Skipped, 0, false},
			{"test_demo.test_xfail", Skipped, 0, false},
			{"test_demo.test_param[1]", Passed, 0, false},
			{"test_demo.test_param[2]", Failed, 0, false},
			{"test_demo.test_setup_error", Failed, 0, false},
			{"test_demo.TestGroup.test_method", Passed, 0, false},
			{"test_demo.TestGroup.test_output", Passed, 0, false},
			{"test_teardown.test_fails_and_teardown_errors", Failed, 0, false},
			{"test_teardown.test_fails_and_teardown_errors", Failed, 0, false},
			{"test_teardown.test_passes_but_teardown_errors", Failed, 0, false},
		}},
		{"node_tap_mixed.tap", ParseTAP, []Case{
			{"adds numbers", Passed, 1, false},
			{"fails on purpose", Failed, 1, false},
			{"skipped test", Skipped, 0, false},
			{"todo test", Skipped, 0, false},
			{"parent with subtests > child passes", Passed, 0, false},
			{"parent with subtests > child fails", Failed, 0, false},
			{"a suite > suite case one", Passed, 0, false},
			{"a suite > suite case #2 with hash", Passed, 2, false},
		}},
	} {
		r := parseFile(t, c.fn, c.file)
		if !slices.Equal(r.Cases, c.want) {
			t.Errorf("%s cases:\n got %v\nwant %v", c.file, r.Cases, c.want)
		}
	}
}
