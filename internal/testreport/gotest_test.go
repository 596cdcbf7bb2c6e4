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

// goOutput renders a package-level output event of package pkg.
func goOutput(pkg, line string) string {
	return fmt.Sprintf(`{"Action":"output","Package":%q,"Output":%q}`, pkg, line) + "\n"
}

// TestGoTestJSONCached: a package whose result line says "(cached)"
// (with or without notes after it) is named in Cached and its cases are
// marked; a fresh package, a package whose name another one's extends, a
// result line naming another package and a failed package are not; the
// counts are the runner's either way.
func TestGoTestJSONCached(t *testing.T) {
	in := goEvents("start ex.com/a", "run ex.com/a TestA", "pass ex.com/a TestA") +
		goOutput("ex.com/a", "PASS\n") + goOutput("ex.com/a", "ok  \tex.com/a\t(cached)\n") + goEvents("pass ex.com/a") +
		goEvents("start ex.com/a.b", "run ex.com/a.b TestB", "pass ex.com/a.b TestB") +
		goOutput("ex.com/a.b", "ok  \tex.com/a.b\t0.004s\n") + goEvents("pass ex.com/a.b") +
		goEvents("start ex.com/c", "run ex.com/c TestC", "pass ex.com/c TestC") +
		goOutput("ex.com/c", "ok  \tex.com/c\t(cached)\tcoverage: 50.0% of statements\n") + goEvents("pass ex.com/c") +
		goEvents("start ex.com/d", "run ex.com/d TestD", "pass ex.com/d TestD") +
		goOutput("ex.com/d", "ok  \tex.com/a\t(cached)\n") + goEvents("pass ex.com/d") +
		goEvents("start ex.com/e", "run ex.com/e TestE", "fail ex.com/e TestE") +
		goOutput("ex.com/e", "ok  \tex.com/e\t(cached)\n") + goEvents("fail ex.com/e")
	r := parseString(t, ParseGoTestJSON, in)
	if fmt.Sprint(r.Cached) != "[ex.com/a ex.com/c]" || r.CachedTotal != 2 || r.Passed != 4 || r.Failed != 1 {
		t.Fatalf("cached %v (%d), passed %d failed %d", r.Cached, r.CachedTotal, r.Passed, r.Failed)
	}
	for _, c := range r.Cases {
		want := c.ID == "ex.com/a.TestA" || c.ID == "ex.com/c.TestC"
		if c.Cached != want {
			t.Errorf("case %s cached=%v, want %v", c.ID, c.Cached, want)
		}
	}
	// A fresh run names nothing.
	if r := parseString(t, ParseGoTestJSON, goEvents("run p TestA", "pass p TestA")+goOutput("p", "ok  \tp\t0.1s\n")+goEvents("pass p")); r.Cached != nil || r.CachedTotal != 0 {
		t.Fatalf("fresh run: %v %d", r.Cached, r.CachedTotal)
	}
}

// TestGoTestJSONCachedBound: past MaxCachedPackages, Cached keeps the
// smallest names and CachedTotal counts every cached package.
func TestGoTestJSONCachedBound(t *testing.T) {
	var b strings.Builder
	n := MaxCachedPackages + 7
	for i := n - 1; i >= 0; i-- {
		pkg := fmt.Sprintf("ex.com/p%03d", i)
		b.WriteString(goEvents("run "+pkg+" TestX", "pass "+pkg+" TestX") + goOutput(pkg, "ok  \t"+pkg+"\t(cached)\n") + goEvents("pass "+pkg))
	}
	r := parseString(t, ParseGoTestJSON, b.String())
	if len(r.Cached) != MaxCachedPackages || r.CachedTotal != n || r.Cached[0] != "ex.com/p000" ||
		r.Cached[MaxCachedPackages-1] != fmt.Sprintf("ex.com/p%03d", MaxCachedPackages-1) || !r.Complete {
		t.Fatalf("cached %d of %d: first %s last %s", len(r.Cached), r.CachedTotal, r.Cached[0], r.Cached[len(r.Cached)-1])
	}
}
