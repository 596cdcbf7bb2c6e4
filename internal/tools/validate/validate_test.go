package validate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/tools/sessions"
	"github.com/webcodex/webcodex/internal/tools/validate"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
	"github.com/webcodex/webcodex/internal/workspace"
)

type env struct {
	*kerneltest.Env
	svc *workflow.Service
	id  string
}

func newEnv(t *testing.T, files map[string]string) *env {
	t.Helper()
	st, err := workflowdb.Open(context.Background(), filepath.Join(t.TempDir(), "workflow.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := workflow.NewService(st, nil)
	p := kerneltest.TempProject(t, files)
	reg := kernel.NewRegistry()
	sessions.Register(reg, &sessions.Tools{Sessions: svc})
	validate.Register(reg, &validate.Tools{Runners: workspace.LocalOnly(&runner.Local{}), Sessions: svc})
	k := kernel.New(kernel.Options{Registry: reg, Projects: kerneltest.Projects{p.ID: p}, Sessions: svc})
	e := &env{Env: &kerneltest.Env{T: t, Kernel: k, Project: p}, svc: svc}
	e.id = kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"instruction": "make the tests pass"})).SessionID
	return e
}

// evidence decodes a validation output, from a success or a failure.
func evidence(t *testing.T, res kernel.Result) validate.Output {
	t.Helper()
	b := kerneltest.OutputBytes(t, res)
	var out validate.Output
	if res.Success {
		json.Unmarshal(b, &out)
		return out
	}
	var f struct {
		Validation validate.Output `json:"validation"`
	}
	json.Unmarshal(b, &f)
	return f.Validation
}

func (e *env) validations() []workflow.ValidationRun {
	e.T.Helper()
	evs, err := e.svc.Store().Events(context.Background(), e.id, 0)
	if err != nil {
		e.T.Fatal(err)
	}
	return workflow.Validations(evs)
}

const goMod = "module example.com/calc\n\ngo 1.21\n"
const calc = "package calc\n\nfunc Add(a, b int) int { return a - b }\n"
const calcTest = `package calc

import "testing"

func TestAdd(t *testing.T) {
	if Add(2, 2) != 4 {
		t.Fatal("2+2")
	}
}

func TestZero(t *testing.T) {
	if Add(0, 0) != 0 {
		t.Fatal("0+0")
	}
}
`

func TestGoTestFailThenFix(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	e := newEnv(t, map[string]string{"go.mod": goMod, "calc.go": calc, "calc_test.go": calcTest})
	res := e.Call("go_test", map[string]any{"session_id": e.id})
	kerneltest.Fails(t, res, failure.ValidationFailed)
	out := evidence(t, res)
	if out.Verdict != workflow.VerdictFailed || out.Failed != 1 || out.Passed != 1 || !slices.Contains(out.Failures, "example.com/calc.TestAdd") || !out.Complete {
		t.Fatalf("failing run: %+v", out)
	}
	if !strings.HasPrefix(out.ScopeID, "validation_scope:v1:") || out.Parser != "go_test_json/v1" {
		t.Fatalf("identity: %s %s", out.ScopeID, out.Parser)
	}
	// Fix the code and run the same scope again.
	e.Write("calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\n")
	ok := kerneltest.OK[validate.Output](t, e.Call("go_test", map[string]any{"session_id": e.id}))
	if ok.Verdict != workflow.VerdictPassed || ok.Passed != 2 || !slices.Equal(ok.Resolved, []string{"example.com/calc.TestAdd"}) {
		t.Fatalf("fixed run: %+v", ok)
	}
	sum := kerneltest.OK[validate.SummaryOutput](t, e.Call("validation_summary", map[string]any{"session_id": e.id}))
	if len(sum.Unresolved) != 0 || sum.Delta == nil || sum.Delta.FailedDelta != -1 || sum.Delta.PassedDelta != 1 ||
		!slices.Equal(sum.Delta.NoLongerFailing, []string{"example.com/calc.TestAdd"}) || sum.Runs != 2 {
		t.Fatalf("summary: %+v delta %+v", sum, sum.Delta)
	}
	// The ledger holds the evidence and the failing test's own message,
	// but no other test output.
	evs, _ := e.svc.Store().Events(context.Background(), e.id, 0)
	runs := workflow.Validations(evs)
	want := []workflow.FailureMessage{{ID: "example.com/calc.TestAdd", Message: "calc_test.go:7: 2+2"}}
	if len(runs) != 2 || !slices.Equal(runs[0].FailureMessages, want) || runs[1].FailureMessages != nil {
		t.Fatalf("failure messages: %+v", runs)
	}
	b, _ := json.Marshal(evs)
	for _, output := range []string{"=== RUN", "--- FAIL", "--- PASS"} {
		if strings.Contains(string(b), output) {
			t.Fatalf("ledger holds test output %q", output)
		}
	}
}

