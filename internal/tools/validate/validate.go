// Package validate registers the structured validation tools — go_test,
// cargo_test, cargo_check and run_tests (pytest, node --test, npm test) —
// and validation_summary.
//
// A validation tool runs the real test runner, parses its output with
// internal/testreport and leaves a validation_recorded event in every
// session the call is recorded in: counts, failing test identities, the
// parser identity, the opaque scope identity, completeness and the
// expectation outcome — never test output. A run proves a pass only when
// its output proves at least one test ran and none failed; anything it
// cannot prove is an evidence gap, which never resolves an earlier
// failure. Validation tools never inherit a session's execution defaults.
package validate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/testreport"
	"github.com/webcodex/webcodex/internal/workflow"
)

// Bounds of the validation tools.
const (
	// MaxPackages bounds the package patterns of one run.
	MaxPackages = 8
	// MaxArgs bounds run_tests arguments.
	MaxArgs = 32
	// DefaultTimeoutSeconds is the timeout when a call sets none.
	DefaultTimeoutSeconds = 600
	// OutputTailBytes is the runner output kept for the result.
	OutputTailBytes = 8 << 10
	// parseBytes is the stdout kept for parsing (the parser streams it).
	parseBytes = runner.MaxTailBytes
)

// Tools holds the dependencies of the validation tools.
type Tools struct {
	Host     runner.Host
	Sessions *workflow.Service
}

// Register adds the validation tools to reg.
func Register(reg *kernel.Registry, t *Tools) {
	kernel.Register(reg, kernel.Spec[GoTestInput, Output]{
		Name:        "go_test",
		Description: "Run go test -json on 1-8 package patterns and record structured evidence (counts, failing tests) in the session.",
		Category:    "validate", Scopes: []auth.Scope{auth.ScopeJobRun}, Mutates: true, Writes: true,
		Session: kernel.SessionOptional, Handler: t.goTest,
	})
	kernel.Register(reg, kernel.Spec[CargoTestInput, Output]{
		Name:        "cargo_test",
		Description: "Run cargo test and record structured evidence. require_tests or min_tests turn too few proven tests into an evidence gap.",
		Category:    "validate", Scopes: []auth.Scope{auth.ScopeJobRun}, Mutates: true, Writes: true,
		Session: kernel.SessionOptional, Handler: t.cargoTest,
	})
	kernel.Register(reg, kernel.Spec[CargoCheckInput, Output]{
		Name:        "cargo_check",
		Description: "Run cargo check and record whether the code builds.",
		Category:    "validate", Scopes: []auth.Scope{auth.ScopeJobRun}, Mutates: true, Writes: true,
		Session: kernel.SessionOptional, Handler: t.cargoCheck,
	})
	kernel.Register(reg, kernel.Spec[RunTestsInput, Output]{
		Name:        "run_tests",
		Description: "Run pytest (JUnit XML), node --test or npm test (TAP) and record structured evidence.",
		Category:    "validate", Scopes: []auth.Scope{auth.ScopeJobRun}, Mutates: true, Writes: true,
		Session: kernel.SessionOptional, Handler: t.runTests,
	})
	kernel.Register(reg, kernel.Spec[SummaryInput, SummaryOutput]{
		Name:        "validation_summary",
		Description: "Validation evidence of a session: latest run per scope, unresolved failures, and the delta to the previous run when comparable. Runs nothing.",
		Category:    "validate", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Session:     kernel.SessionRequired, Handler: t.summary,
	})
}

// Common holds the arguments every validation tool takes.
type Common struct {
	kernel.ProjectRef
	kernel.SessionRef
	Cwd               string            `json:"cwd,omitempty" jsonschema:"project-relative directory; default the project root (session defaults do not apply)"`
	Env               map[string]string `json:"env,omitempty"`
	TimeoutSeconds    *int              `json:"timeout_seconds,omitempty" jsonschema:"1-86400, default 600"`
	ResultExpectation string            `json:"result_expectation,omitempty" jsonschema:"success (default), failure or observe"`
	MinTests          *int              `json:"min_tests,omitempty" jsonschema:"fewer proven tests is an evidence gap"`
	Purpose           string            `json:"purpose,omitempty"`
}

// GoTestInput is the input of go_test.
type GoTestInput struct {
	Common
	Packages []string `json:"packages,omitempty" jsonschema:"package patterns, default ./..."`
	Run      string   `json:"run,omitempty" jsonschema:"go test -run regexp"`
}

