// Package validate registers the structured validation tools — go_test,
// cargo_test, cargo_check and run_tests (pytest, node --test, npm test) —
// and validation_summary.
//
// A validation tool runs the real test runner, parses its output with
// internal/testreport and leaves a validation_recorded event in every
// session the call is recorded in: counts, failing test identities, the
// parser identity, the opaque scope identity, completeness and the
// expectation outcome — never test output. A run proves a pass only when
// its output proves at least one test ran and none failed; a runner that
// exits 0 and proves that no test ran (no min_tests asked) is no_tests;
// anything else it cannot prove is an evidence gap. Neither resolves an
// earlier failure. Validation tools never inherit a session's execution
// defaults.
//
// A call succeeds when its verdict is passed or no_tests; a failed verdict
// is validation_failed and an unproven one evidence_gap (or timed_out,
// cancelled), whatever result_expectation declares: the expectation sets
// only expectation.matched and how the ledger classifies the run.
package validate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/command"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
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

// Tools holds the dependencies of the validation tools. With a job
// manager (Jobs), every validation run is a supervised job: one still
// going after the sync grace continues in the background (the same
// process, never re-run) and becomes evidence once it is terminal and
// observed (see Reconcile).
type Tools struct {
	Host     runner.Host
	Sessions *workflow.Service
	Jobs     *jobs.Manager

	// mu serializes terminal reconciliation in this runtime, from the
	// candidate snapshot through the marker/event commit, so that an older
	// snapshot never evicts a marker established from a newer one.
	mu sync.Mutex
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
	ResultExpectation string            `json:"result_expectation,omitempty" jsonschema:"success (default), failure or observe; sets expectation.matched, never the result"`
	MinTests          *int              `json:"min_tests,omitempty" jsonschema:"fewer proven tests is an evidence gap; omitted, a run proving zero tests succeeds with verdict no_tests"`
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

// Expectation reports the declared expectation and whether it held. It
// is reported beside the result and never changes it.
type Expectation struct {
	Declared string `json:"declared"`
	Matched  bool   `json:"matched"`
}

// Output is the result of a validation tool. After a handoff (the run
// continues as a background job) State is running or queued, JobID names
// the job and Verdict is empty: the evidence is recorded once the job is
// terminal and observed.
type Output struct {
	State             jobs.State       `json:"state,omitempty"`
	JobID             string           `json:"job_id,omitempty"`
	Hint              string           `json:"hint,omitempty"`
	Verdict           workflow.Verdict `json:"verdict,omitempty"`
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

// Parsers of validation output, by the name stored on a job.
const (
	parserGoTest     = "go_test_json"
	parserCargoTest  = "cargo_test"
	parserCargoCheck = "cargo_check" // exit status only
	parserJUnit      = "junit_xml"   // the report file
	parserTAP        = "tap"
)

// run is one prepared validation.
type run struct {
	tool        string
	argv        []string
	scope       testreport.Scope
	parser      string
	parseFile   string // a report file to parse instead of stdout
	humanStream string // stdout or stderr
	minTests    int
}

// parse parses a run's evidence: stdout, or the report file.
func parse(parser string, stdout io.Reader, reportFile string) (testreport.Report, error) {
	switch parser {
	case parserGoTest:
		return testreport.ParseGoTestJSON(stdout)
	case parserCargoTest:
		return testreport.ParseCargoTest(stdout)
	case parserTAP:
		return testreport.ParseTAP(stdout)
	case parserJUnit:
		f, err := os.Open(reportFile)
		if reportFile == "" || err != nil {
			return testreport.Report{Parser: testreport.ParserJUnitXML, Problems: []testreport.Problem{testreport.ProblemNoSummary}}, nil
		}
		defer f.Close()
		return testreport.ParseJUnitXML(io.LimitReader(f, jobs.MaxOutputFileBytes))
	}
	return testreport.Report{}, fmt.Errorf("unknown parser %q", parser)
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
	r := run{tool: "go_test", argv: argv, humanStream: "stderr", parser: parserGoTest,
		scope: testreport.Scope{Kind: "go_test", Tool: "go", Packages: pkgs, Filter: in.Run, Purpose: in.Purpose}}
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
	r := run{tool: "cargo_test", argv: argv, humanStream: "stdout", minTests: min, parser: parserCargoTest,
		scope: testreport.Scope{Kind: "cargo_test", Tool: "cargo", Packages: in.Packages, Filter: in.Filter, Features: in.Features, Purpose: in.Purpose}}
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
	r := run{tool: "cargo_check", argv: argv, humanStream: "stderr", parser: parserCargoCheck,
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
		r = run{argv: append([]string{"pytest", "-q", "-p", "no:cacheprovider"}, in.Args...), humanStream: "stdout", parseFile: "junit.xml", parser: parserJUnit}
	case "node":
		r = run{argv: append([]string{"node", "--test", "--test-reporter=tap"}, in.Args...), humanStream: "stdout", parser: parserTAP}
	case "npm":
		r = run{argv: append([]string{"npm", "test", "--silent", "--"}, in.Args...), humanStream: "stdout", parser: parserTAP}
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
	e, err := command.ValidateExpectation(command.Expectation(c.ResultExpectation))
	if err != nil {
		return Output{}, err
	}
	exp := string(e)
	timeout, err := command.TimeoutSeconds(c.TimeoutSeconds, DefaultTimeoutSeconds)
	if err != nil {
		return Output{}, err
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
	meta := jobs.ValidationMeta{
		Tool: r.tool, ScopeID: testreport.ScopeID(r.scope), Packages: r.scope.Packages, Filter: r.scope.Filter,
		Parser: r.parser, HumanStream: jobs.Stream(r.humanStream), Expectation: exp, MinTests: r.minTests,
		Sessions: slices.Clone(inv.RecordedIn()),
	}
	spec := runner.Spec{Argv: r.argv, Dir: abs, Env: c.Env, Timeout: time.Duration(timeout) * time.Second, TailBytes: OutputTailBytes}
	inv.Fact("program", r.argv[0])

	var (
		ex      execution
		out     Output
		rep     testreport.Report
		jobMeta *jobs.Job // a job that became background: evidence goes through its marker
	)
	if t.Jobs == nil {
		var reportFile string
		if r.parseFile != "" {
			dir, err := os.MkdirTemp("", "webcodex-validate-")
			if err != nil {
				return Output{}, failure.Wrap(failure.NotStarted, err, "cannot create a report directory")
			}
			defer os.RemoveAll(dir)
			reportFile = filepath.Join(dir, r.parseFile)
			spec.Argv = append(slices.Clone(spec.Argv), "--junitxml="+reportFile)
		}
		var stdout bytes.Buffer
		stdoutCap := &capped{buf: &stdout, limit: jobs.MaxOutputFileBytes}
		spec.Stdout = stdoutCap
		res, err := runner.Run(ctx, t.Host, spec)
		if err != nil {
			if errors.Is(err, runner.ErrNotStarted) {
				return Output{}, failure.New(failure.NotStarted, "%s: %v", r.tool, err)
			}
			return Output{}, err
		}
		ex = execution{ending: res.Ending, exitCode: res.ExitCode, duration: res.Duration,
			stdout: bytes.NewReader(stdout.Bytes()), dropped: stdoutCap.dropped, reportFile: reportFile}
		rep, out = evaluate(meta, ex)
		out.Output = humanTail(res, r.humanStream)
	} else {
		id := jobs.NewID()
		var reportFile string
		if r.parseFile != "" {
			// The report lives in the job's own directory, so a run
			// handed off to the background can still be parsed later.
			meta.ReportFile = r.parseFile
			reportFile = filepath.Join(t.Jobs.JobDir(id), r.parseFile)
			spec.Argv = append(slices.Clone(spec.Argv), "--junitxml="+reportFile)
		}
		ss := jobs.StartSpec{
			ID: id, Project: inv.Project.ID, Principal: inv.Principal.AuthorityFingerprint(), Tool: inv.Tool,
			Cwd: clean, Expectation: jobs.Expectation(exp), Run: spec, Validation: &meta, KeepOutput: true,
		}
		if inv.Session != nil {
			ss.SessionID = inv.Session.ID
		}
		job, res, err := t.Jobs.RunSync(ctx, ss, 0)
		if job.ID != "" && (res == nil || job.Background) {
			inv.Fact("job_id", job.ID)
			inv.Fact("job_state", string(job.State))
		}
		if err != nil {
			return Output{}, err
		}
		if res == nil {
			inv.Fact("verdict", "pending")
			inv.Fact("expectation", exp)
			return Output{State: job.State, JobID: job.ID, Hint: HandoffHint, Tool: r.tool, ScopeID: meta.ScopeID,
				Failures: []string{}, Resolved: []string{}, Problems: []string{}, ExitCode: -1,
				Expectation: Expectation{Declared: exp}}, nil
		}
		if job.Background {
			jobMeta = &job
		} else {
			defer t.Jobs.DiscardOutput(context.WithoutCancel(ctx), job.ID)
		}
		rep, out = evaluateJob(t.Jobs, job, res)
		out.Output = humanTail(*res, r.humanStream)
		out.State = job.State
		if job.Background {
			out.JobID = job.ID
		}
		ex.ending = res.Ending
	}
	if jobMeta != nil {
		// Handed off, then finished before the call could return: the
		// evidence is materialized once, under the job's marker.
		if res := t.materialize(ctx, *jobMeta, meta.Sessions); res != nil {
			out.Resolved = res
		}
	} else if res := t.record(ctx, inv, meta, rep, out); res != nil {
		out.Resolved = res
	}
	inv.Fact("verdict", string(out.Verdict))
	inv.Fact("passed", strconv.Itoa(out.Passed))
	inv.Fact("failed", strconv.Itoa(out.Failed))
	inv.Fact("expectation", exp)
	inv.Fact("expectation_matched", strconv.FormatBool(out.Expectation.Matched))
	// The result is the validator's real outcome, whatever was expected.
	if out.Verdict == workflow.VerdictPassed || out.Verdict == workflow.VerdictNoTests {
		return out, nil
	}
	kind := failure.ValidationFailed
	msg := fmt.Sprintf("%d failed, %d passed", out.Failed, out.Passed)
	switch {
	case ex.ending == runner.TimedOut:
		kind, msg = failure.TimedOut, fmt.Sprintf("timed out after %ds", timeout)
	case ex.ending == runner.Cancelled:
		kind, msg = failure.Cancelled, "cancelled"
	case out.Verdict == workflow.VerdictEvidenceGap:
		kind, msg = failure.EvidenceGap, "the output does not prove the result: "+strings.Join(out.Problems, ", ")
		if out.CountCheck != "" && out.CountCheck != string(testreport.CountSatisfied) {
			msg = "fewer tests than required were proven to run (" + out.CountCheck + ")"
		}
	}
	if out.Expectation.Matched {
		msg += fmt.Sprintf(" (as declared: the %s expectation was met)", exp)
	}
	return Output{}, failure.New(kind, "%s", msg).WithDetail("validation", out).WithDetail("state_changed", true)
}

// HandoffHint is what a validation handed off to the background tells its
// caller.
const HandoffHint = "still running: it continues as a background job (not re-run). Its evidence is recorded in the session once it is terminal " +
	"and observed: call observe_jobs with this job_id, or validation_summary."

func humanTail(res runner.Result, stream string) runner.Output {
	if stream == "stderr" {
		return res.Stderr
	}
	return res.Stdout
}

// execution is what a finished validation run left to evaluate.
type execution struct {
	ending     runner.Ending
	exitCode   int
	duration   time.Duration
	stdout     io.Reader // nil when nothing is left to read
	dropped    bool      // stdout was cut at its cap
	reportFile string
}

// evaluate turns a finished run into its report and result — the one
// computation shared by runs answered inline and jobs that finished in the
// background.
func evaluate(m jobs.ValidationMeta, ex execution) (testreport.Report, Output) {
	out := Output{Tool: m.Tool, ScopeID: m.ScopeID, ExitCode: ex.exitCode, Ending: ex.ending, DurationMS: ex.duration.Milliseconds(),
		Failures: []string{}, Resolved: []string{}, Problems: []string{}, Expectation: Expectation{Declared: m.Expectation}}
	var rep testreport.Report
	if m.Parser != parserCargoCheck {
		stdout := ex.stdout
		if stdout == nil {
			stdout = strings.NewReader("")
		}
		var err error
		rep, err = parse(m.Parser, stdout, ex.reportFile)
		if err != nil {
			rep = testreport.Report{Problems: []testreport.Problem{testreport.ProblemCorruptDocument}}
		}
		if ex.dropped {
			rep.Problems = append(rep.Problems, testreport.ProblemTruncatedOutput)
			rep.Complete = false
		}
	} else {
		// cargo check proves a build, not tests: its exit status is the
		// evidence.
		rep = testreport.Report{Parser: "cargo_check/v1", Complete: ex.ending == runner.Exited}
		if ex.exitCode != 0 {
			rep.Problems = []testreport.Problem{testreport.ProblemBuildFailed}
		}
	}
	if ex.ending != runner.Exited {
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
	if m.MinTests > 0 {
		count, _ = testreport.CheckTestCount(rep, m.MinTests)
		out.CountCheck = string(count)
	}
	out.Verdict = verdict(m.Parser, rep, ex, count)
	// A proven verdict is a completed result; passed and no_tests are the
	// accepted ones.
	completed := out.Verdict != workflow.VerdictEvidenceGap
	accepted := out.Verdict == workflow.VerdictPassed || out.Verdict == workflow.VerdictNoTests
	out.Expectation.Matched = jobs.Expectation(m.Expectation).Met(completed, accepted)
	return rep, out
}

// evaluateJob evaluates a terminal validation job from its output files
// (bounded by the job's file cap). res is the runner's result when this
// process supervised the run, else nil. A job that did not run to its end
// (lost, stopped, timed out, cancelled) is an evidence gap — never a pass.
func evaluateJob(m *jobs.Manager, j jobs.Job, res *runner.Result) (testreport.Report, Output) {
	meta := *j.Validation
	ex := execution{ending: j.Ending, exitCode: -1, dropped: j.StdoutDropped > 0}
	if j.ExitCode != nil {
		ex.exitCode = *j.ExitCode
	}
	if !j.StartedAt.IsZero() && !j.FinishedAt.IsZero() {
		ex.duration = j.FinishedAt.Sub(j.StartedAt)
	}
	if res != nil {
		ex.ending, ex.exitCode, ex.duration = res.Ending, res.ExitCode, res.Duration
	}
	if meta.ReportFile != "" {
		ex.reportFile = filepath.Join(m.JobDir(j.ID), meta.ReportFile)
	}
	f, err := os.Open(m.OutputPath(j.ID, jobs.Stdout))
	if err == nil {
		defer f.Close()
		ex.stdout = io.LimitReader(f, jobs.MaxOutputFileBytes)
	} else {
		ex.dropped = true // the output is gone: nothing can be proven
	}
	ended := j.State == jobs.Succeeded || j.State == jobs.Failed
	if !ended && ex.ending == runner.Exited {
		ex.ending = ""
	}
	rep, out := evaluate(meta, ex)
	if !ended {
		out.Complete = false
		if out.Verdict != workflow.VerdictEvidenceGap {
			out.Verdict = workflow.VerdictEvidenceGap
		}
		out.Expectation.Matched = false
		if p := "job_" + string(j.State); !slices.Contains(out.Problems, p) && j.State != "" {
			out.Problems = append(out.Problems, p)
			slices.Sort(out.Problems)
		}
	}
	return rep, out
}

// verdict decides what a run proves.
func verdict(parser string, rep testreport.Report, ex execution, count testreport.CountCheck) workflow.Verdict {
	if parser == parserCargoCheck {
		switch {
		case ex.ending == runner.Exited && ex.exitCode == 0:
			return workflow.VerdictPassed
		case ex.ending == runner.Exited:
			return workflow.VerdictFailed
		}
		return workflow.VerdictEvidenceGap
	}
	switch {
	case rep.Failed > 0 || slices.Contains(rep.Problems, testreport.ProblemBuildFailed):
		return workflow.VerdictFailed
	case rep.Complete && rep.Executed() > 0 && count == testreport.CountSatisfied && ex.exitCode == 0:
		return workflow.VerdictPassed
	case ex.ending == runner.Exited && ex.exitCode == 0 && count == testreport.CountSatisfied &&
		slices.Equal(rep.Problems, []testreport.Problem{testreport.ProblemNoTestsFound}):
		// A proven zero with no minimum asked (a minimum makes it
		// below_minimum): the run succeeded and proves no test ran.
		return workflow.VerdictNoTests
	}
	return workflow.VerdictEvidenceGap
}

// evidence builds the validation record of a run for session sid, with the
// earlier failures of its scope there that this run proves passing.
func (t *Tools) evidence(ctx context.Context, sid string, m jobs.ValidationMeta, rep testreport.Report, out Output) *workflow.Validation {
	var resolved []string
	if m.Expectation == "success" && out.Verdict.Resolves() && t.Sessions != nil {
		passing := map[string]bool{}
		for _, c := range rep.Cases {
			if c.Outcome == testreport.Passed {
				passing[c.ID] = true
			}
		}
		if len(passing) > 0 {
			if evs, err := t.Sessions.Store().Events(ctx, sid, 0); err == nil {
				for id := range workflow.UnresolvedIn(workflow.Validations(evs), out.ScopeID) {
					if passing[id] {
						resolved = append(resolved, id)
					}
				}
			}
			slices.Sort(resolved)
		}
	}
	return &workflow.Validation{
		Tool: m.Tool, ScopeID: out.ScopeID, Packages: slices.Clone(m.Packages), Filter: m.Filter, Parser: out.Parser,
		Passed: out.Passed, Failed: out.Failed, Skipped: out.Skipped, Failures: slices.Clone(out.Failures),
		FailuresTotal: out.FailuresTotal, FailuresTruncated: out.FailuresTruncated, Resolved: resolved,
		Complete: out.Complete, Problems: slices.Clone(out.Problems), CountCheck: out.CountCheck, Verdict: out.Verdict,
		Expectation: m.Expectation, ExpectationMatched: out.Expectation.Matched, ExitCode: out.ExitCode, DurationMS: out.DurationMS,
	}
}

// record attaches the evidence of a run answered inline to every session
// the call is recorded in and returns the resolved failures of the first.
func (t *Tools) record(ctx context.Context, inv *kernel.Invocation, m jobs.ValidationMeta, rep testreport.Report, out Output) (first []string) {
	for i, sid := range inv.RecordedIn() {
		v := t.evidence(ctx, sid, m, rep, out)
		if i == 0 {
			first = v.Resolved
		}
		inv.Attach(sid, workflow.Event{Kind: workflow.EventValidationRecorded, Tool: m.Tool, Validation: v})
	}
	return first
}

// ObserveTerminal materializes the evidence of the terminal background
// validation jobs among js in the sessions their calls were recorded in
// (observe_jobs, list_jobs and read_job_tail call it with what they
// return). Best effort: a failure leaves the evidence for a later observer.
func (t *Tools) ObserveTerminal(ctx context.Context, js []jobs.Job) {
	for _, j := range js {
		if !j.State.Terminal() || !j.Background || j.Validation == nil {
			continue
		}
		t.materialize(ctx, j, j.Validation.Sessions)
	}
}

// materialize records the evidence of terminal background job j in each
// of sids, at most once each, and returns the resolved failures of the
// first.
func (t *Tools) materialize(ctx context.Context, j jobs.Job, sids []string) (first []string) {
	for i, sid := range sids {
		res, _ := t.Reconcile(ctx, sid, j.ID)
		if i == 0 {
			first = res
		}
	}
	return first
}

// Reconcile materializes, in session sid, one validation_recorded event
// per terminal background validation job of its candidate snapshot (only
// job only, when set) that has not become evidence there yet, and returns
// the resolved failures of job only.
//
// The snapshot is the newest workflow.MaxJobMarkers terminal background
// jobs whose validation metadata names sid. A job becomes evidence under
// its exact id in the session's JobMarkers: the marker check, the marker
// insertion and the event append are one store mutation, so concurrent
// observers append once and a restart does not append again. Eviction
// (only when the set is full) removes only markers absent from the
// current snapshot, which this runtime acquires and commits under one
// lock. The event's time is the job's finished_at; nothing is re-run and
// no output is stored.
func (t *Tools) Reconcile(ctx context.Context, sid, only string) ([]string, error) {
	if t.Jobs == nil || t.Sessions == nil {
		return nil, nil
	}
	if only != "" {
		// The common case costs one header read: already evidence.
		sess, err := t.Sessions.Get(ctx, sid)
		if err != nil {
			return nil, err
		}
		if !sess.Mutable() || slices.Contains(sess.JobMarkers, only) {
			return nil, nil
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cands, err := t.Jobs.ValidationCandidates(ctx, sid, workflow.MaxJobMarkers)
	if err != nil {
		return nil, err
	}
	sess, err := t.Sessions.Get(ctx, sid)
	if err != nil {
		return nil, err
	}
	snapshot := make(map[string]bool, len(cands))
	for _, j := range cands {
		snapshot[j.ID] = true
	}
	var resolved []string
	for i := len(cands) - 1; i >= 0; i-- { // oldest first
		j := cands[i]
		if (only != "" && j.ID != only) || slices.Contains(sess.JobMarkers, j.ID) {
			continue
		}
		if !sess.Mutable() {
			return nil, nil
		}
		rep, out := evaluateJob(t.Jobs, j, nil)
		v := t.evidence(ctx, sid, *j.Validation, rep, out)
		v.JobID = j.ID
		ev := workflow.Event{Kind: workflow.EventValidationRecorded, Tool: v.Tool, At: j.FinishedAt, Synthetic: !j.FinishedAt.IsZero(), Validation: v}
		skipped := false
		updated, _, err := t.Sessions.Store().Update(ctx, sid, func(s *workflow.Session) ([]workflow.Event, error) {
			if !s.Mutable() || slices.Contains(s.JobMarkers, j.ID) {
				skipped = true
				return nil, errAlreadyEvidence
			}
			s.JobMarkers = addMarker(s.JobMarkers, j.ID, snapshot)
			return []workflow.Event{ev}, nil
		})
		if skipped {
			if sess, err = t.Sessions.Get(ctx, sid); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		sess = updated
		if j.ID == only {
			resolved = v.Resolved
		}
	}
	return resolved, nil
}

var errAlreadyEvidence = failure.New(failure.Conflict, "the job is already evidence in this session")

// addMarker returns markers with id appended, bounded to
// workflow.MaxJobMarkers: when full, only markers of jobs absent from the
// current candidate snapshot are evicted.
func addMarker(markers []string, id string, snapshot map[string]bool) []string {
	out := slices.Clone(markers)
	if len(out) >= workflow.MaxJobMarkers {
		out = slices.DeleteFunc(out, func(m string) bool { return !snapshot[m] })
	}
	if len(out) >= workflow.MaxJobMarkers {
		// Unreachable while the snapshot holds at most MaxJobMarkers jobs
		// and id is one of them; keeps the bound regardless.
		out = out[len(out)-workflow.MaxJobMarkers+1:]
	}
	return append(out, id)
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
	// Terminal background validations become evidence before the
	// projection (best effort: a failure leaves them for a later read).
	t.Reconcile(ctx, in.SessionID, "")
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