func TestEvidenceGaps(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	e := newEnv(t, map[string]string{"go.mod": goMod, "calc.go": calc, "calc_test.go": calcTest})
	kerneltest.Fails(t, e.Call("go_test", map[string]any{"session_id": e.id}), failure.ValidationFailed)
	// min_tests above the proven count is an evidence gap even with exit 0,
	// and so is a proven zero when min_tests asks for tests.
	e.Write("calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\n")
	res := e.Call("go_test", map[string]any{"session_id": e.id, "min_tests": 5})
	kerneltest.Fails(t, res, failure.EvidenceGap)
	if out := evidence(t, res); out.CountCheck != "below_minimum" || out.Passed != 2 || out.Verdict != workflow.VerdictEvidenceGap {
		t.Fatalf("min_tests: %+v", out)
	}
	res = e.Call("go_test", map[string]any{"session_id": e.id, "run": "^TestNothing$", "min_tests": 1})
	kerneltest.Fails(t, res, failure.EvidenceGap)
	if out := evidence(t, res); out.CountCheck != "below_minimum" || out.Passed != 0 || len(out.Resolved) != 0 {
		t.Fatalf("zero tests with min_tests: %+v", out)
	}
	sum := kerneltest.OK[validate.SummaryOutput](t, e.Call("validation_summary", map[string]any{"session_id": e.id}))
	if len(sum.Unresolved) != 1 || sum.Unresolved[0].ID != "example.com/calc.TestAdd" {
		t.Fatalf("an evidence gap resolved a failure: %+v", sum.Unresolved)
	}
}

// TestZeroTestsIsASuccessThatResolvesNothing reproduces issue 11 item 6:
// with min_tests omitted, a run whose report proves that zero tests ran is
// a successful execution with passed=0, whose evidence (read back from
// the SQLite ledger) says no tests ran and resolves nothing — even in the
// very scope of an earlier failure.
func TestZeroTestsIsASuccessThatResolvesNothing(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	e := newEnv(t, map[string]string{"go.mod": goMod, "calc.go": calc, "calc_test.go": calcTest})
	kerneltest.Fails(t, e.Call("go_test", map[string]any{"session_id": e.id}), failure.ValidationFailed)
	zero := func(args map[string]any) {
		t.Helper()
		args["session_id"] = e.id
		out := kerneltest.OK[validate.Output](t, e.Call("go_test", args))
		if out.Verdict != workflow.VerdictNoTests || out.Passed != 0 || out.Failed != 0 || out.ExitCode != 0 ||
			!slices.Equal(out.Problems, []string{"no_tests_found"}) || len(out.Resolved) != 0 || out.CountCheck != "" ||
			out.Expectation != (validate.Expectation{Declared: "success", Matched: true}) {
			t.Fatalf("zero tests: %+v", out)
		}
		evs, err := e.svc.Store().Events(context.Background(), e.id, 0)
		if err != nil {
			t.Fatal(err)
		}
		v := evs[len(evs)-1].Validation
		fin := evs[len(evs)-2]
		if v == nil || v.Verdict != workflow.VerdictNoTests || v.Passed != 0 || len(v.Resolved) != 0 ||
			!slices.Equal(v.Problems, []string{"no_tests_found"}) || v.Expectation != "success" || !v.ExpectationMatched {
			t.Fatalf("zero-test evidence: %+v", v)
		}
		if fin.Kind != workflow.EventToolCallFinished || fin.Outcome != workflow.OutcomeOK || fin.Facts["verdict"] != "no_tests" ||
			workflow.ClassifyFailure(fin) != workflow.NoFailure || workflow.ClassifyFailure(evs[len(evs)-1]) != workflow.NoFailure {
			t.Fatalf("zero-test call: %+v", fin)
		}
		sum := kerneltest.OK[validate.SummaryOutput](t, e.Call("validation_summary", map[string]any{"session_id": e.id}))
		if len(sum.Unresolved) != 1 || sum.Unresolved[0].ID != "example.com/calc.TestAdd" {
			t.Fatalf("a zero-test run resolved a failure: %+v", sum.Unresolved)
		}
	}
	// A filter that matches nothing.
	zero(map[string]any{"run": "^TestNothing$"})
	// The same scope as the failure, with its tests gone: still nothing
	// resolved, although TestAdd no longer fails.
	if err := os.Remove(filepath.Join(e.Project.Root, "calc_test.go")); err != nil {
		t.Fatal(err)
	}
	zero(map[string]any{})
}