// CargoTestInput is the input of cargo_test.
type CargoTestInput struct {
	Common
	Packages     []string `json:"packages,omitempty" jsonschema:"cargo packages (-p)"`
	Filter       string   `json:"filter,omitempty" jsonschema:"test name filter"`
	Features     []string `json:"features,omitempty"`
	RequireTests bool     `json:"require_tests,omitempty" jsonschema:"at least one test must be proven to run"`
}

// CargoCheckInput is the input of cargo_check.
type CargoCheckInput struct {
	Common
	Packages   []string `json:"packages,omitempty"`
	Features   []string `json:"features,omitempty"`
	AllTargets bool     `json:"all_targets,omitempty"`
}

// RunTestsInput is the input of run_tests.
type RunTestsInput struct {
	Common
	Runner string   `json:"runner" jsonschema:"pytest, node or npm"`
	Args   []string `json:"args,omitempty" jsonschema:"extra arguments for the runner"`
}

// Expectation reports the declared expectation and whether it held.
type Expectation struct {
	Declared string `json:"declared"`
	Matched  bool   `json:"matched"`
}

// Output is the result of a validation tool.
type Output struct {
	Verdict           workflow.Verdict `json:"verdict"`
	Tool              string           `json:"tool"`
	ScopeID           string           `json:"scope_id"`
	Parser            string           `json:"parser,omitempty"`
	Passed            int              `json:"passed"`
	Failed            int              `json:"failed"`
	Skipped           int              `json:"skipped"`
	Failures          []string         `json:"failures"`
	FailuresTotal     int              `json:"failures_total"`
	FailuresTruncated bool             `json:"failures_truncated"`
	// Resolved lists earlier failures of this scope that this run proves
	// passing, in the first session the call is recorded in.
	Resolved    []string      `json:"resolved"`
	Complete    bool          `json:"complete"`
	Problems    []string      `json:"problems"`
	CountCheck  string        `json:"count_check,omitempty"`
	Expectation Expectation   `json:"expectation"`
	ExitCode    int           `json:"exit_code"`
	Ending      runner.Ending `json:"ending"`
	DurationMS  int64         `json:"duration_ms"`
	// Output is the tail of the runner's human output (stderr for go test,
	// stdout otherwise), for reading failures.
	Output runner.Output `json:"output"`
}

// run is one prepared validation.
type run struct {
	tool, cwdRel, cwdAbs string
	argv                 []string
	scope                testreport.Scope
	parse                func(stdout []byte, extra string) (testreport.Report, error)
	parseFile            string // a report file to parse instead of stdout
	humanStream          string // stdout or stderr
	minTests             int
}

func (t *Tools) goTest(ctx context.Context, inv *kernel.Invocation, in GoTestInput) (Output, error) {
	pkgs := in.Packages
	if len(pkgs) == 0 {
		pkgs = []string{"./..."}
	}
	if err := checkList("packages", pkgs, MaxPackages); err != nil {
		return Output{}, err
	}
	argv := []string{"go", "test", "-json"}
	if in.Run != "" {
		argv = append(argv, "-run", in.Run)
	}
	argv = append(argv, pkgs...)
	r := run{tool: "go_test", argv: argv, humanStream: "stderr",
		scope: testreport.Scope{Kind: "go_test", Tool: "go", Packages: pkgs, Filter: in.Run, Purpose: in.Purpose},
		parse: func(b []byte, _ string) (testreport.Report, error) {
			return testreport.ParseGoTestJSON(bytes.NewReader(b))
		}}
	return t.validate(ctx, inv, in.Common, r)
}

func (t *Tools) cargoTest(ctx context.Context, inv *kernel.Invocation, in CargoTestInput) (Output, error) {
	if err := checkList("packages", in.Packages, MaxPackages); err != nil {
		return Output{}, err
	}
	if err := checkList("features", in.Features, MaxPackages); err != nil {
		return Output{}, err
	}
	argv := []string{"cargo", "test", "--color", "never"}
	for _, p := range in.Packages {
		argv = append(argv, "--package", p)
	}
	if len(in.Features) > 0 {
		argv = append(argv, "--features", strings.Join(in.Features, ","))
	}
	if in.Filter != "" {
		if strings.HasPrefix(in.Filter, "-") {
			return Output{}, failure.New(failure.InvalidArguments, "filter must not start with '-'")
		}
		argv = append(argv, in.Filter)
	}
	min := 0
	if in.RequireTests {
		min = 1
	}
	r := run{tool: "cargo_test", argv: argv, humanStream: "stdout", minTests: min,
		scope: testreport.Scope{Kind: "cargo_test", Tool: "cargo", Packages: in.Packages, Filter: in.Filter, Features: in.Features, Purpose: in.Purpose},
		parse: func(b []byte, _ string) (testreport.Report, error) {
			return testreport.ParseCargoTest(bytes.NewReader(b))
		}}
	return t.validate(ctx, inv, in.Common, r)
}

