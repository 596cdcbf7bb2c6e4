package testreport

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"slices"
	"strings"
)

// goEvent is one test2json event. Unknown fields are ignored.
type goEvent struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

type goPackage struct {
	testFailed  bool  // some test of the package failed
	buildFailed bool  // a "[build failed]"/"[setup failed]" line was seen
	cached      bool  // its result line said "(cached)"
	cases       []int // indexes in Cases of its results
}

type goTest struct {
	hasChildren bool
	childFailed bool
	// out is the test's own output, kept for its failure message while
	// the Report has room for one.
	out messageBuf
}

type goParser struct {
	b        *builder
	packages map[string]*goPackage
	tests    map[string]map[string]*goTest // package -> test -> state
	pending  int                           // tests tracked across packages
	finished int                           // packages that reported a result
}

// ParseGoTestJSON parses the stdout of `go test -json` (the test2json event
// stream, one JSON object per line) into a Report with Parser
// ParserGoTestJSON. Pass stdout only: any line that is not a JSON event is
// ProblemCorruptLine.
//
// Identities are "import/path.TestName" and "import/path.TestName/sub". A
// test is counted from its pass/fail/skip event; a test with subtests is
// counted only when it failed while none of its subtests failed. A test that
// started but never reported is counted failed when its package fails (the
// test binary died in it) and additionally yields ProblemSummaryMismatch
// when its package passes.
//
// A package's own pass/fail event is its summary. A package that failed with
// a build failure ("build-fail" action, FailedBuild field, or the
// "[build failed]"/"[setup failed]" marker of older Go) is counted as one
// failed case named by its import path and yields ProblemBuildFailed; a
// package that failed with no failed test yields the same failed case and
// ProblemUnattributedFailure; a package that passed with a failed test
// yields ProblemSummaryMismatch. A package that started but never reported
// (a truncated stream) yields ProblemNoSummary. Packages without test files
// are not counted.
func ParseGoTestJSON(r io.Reader) (Report, error) {
	p := &goParser{
		b:        newBuilder(ParserGoTestJSON),
		packages: map[string]*goPackage{},
		tests:    map[string]map[string]*goTest{},
	}
	lr := newLineReader(r)
	for {
		line, cut, err := lr.next()
		if err == io.EOF {
			break
		}
		switch {
		case cut:
			p.b.problem(ProblemTruncatedOutput)
		case len(bytes.TrimSpace(line)) == 0:
		default:
			p.line(line)
		}
		if err != nil {
			p.b.problem(ProblemTruncatedOutput)
			return p.finish(), err
		}
	}
	return p.finish(), nil
}

func (p *goParser) line(line []byte) {
	var ev goEvent
	if !cleanLine(line) || bytes.TrimSpace(line)[0] != '{' || json.Unmarshal(line, &ev) != nil || ev.Action == "" {
		p.b.problem(ProblemCorruptLine)
		return
	}
	switch ev.Action {
	case "build-fail":
		// Go 1.24+: the build of ImportPath failed; its package's fail
		// event (with FailedBuild) follows and counts it.
		p.b.problem(ProblemBuildFailed)
		return
	case "build-output":
		return
	}
	if ev.Package == "" {
		// Every other action belongs to a package.
		p.b.problem(ProblemCorruptLine)
		return
	}
	pkg := p.pkg(ev.Package)
	switch ev.Action {
	case "run":
		if ev.Test != "" {
			p.startTest(ev.Package, ev.Test)
		}
	case "pass", "fail", "skip":
		if ev.Test != "" {
			p.endTest(ev.Package, ev.Test, ev.Action, ev.Elapsed)
		} else {
			p.endPackage(ev.Package, pkg, ev)
		}
	case "output":
		if ev.Test != "" {
			p.testOutput(ev.Package, ev.Test, ev.Output)
		}
		if ev.Test == "" && strings.HasPrefix(ev.Output, "FAIL\t") &&
			(strings.Contains(ev.Output, "[build failed]") || strings.Contains(ev.Output, "[setup failed]")) {
			if pkg != nil {
				pkg.buildFailed = true
			}
		}
		if ev.Test == "" && pkg != nil && cachedResult(ev.Output, ev.Package) {
			pkg.cached = true
		}
	}
	// start, pause, cont, bench and unknown future actions carry no result.
}

// cachedResult reports whether line is go test's result line of package
// pkg replayed from the test cache: "ok  \t<pkg>\t(cached)", optionally
// followed by coverage or other notes.
func cachedResult(line, pkg string) bool {
	rest, ok := strings.CutPrefix(line, "ok  \t"+pkg+"\t")
	return ok && strings.HasPrefix(rest, "(cached)")
}