func TestExpectedFailureIsNeutral(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	e := newEnv(t, map[string]string{"go.mod": goMod, "calc.go": calc, "calc_test.go": calcTest})
	// Reproduces issue 11 item 6: a failing run that was expected to fail
	// is still validation_failed, with the expectation matched.
	res := e.Call("go_test", map[string]any{"session_id": e.id, "result_expectation": "failure"})
	kerneltest.Fails(t, res, failure.ValidationFailed)
	out := evidence(t, res)
	if out.Expectation != (validate.Expectation{Declared: "failure", Matched: true}) || out.Verdict != workflow.VerdictFailed || out.ExitCode != 1 {
		t.Fatalf("expected failure: %+v", out)
	}
	sum := kerneltest.OK[validate.SummaryOutput](t, e.Call("validation_summary", map[string]any{"session_id": e.id}))
	if len(sum.Unresolved) != 0 {
		t.Fatalf("an expected failure became unresolved: %+v", sum.Unresolved)
	}
	// ... and a passing run that was expected to fail is a success, with
	// the expectation not matched.
	e.Write("calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\n")
	ok := kerneltest.OK[validate.Output](t, e.Call("go_test", map[string]any{"session_id": e.id, "result_expectation": "failure"}))
	if ok.Expectation != (validate.Expectation{Declared: "failure", Matched: false}) || ok.Verdict != workflow.VerdictPassed || ok.ExitCode != 0 {
		t.Fatalf("unexpected pass: %+v", ok)
	}
	// The ledger: the failed call records its real outcome; the expected
	// failure counts once, as non-actionable, by its evidence; the
	// unexpected pass is actionable.
	evs, err := e.svc.Store().Events(context.Background(), e.id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var classes []workflow.FailureClass
	var outcomes []string
	for _, ev := range evs {
		if ev.Kind == workflow.EventToolCallFinished && ev.Tool == "go_test" {
			outcomes = append(outcomes, string(ev.Outcome)+"/"+ev.ErrorKind+"/"+ev.Facts["expectation_matched"])
		}
		if c := workflow.ClassifyFailure(ev); c != workflow.NoFailure {
			classes = append(classes, c)
		}
	}
	if !slices.Equal(outcomes, []string{"failed/validation_failed/true", "ok//false"}) ||
		!slices.Equal(classes, []workflow.FailureClass{workflow.FailureNonActionable, workflow.FailureActionable}) {
		t.Fatalf("ledger outcomes %v classes %v", outcomes, classes)
	}
}

func TestBadInput(t *testing.T) {
	e := newEnv(t, map[string]string{"go.mod": goMod})
	nine := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}
	for name, tc := range map[string]struct {
		tool string
		args map[string]any
		want failure.Kind
	}{
		"ErrFlagPackage":   {"go_test", map[string]any{"packages": []string{"-exec=evil"}}, failure.InvalidArguments},
		"ErrTooMany":       {"go_test", map[string]any{"packages": nine}, failure.InvalidArguments},
		"ErrTimeoutZero":   {"go_test", map[string]any{"timeout_seconds": 0}, failure.InvalidArguments},
		"ErrMinTests":      {"cargo_test", map[string]any{"min_tests": -1}, failure.InvalidArguments},
		"ErrRunner":        {"run_tests", map[string]any{"runner": "mocha"}, failure.InvalidArguments},
		"ErrPycachePrefix": {"run_tests", map[string]any{"session_id": e.id, "runner": "pytest", "env": map[string]any{"PYTHONPYCACHEPREFIX": "/tmp/stale"}}, failure.InvalidArguments},
		"ErrCwd":           {"go_test", map[string]any{"cwd": "../x"}, failure.InvalidArguments},
		"ErrExpectation":   {"go_test", map[string]any{"result_expectation": "maybe"}, failure.InvalidArguments},
		"ErrSummaryNoSess": {"validation_summary", map[string]any{}, failure.InvalidArguments},
	} {
		t.Run(name, func(t *testing.T) {
			kerneltest.Fails(t, e.Call(tc.tool, tc.args), tc.want)
		})
	}
	if n := len(e.validations()); n != 0 {
		t.Fatalf("bad input recorded %d validations", n)
	}
}