func (t *Tools) cargoCheck(ctx context.Context, inv *kernel.Invocation, in CargoCheckInput) (Output, error) {
	if err := checkList("packages", in.Packages, MaxPackages); err != nil {
		return Output{}, err
	}
	argv := []string{"cargo", "check", "--color", "never"}
	for _, p := range in.Packages {
		argv = append(argv, "--package", p)
	}
	if len(in.Features) > 0 {
		argv = append(argv, "--features", strings.Join(in.Features, ","))
	}
	targets := []string(nil)
	if in.AllTargets {
		argv = append(argv, "--all-targets")
		targets = []string{"all"}
	}
	r := run{tool: "cargo_check", argv: argv, humanStream: "stderr",
		scope: testreport.Scope{Kind: "cargo_check", Tool: "cargo", Packages: in.Packages, Features: in.Features, Targets: targets, Purpose: in.Purpose}}
	return t.validate(ctx, inv, in.Common, r)
}

func (t *Tools) runTests(ctx context.Context, inv *kernel.Invocation, in RunTestsInput) (Output, error) {
	if len(in.Args) > MaxArgs {
		return Output{}, failure.New(failure.InvalidArguments, "at most %d args", MaxArgs)
	}
	var r run
	switch in.Runner {
	case "pytest":
		r = run{argv: append([]string{"pytest", "-q", "-p", "no:cacheprovider"}, in.Args...), humanStream: "stdout", parseFile: "junit.xml",
			parse: func(_ []byte, file string) (testreport.Report, error) {
				f, err := os.Open(file)
				if err != nil {
					return testreport.Report{Parser: testreport.ParserJUnitXML, Problems: []testreport.Problem{testreport.ProblemNoSummary}}, nil
				}
				defer f.Close()
				return testreport.ParseJUnitXML(f)
			}}
	case "node":
		r = run{argv: append([]string{"node", "--test", "--test-reporter=tap"}, in.Args...), humanStream: "stdout",
			parse: func(b []byte, _ string) (testreport.Report, error) { return testreport.ParseTAP(bytes.NewReader(b)) }}
	case "npm":
		r = run{argv: append([]string{"npm", "test", "--silent", "--"}, in.Args...), humanStream: "stdout",
			parse: func(b []byte, _ string) (testreport.Report, error) { return testreport.ParseTAP(bytes.NewReader(b)) }}
	default:
		return Output{}, failure.New(failure.InvalidArguments, "runner must be pytest, node or npm")
	}
	r.tool = "run_tests"
	r.scope = testreport.Scope{Kind: "run_tests", Tool: in.Runner, Packages: in.Args, Purpose: in.Purpose}
	return t.validate(ctx, inv, in.Common, r)
}

// checkList bounds a list of arguments and refuses flag injection.
func checkList(what string, xs []string, max int) error {
	if len(xs) > max {
		return failure.New(failure.InvalidArguments, "at most %d %s", max, what)
	}
	for _, x := range xs {
		if x == "" || strings.HasPrefix(x, "-") || strings.ContainsRune(x, 0) {
			return failure.New(failure.InvalidArguments, "%s must be non-empty and must not start with '-'", what)
		}
	}
	return nil
}

