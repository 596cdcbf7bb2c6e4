package testreport

import (
	"errors"
	"slices"
	"testing"
)

func TestCargoTestSynthetic(t *testing.T) {
	const ok1 = "running 1 test\ntest a::b ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n"
	for _, c := range []struct {
		name  string
		input string
		want  summary
		ids   []string
	}{
		{"empty input", "", summary{Problems: problems(ProblemNoSummary, ProblemNoTestsFound)}, nil},
		{"bare run without Running lines", ok1, summary{Passed: 1}, []string{"a::b"}},
		{"older cargo Running line without source",
			"     Running target/debug/deps/my_crate-0123456789abcdef\n" + ok1,
			summary{Passed: 1}, []string{"my_crate::a::b"}},
		{"windows binary name",
			`     Running unittests src\lib.rs (target\debug\deps\w-0123456789abcdef.exe)` + "\n" + ok1,
			summary{Passed: 1}, []string{"w::a::b"}},
		{"cargo -v Running rustc lines keep the target",
			"     Running unittests src/lib.rs (target/debug/deps/k-0123456789abcdef)\n     Running `rustc --crate-name k`\n" + ok1,
			summary{Passed: 1}, []string{"k::a::b"}},
		{"old summary without finished-in",
			"running 1 test\ntest x ... FAILED\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n",
			summary{Failed: 1, Failures: []string{"x"}}, nil},
		{"benchmarks are measured, not counted",
			"running 2 tests\ntest t ... ok\ntest b ... bench:         12 ns/iter (+/- 1)\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 1 measured; 0 filtered out\n",
			summary{Passed: 1}, nil},
		{"compiler messages printed by a UI test are not a build failure",
			"running 1 test\ntest ui ... FAILED\n\nfailures:\nerror[E0277]: the trait bound is not satisfied\nerror: could not compile `fixture`\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n",
			summary{Failed: 1, Failures: []string{"ui"}}, nil},
		{"rustc error without could-not-compile",
			"error[E0425]: cannot find value `x` in this scope\n",
			summary{Problems: problems(ProblemBuildFailed, ProblemNoSummary, ProblemNoTestsFound)}, nil},
		{"test line outside a run",
			"test stray ... ok\n" + ok1,
			summary{Passed: 2, Problems: problems(ProblemSummaryMismatch)}, nil},
		{"summary without a run",
			"test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n" + ok1,
			summary{Passed: 1, Problems: problems(ProblemSummaryMismatch)}, nil},
		{"malformed summary line",
			"running 1 test\ntest x ... ok\ntest result: ok. lots passed\n",
			summary{Passed: 1, Problems: problems(ProblemCorruptLine, ProblemNoSummary)}, nil},
		{"announced count disagrees",
			"running 2 tests\ntest x ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n",
			summary{Passed: 1, Problems: problems(ProblemSummaryMismatch)}, nil},
		{"status disagrees with failed count",
			"running 1 test\ntest x ... ok\n\ntest result: FAILED. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n",
			summary{Passed: 1, Problems: problems(ProblemSummaryMismatch)}, nil},
		{"a run interrupted by the next one",
			"running 1 test\n" + ok1,
			summary{Passed: 1, Problems: problems(ProblemNoSummary)}, nil},
		{"unknown result is not counted",
			"running 1 test\ntest x ... hello from --nocapture\nok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n",
			summary{Problems: problems(ProblemNoTestsFound, ProblemSummaryMismatch)}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := parseString(t, ParseCargoTest, c.input)
			expect(t, c.name, r, c.want)
			if c.ids != nil {
				var ids []string
				for _, k := range r.Cases {
					ids = append(ids, k.ID)
				}
				if !slices.Equal(ids, c.ids) {
					t.Errorf("ids = %q, want %q", ids, c.ids)
				}
			}
		})
	}
}

func TestCargoTestReadError(t *testing.T) {
	boom := errors.New("boom")
	r, err := ParseCargoTest(&errReader{data: "running 1 test\ntest x ... ok\n", err: boom})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	expect(t, "read error", r, summary{Passed: 1, Problems: problems(ProblemNoSummary, ProblemTruncatedOutput)})
}