func TestNodeTAP(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not on PATH")
	}
	e := newEnv(t, map[string]string{"math.test.js": `const test = require('node:test');
const assert = require('node:assert');
test('adds', () => assert.strictEqual(1 + 1, 2));
test('fails', () => assert.strictEqual(1 + 1, 3));
test('skipped', { skip: true }, () => {});
`})
	res := e.Call("run_tests", map[string]any{"session_id": e.id, "runner": "node", "args": []string{"math.test.js"}})
	kerneltest.Fails(t, res, failure.ValidationFailed)
	out := evidence(t, res)
	if out.Parser != "tap/v1" || out.Passed != 1 || out.Failed != 1 || out.Skipped != 1 || !slices.Contains(out.Failures, "fails") {
		t.Fatalf("node: %+v", out)
	}
}

func TestPytest(t *testing.T) {
	if _, err := exec.LookPath("pytest"); err != nil {
		t.Skip("pytest not on PATH (install python3-pytest)")
	}
	e := newEnv(t, map[string]string{"test_calc.py": "def test_ok():\n    assert 1 + 1 == 2\n\ndef test_bad():\n    assert 1 + 1 == 3\n"})
	res := e.Call("run_tests", map[string]any{"session_id": e.id, "runner": "pytest"})
	kerneltest.Fails(t, res, failure.ValidationFailed)
	out := evidence(t, res)
	if out.Parser != "junit_xml/v1" || out.Passed != 1 || out.Failed != 1 || !out.Complete {
		t.Fatalf("pytest: %+v", out)
	}
}

func TestCargo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a crate")
	}
	if _, err := exec.LookPath("cargo"); err != nil {
		t.Skip("cargo not on PATH")
	}
	e := newEnv(t, map[string]string{
		"Cargo.toml": "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
		"src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(1, 1), 2); }\n    #[test]\n    fn breaks() { assert_eq!(super::add(1, 1), 3); }\n}\n",
	})
	res := e.Call("cargo_test", map[string]any{"session_id": e.id, "require_tests": true, "env": map[string]string{"CARGO_TARGET_DIR": filepath.Join(t.TempDir(), "target")}})
	kerneltest.Fails(t, res, failure.ValidationFailed)
	out := evidence(t, res)
	if out.Parser != "cargo_test/v1" || out.Passed != 1 || out.Failed != 1 || !slices.ContainsFunc(out.Failures, func(s string) bool { return strings.HasSuffix(s, "tests::breaks") }) {
		t.Fatalf("cargo_test: %+v", out)
	}
	chk := kerneltest.OK[validate.Output](t, e.Call("cargo_check", map[string]any{"session_id": e.id, "env": map[string]string{"CARGO_TARGET_DIR": filepath.Join(t.TempDir(), "target")}}))
	if chk.Verdict != workflow.VerdictPassed {
		t.Fatalf("cargo_check: %+v", chk)
	}
}