func (t *Tools) validate(ctx context.Context, inv *kernel.Invocation, c Common, r run) (Output, error) {
	exp := c.ResultExpectation
	if exp == "" {
		exp = "success"
	}
	if exp != "success" && exp != "failure" && exp != "observe" {
		return Output{}, failure.New(failure.InvalidArguments, "result_expectation must be success, failure or observe")
	}
	timeout := DefaultTimeoutSeconds
	if c.TimeoutSeconds != nil {
		timeout = *c.TimeoutSeconds
	}
	if timeout < 1 || time.Duration(timeout)*time.Second > runner.MaxTimeout {
		return Output{}, failure.New(failure.InvalidArguments, "timeout_seconds must be 1-%d", int(runner.MaxTimeout/time.Second))
	}
	if c.MinTests != nil {
		if *c.MinTests < 0 || *c.MinTests > testreport.MaxMinTests {
			return Output{}, failure.New(failure.InvalidArguments, "min_tests must be 0-%d", testreport.MaxMinTests)
		}
		r.minTests = max(r.minTests, *c.MinTests)
	}
	if err := runner.ValidateEnv(c.Env); err != nil {
		return Output{}, failure.New(failure.InvalidArguments, "env: %v", err)
	}
	rel := c.Cwd
	if rel == "" {
		rel = "."
	}
	abs, clean, err := inv.Project.Resolve(rel)
	if err != nil {
		return Output{}, err
	}
	if st, serr := os.Stat(abs); serr != nil || !st.IsDir() {
		return Output{}, failure.New(failure.InvalidArguments, "cwd %q is not an existing directory", clean)
	}
	r.scope.Cwd = clean
	scopeID := testreport.ScopeID(r.scope)

	var reportFile string
	if r.parseFile != "" {
		dir, err := os.MkdirTemp("", "webcodex-validate-")
		if err != nil {
			return Output{}, failure.Wrap(failure.NotStarted, err, "cannot create a report directory")
		}
		defer os.RemoveAll(dir)
		reportFile = filepath.Join(dir, r.parseFile)
		r.argv = append(r.argv, "--junitxml="+reportFile)
	}
	var stdout bytes.Buffer
	stdoutCap := &capped{buf: &stdout, limit: 64 << 20}
	inv.Fact("program", r.argv[0])
	res, err := runner.Run(ctx, t.Host, runner.Spec{
		Argv: r.argv, Dir: abs, Env: c.Env, Timeout: time.Duration(timeout) * time.Second,
		TailBytes: OutputTailBytes, Stdout: stdoutCap,
	})
	if err != nil {
		if errors.Is(err, runner.ErrNotStarted) {
			return Output{}, failure.New(failure.NotStarted, "%s: %v", r.tool, err)
		}
		return Output{}, err
	}
	out := Output{Tool: r.tool, ScopeID: scopeID, ExitCode: res.ExitCode, Ending: res.Ending, DurationMS: res.Duration.Milliseconds(),
		Failures: []string{}, Resolved: []string{}, Problems: []string{}, Expectation: Expectation{Declared: exp}}
	if r.humanStream == "stderr" {
		out.Output = res.Stderr
	} else {
		out.Output = res.Stdout
	}
	var rep testreport.Report
	if r.parse != nil {
		rep, err = r.parse(stdout.Bytes(), reportFile)
		if err != nil {
			rep = testreport.Report{Problems: []testreport.Problem{testreport.ProblemCorruptDocument}}
		}
		if stdoutCap.dropped {
			rep.Problems = append(rep.Problems, testreport.ProblemTruncatedOutput)
			rep.Complete = false
		}
	} else {
		// cargo check proves a build, not tests: its exit status is the
		// evidence.
		rep = testreport.Report{Parser: "cargo_check/v1", Complete: res.Ending == runner.Exited}
		if res.ExitCode != 0 {
			rep.Problems = []testreport.Problem{testreport.ProblemBuildFailed}
		}
	}
	if res.Ending != runner.Exited {
		rep.Complete = false
		rep.Problems = append(rep.Problems, testreport.ProblemTruncatedOutput)
	}
	out.Parser, out.Passed, out.Failed, out.Skipped = string(rep.Parser), rep.Passed, rep.Failed, rep.Skipped
	out.Failures = append(out.Failures, rep.Failures...)
	out.FailuresTotal, out.FailuresTruncated, out.Complete = rep.FailuresTotal, rep.FailuresTruncated, rep.Complete
	for _, p := range rep.Problems {
		if !slices.Contains(out.Problems, string(p)) {
			out.Problems = append(out.Problems, string(p))
		}
	}
	slices.Sort(out.Problems)
	count := testreport.CountSatisfied
	if r.minTests > 0 {
		count, _ = testreport.CheckTestCount(rep, r.minTests)
		out.CountCheck = string(count)
	}
	out.Verdict = verdict(r, rep, res, count)
	switch exp {
	case "success":
		out.Expectation.Matched = out.Verdict == workflow.VerdictPassed
	case "failure":
		out.Expectation.Matched = out.Verdict == workflow.VerdictFailed
	case "observe":
		out.Expectation.Matched = out.Verdict != workflow.VerdictEvidenceGap
	}
	if res := t.record(ctx, inv, r, rep, out, exp); res != nil {
		out.Resolved = res
	}
	inv.Fact("verdict", string(out.Verdict))
	inv.Fact("passed", strconv.Itoa(out.Passed))
	inv.Fact("failed", strconv.Itoa(out.Failed))
	if out.Expectation.Matched {
		return out, nil
	}
	kind := failure.ValidationFailed
	msg := fmt.Sprintf("%d failed, %d passed", out.Failed, out.Passed)
	switch {
	case res.Ending == runner.TimedOut:
		kind, msg = failure.TimedOut, fmt.Sprintf("timed out after %ds", timeout)
	case res.Ending == runner.Cancelled:
		kind, msg = failure.Cancelled, "cancelled"
	case out.Verdict == workflow.VerdictEvidenceGap:
		kind, msg = failure.EvidenceGap, "the output does not prove the result: "+strings.Join(out.Problems, ", ")
		if out.CountCheck != "" && out.CountCheck != string(testreport.CountSatisfied) {
			msg = "fewer tests than required were proven to run (" + out.CountCheck + ")"
		}
	case out.Verdict == workflow.VerdictPassed:
		msg = "the tests passed, but result_expectation was " + exp
	}
	return Output{}, failure.New(kind, "%s", msg).WithDetail("validation", out).WithDetail("state_changed", true)
}