// pkg returns the tracked state of a package, starting it if needed; nil
// when MaxPendingPackages is exhausted.
func (p *goParser) pkg(name string) *goPackage {
	if s, ok := p.packages[name]; ok {
		return s
	}
	if len(p.packages) >= MaxPendingPackages {
		p.b.problem(ProblemLimitExceeded)
		return nil
	}
	s := &goPackage{}
	p.packages[name] = s
	return s
}

func (p *goParser) startTest(pkg, test string) {
	m := p.tests[pkg]
	if m == nil {
		m = map[string]*goTest{}
		p.tests[pkg] = m
	}
	if _, ok := m[test]; ok {
		// A rerun (-count) of a test still running is a contradiction.
		p.b.problem(ProblemSummaryMismatch)
		return
	}
	if p.pending >= MaxPendingTests {
		p.b.problem(ProblemLimitExceeded)
		return
	}
	m[test] = &goTest{}
	p.pending++
}

// testOutput keeps a line a running test printed for its failure
// message, leaving out the framing lines go test adds (=== RUN, --- FAIL,
// ...).
func (p *goParser) testOutput(pkg, test, line string) {
	st := p.tests[pkg][test]
	if st == nil || !p.b.wantsMessages() || goFraming(line) {
		return
	}
	st.out.write(line)
}

// goFraming reports whether line is one go test prints around a test's
// own output.
func goFraming(line string) bool {
	t := strings.TrimLeft(line, " ")
	for _, prefix := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- FAIL", "--- PASS", "--- SKIP"} {
		if strings.HasPrefix(t, prefix) {
			return true
		}
	}
	return false
}

// endTest records a test's terminal action.
func (p *goParser) endTest(pkg, test, action string, elapsed float64) {
	st := &goTest{}
	if m := p.tests[pkg]; m != nil {
		if s, ok := m[test]; ok {
			st = s
			delete(m, test)
			p.pending--
		}
	}
	failed := action == "fail"
	if failed {
		if s := p.packages[pkg]; s != nil {
			s.testFailed = true
		}
	}
	// Tell running ancestors that they have a (failed) subtest.
	for i := len(test) - 1; i > 0; i-- {
		if test[i] != '/' {
			continue
		}
		if a := p.tests[pkg][test[:i]]; a != nil {
			a.hasChildren = true
			a.childFailed = a.childFailed || failed
		}
	}
	if st.hasChildren && (!failed || st.childFailed) {
		return // an aggregate of its subtests
	}
	outcome := Passed
	switch action {
	case "fail":
		outcome = Failed
	case "skip":
		outcome = Skipped
	}
	if i := p.b.add(pkg+"."+test, outcome, durationMS(elapsed*1000)); i >= 0 {
		if s := p.packages[pkg]; s != nil {
			s.cases = append(s.cases, i)
		}
	}
	if outcome == Failed {
		p.b.addMessage(pkg+"."+test, &st.out)
	}
}

func (p *goParser) endPackage(name string, pkg *goPackage, ev goEvent) {
	// Tests that started but never reported: children first (a name sorts
	// after its prefix), so that parents see them.
	if m := p.tests[name]; len(m) > 0 {
		dangling := make([]string, 0, len(m))
		for t := range m {
			dangling = append(dangling, t)
		}
		slices.Sort(dangling)
		slices.Reverse(dangling)
		if ev.Action != "fail" {
			p.b.problem(ProblemSummaryMismatch)
		}
		for _, t := range dangling {
			p.endTest(name, t, "fail", 0)
		}
	}
	delete(p.tests, name)
	if pkg == nil {
		return
	}
	delete(p.packages, name)
	p.finished++
	switch ev.Action {
	case "fail":
		switch {
		case ev.FailedBuild != "" || pkg.buildFailed:
			p.b.problem(ProblemBuildFailed)
			p.b.add(name, Failed, durationMS(ev.Elapsed*1000))
		case !pkg.testFailed:
			p.b.problem(ProblemUnattributedFailure)
			p.b.add(name, Failed, durationMS(ev.Elapsed*1000))
		}
	case "pass":
		if pkg.testFailed {
			p.b.problem(ProblemSummaryMismatch)
		}
		if pkg.cached {
			p.b.cached(name, pkg.cases)
		}
	}
}

func (p *goParser) finish() Report {
	if len(p.packages) > 0 || p.finished == 0 {
		p.b.problem(ProblemNoSummary)
	}
	return p.b.finish()
}

// durationMS rounds a millisecond float to int64, clamping junk to 0.
func durationMS(ms float64) int64 {
	if math.IsNaN(ms) || ms <= 0 {
		return 0
	}
	if ms >= math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return int64(math.Round(ms))
}
