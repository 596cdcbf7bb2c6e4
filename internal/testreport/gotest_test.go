package testreport

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// goEvents renders test2json events, one per line, in the shape `go test
// -json` prints them. Each spec is "action package [test [elapsed]]".
func goEvents(specs ...string) string {
	var b strings.Builder
	for _, s := range specs {
		f := strings.Fields(s)
		fmt.Fprintf(&b, `{"Time":"2026-11-30T00:00:00Z","Action":%q,"Package":%q`, f[0], f[1])
		if len(f) > 2 && f[2] != "-" {
			fmt.Fprintf(&b, `,"Test":%q`, f[2])
		}
		if len(f) > 3 {
			fmt.Fprintf(&b, `,"Elapsed":%s`, f[3])
		}
		b.WriteString("}\n")
	}
	return b.String()
}

func TestGoTestJSONSynthetic(t *testing.T) {
	for _, c := range []struct {
		name  string
		input string
		want  summary
	}{
		{"empty input", "", summary{Problems: problems(ProblemNoSummary, ProblemNoTestsFound)}},
		{"text line from stderr is corrupt",
			goEvents("start p", "run p TestA", "pass p TestA") + "go: downloading example.com/x v1.0.0\n" + goEvents("pass p"),
			summary{Passed: 1, Problems: problems(ProblemCorruptLine)}},
		{"JSON without action is corrupt", `{"Package":"p"}` + "\n" + goEvents("run p TestA", "pass p TestA", "pass p"),
			summary{Passed: 1, Problems: problems(ProblemCorruptLine)}},
		{"blank lines and CRLF are fine",
			strings.ReplaceAll(goEvents("run p TestA", "pass p TestA", "pass p"), "\n", "\r\n\n"),
			summary{Passed: 1}},
		{"parent failing on its own after passing subtests is counted",
			goEvents("run p TestP", "run p TestP/a", "pass p TestP/a", "fail p TestP", "fail p"),
			summary{Passed: 1, Failed: 1, Failures: []string{"p.TestP"}}},
		{"parent failing through its subtest is not counted",
			goEvents("run p TestP", "run p TestP/a", "run p TestP/a/b", "fail p TestP/a/b", "fail p TestP/a", "fail p TestP", "fail p"),
			summary{Failed: 1, Failures: []string{"p.TestP/a/b"}}},
		{"package failing without a failed test (TestMain exit)",
			goEvents("start p", "run p TestA", "pass p TestA", "fail p"),
			summary{Passed: 1, Failed: 1, Failures: []string{"p"}, Problems: problems(ProblemUnattributedFailure)}},
		{"older Go build failure marker",
			goEvents("start p") + `{"Action":"output","Package":"p","Output":"FAIL\tp [build failed]\n"}` + "\n" + goEvents("fail p"),
			summary{Failed: 1, Failures: []string{"p"}, Problems: problems(ProblemBuildFailed)}},
		{"setup failure",
			goEvents("start p") + `{"Action":"output","Package":"p","Output":"FAIL\tp [setup failed]\n"}` + "\n" + goEvents("fail p"),
			summary{Failed: 1, Failures: []string{"p"}, Problems: problems(ProblemBuildFailed)}},
		{"unreported tests of a failed package fail, children first",
			goEvents("run p TestA", "run p TestA/x", "run p TestB", "pass p TestB", "fail p"),
			summary{Passed: 1, Failed: 1, Failures: []string{"p.TestA/x"}}},
		{"unreported test of a passed package is a mismatch",
			goEvents("run p TestA", "pass p"),
			summary{Failed: 1, Failures: []string{"p.TestA"}, Problems: problems(ProblemSummaryMismatch)}},
		{"passed package with a failed test is a mismatch",
			goEvents("run p TestA", "fail p TestA", "pass p"),
			summary{Failed: 1, Failures: []string{"p.TestA"}, Problems: problems(ProblemSummaryMismatch)}},
		{"package never finishing is no summary",
			goEvents("run p TestA", "pass p TestA", "run q TestB", "pass q TestB", "pass p"),
			summary{Passed: 2, Problems: problems(ProblemNoSummary)}},
		{"rerun of a running test is a contradiction",
			goEvents("run p TestA", "run p TestA", "pass p TestA", "pass p"),
			summary{Passed: 1, Problems: problems(ProblemSummaryMismatch)}},
		{"package without test files is not counted",
			goEvents("start p", "skip p", "run q TestA", "pass q TestA", "pass q"),
			summary{Passed: 1}},
		{"pause, cont, bench and unknown actions carry no result",
			goEvents("run p TestA", "pause p TestA", "cont p TestA", "bench p BenchmarkX", "frobnicate p TestA", "pass p TestA", "pass p"),
			summary{Passed: 1}},
		{"a test without run event is counted",
			goEvents("skip p TestA", "pass p"),
			summary{Skipped: 1, Problems: problems(ProblemNoTestsFound)}},
		{"-count=2 repeats are counted each time",
			goEvents("run p TestA", "fail p TestA", "run p TestA", "fail p TestA", "fail p"),
			summary{Failed: 2, Failures: []string{"p.TestA"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			expect(t, c.name, parseString(t, ParseGoTestJSON, c.input), c.want)
		})
	}
}

func TestGoTestJSONDurations(t *testing.T) {
	r := parseString(t, ParseGoTestJSON, goEvents("run p TestA", "pass p TestA 1.5", "run p TestB", "pass p TestB 0.0004", "pass p 2"))
	if r.Cases[0].DurationMS != 1500 || r.Cases[1].DurationMS != 0 {
		t.Errorf("durations: %v", r.Cases)
	}
}

func TestGoTestJSONPendingBound(t *testing.T) {
	var b strings.Builder
	for i := range MaxPendingTests + 1 {
		fmt.Fprintf(&b, `{"Action":"run","Package":"p","Test":"T%d"}`+"\n", i)
	}
	for i := range MaxPendingTests + 1 {
		fmt.Fprintf(&b, `{"Action":"pass","Package":"p","Test":"T%d"}`+"\n", i)
	}
	b.WriteString(`{"Action":"pass","Package":"p"}` + "\n")
	r := parseString(t, ParseGoTestJSON, b.String())
	expect(t, "pending bound", r, summary{Passed: MaxPendingTests + 1, Problems: problems(ProblemLimitExceeded)})

	b.Reset()
	for i := range MaxPendingPackages + 1 {
		fmt.Fprintf(&b, `{"Action":"start","Package":"p%d"}`+"\n", i)
	}
	r = parseString(t, ParseGoTestJSON, b.String())
	expect(t, "package bound", r, summary{Problems: problems(ProblemLimitExceeded, ProblemNoSummary, ProblemNoTestsFound)})
}

func TestGoTestJSONReadError(t *testing.T) {
	boom := errors.New("boom")
	r, err := ParseGoTestJSON(&errReader{data: goEvents("run p TestA", "pass p TestA"), err: boom})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	checkInvariants(t, r)
	expect(t, "read error", r, summary{Passed: 1, Problems: problems(ProblemNoSummary, ProblemTruncatedOutput)})
}