// verdict decides what a run proves.
func verdict(r run, rep testreport.Report, res runner.Result, count testreport.CountCheck) workflow.Verdict {
	if r.parse == nil { // cargo check
		switch {
		case res.Ending == runner.Exited && res.ExitCode == 0:
			return workflow.VerdictPassed
		case res.Ending == runner.Exited:
			return workflow.VerdictFailed
		}
		return workflow.VerdictEvidenceGap
	}
	switch {
	case rep.Failed > 0 || slices.Contains(rep.Problems, testreport.ProblemBuildFailed):
		return workflow.VerdictFailed
	case rep.Complete && rep.Executed() > 0 && count == testreport.CountSatisfied && res.ExitCode == 0:
		return workflow.VerdictPassed
	}
	return workflow.VerdictEvidenceGap
}

// record attaches the evidence to every session the call is recorded in,
// with the earlier failures of this scope that this run proves passing in
// that session, and returns those of the first session.
func (t *Tools) record(ctx context.Context, inv *kernel.Invocation, r run, rep testreport.Report, out Output, exp string) (first []string) {
	passing := map[string]bool{}
	if exp == "success" {
		for _, c := range rep.Cases {
			if c.Outcome == testreport.Passed {
				passing[c.ID] = true
			}
		}
	}
	for i, sid := range inv.RecordedIn() {
		var resolved []string
		if len(passing) > 0 && t.Sessions != nil {
			evs, err := t.Sessions.Store().Events(ctx, sid, 0)
			if err == nil {
				for id := range workflow.UnresolvedIn(workflow.Validations(evs), out.ScopeID) {
					if passing[id] {
						resolved = append(resolved, id)
					}
				}
			}
			slices.Sort(resolved)
		}
		if i == 0 {
			first = resolved
		}
		pk := r.scope.Packages
		inv.Attach(sid, workflow.Event{Kind: workflow.EventValidationRecorded, Tool: r.tool, Validation: &workflow.Validation{
			Tool: r.tool, ScopeID: out.ScopeID, Packages: pk, Filter: r.scope.Filter, Parser: out.Parser,
			Passed: out.Passed, Failed: out.Failed, Skipped: out.Skipped, Failures: out.Failures,
			FailuresTotal: out.FailuresTotal, FailuresTruncated: out.FailuresTruncated, Resolved: resolved,
			Complete: out.Complete, Problems: out.Problems, CountCheck: out.CountCheck, Verdict: out.Verdict,
			Expectation: exp, ExpectationMatched: out.Expectation.Matched, ExitCode: out.ExitCode, DurationMS: out.DurationMS,
		}})
	}
	return first
}

// capped is a writer that keeps at most limit bytes and remembers whether
// it dropped any.
type capped struct {
	buf     *bytes.Buffer
	limit   int
	dropped bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.limit - c.buf.Len()
	if room <= 0 {
		c.dropped = c.dropped || len(p) > 0
		return len(p), nil
	}
	if len(p) > room {
		c.buf.Write(p[:room])
		c.dropped = true
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

// SummaryInput is the input of validation_summary.
type SummaryInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
}

// SummaryOutput is the result of validation_summary.
type SummaryOutput struct {
	SessionID string `json:"session_id"`
	workflow.ValidationState
	// EvidenceComplete is false when the session's ledger dropped events,
	// so older validation evidence may be missing.
	EvidenceComplete bool `json:"evidence_complete"`
}

func (t *Tools) summary(ctx context.Context, inv *kernel.Invocation, in SummaryInput) (SummaryOutput, error) {
	sess, err := t.Sessions.Get(ctx, in.SessionID)
	if err != nil {
		return SummaryOutput{}, err
	}
	evs, err := t.Sessions.Store().Events(ctx, in.SessionID, 0)
	if err != nil {
		return SummaryOutput{}, err
	}
	return SummaryOutput{SessionID: sess.ID, ValidationState: workflow.SummarizeValidation(evs), EvidenceComplete: !sess.RetentionTruncated}, nil
}