// TestGoTestCache reproduces the finding of issue 24 with a real module
// and real `go test`: a result go replays from its test cache was recorded
// as a fresh run, and a test whose input lives outside the module kept
// passing from the cache after it would fail. The evidence now names the
// cached package (output and ledger); uncached runs the tests
// (-count=1) and finds the failure; a later cached pass resolves nothing.
func TestGoTestCache(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	input := filepath.Join(t.TempDir(), "outside-input.txt")
	setInput := func(s string) {
		t.Helper()
		if err := os.WriteFile(input, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		// Old enough that go's test cache does not refuse a result for a
		// freshly written file it tracks.
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(input, old, old); err != nil {
			t.Fatal(err)
		}
	}
	setInput("ok")
	outsideTest := fmt.Sprintf(`package calc

import (
	"os"
	"testing"
)

func TestOutside(t *testing.T) {
	b, err := os.ReadFile(%q)
	if err != nil || string(b) != "ok" {
		t.Fatalf("input %%q %%v", b, err)
	}
}
`, input)
	e := newEnv(t, map[string]string{"go.mod": goMod, "calc.go": "package calc\n", "outside_test.go": outsideTest})
	run := func(args map[string]any) (kernel.Result, validate.Output) {
		t.Helper()
		args["session_id"] = e.id
		res := e.Call("go_test", args)
		return res, evidence(t, res)
	}
	_, fresh := run(map[string]any{})
	if fresh.Verdict != workflow.VerdictPassed || fresh.CachedTotal != 0 || fresh.CachedPackages != nil {
		t.Fatalf("first run: %+v", fresh)
	}
	_, cached := run(map[string]any{})
	if cached.Verdict != workflow.VerdictPassed || cached.CachedTotal != 1 || !slices.Equal(cached.CachedPackages, []string{"example.com/calc"}) {
		t.Fatalf("second run, from go's cache: %+v", cached)
	}
	// The input changes outside the module: go still replays the pass,
	// and the evidence says so.
	setInput("broken")
	_, stale := run(map[string]any{})
	if stale.Verdict != workflow.VerdictPassed || stale.CachedTotal != 1 {
		t.Fatalf("a cached run after the input changed: %+v", stale)
	}
	res, uncached := run(map[string]any{"uncached": true})
	kerneltest.Fails(t, res, failure.ValidationFailed)
	if uncached.CachedTotal != 0 || !slices.Equal(uncached.Failures, []string{"example.com/calc.TestOutside"}) {
		t.Fatalf("uncached run: %+v", uncached)
	}
	// Go caches no failure: the next plain run replays the old pass, which
	// must not resolve the failure the uncached run proved.
	_, replay := run(map[string]any{})
	if replay.CachedTotal != 1 || len(replay.Resolved) != 0 {
		t.Fatalf("a cached pass after a real failure: %+v", replay)
	}
	vs := e.validations()
	if len(vs) != 5 {
		t.Fatalf("%d validation records, want 5", len(vs))
	}
	for i, want := range []int{0, 1, 1, 0, 1} {
		if v := vs[i]; v.CachedTotal != want || (want == 1) != slices.Equal(v.CachedPackages, []string{"example.com/calc"}) {
			t.Errorf("ledger record %d: cached %v (%d), want %d", i, v.CachedPackages, v.CachedTotal, want)
		}
	}
	sum := kerneltest.OK[validate.SummaryOutput](t, e.Call("validation_summary", map[string]any{"session_id": e.id}))
	if len(sum.Unresolved) != 1 || sum.Unresolved[0].ID != "example.com/calc.TestOutside" {
		t.Fatalf("the cached pass resolved the real failure: %+v", sum.Unresolved)
	}
	kerneltest.Fails(t, e.Call("go_test", map[string]any{"session_id": e.id, "uncached": "yes"}), failure.InvalidArguments)
	if got := len(e.validations()); got != 5 {
		t.Fatalf("a refused call left evidence: %d records", got)
	}
}
