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
// The test runner starts where the project is (its runner's machine for
// a runner's project, its cwd checked there); its output comes back and is
// parsed here, so the result and the evidence are the same wherever it
// ran. pytest writes its report and bytecode in a private directory the
// host makes for the run (runner.Spec.Private); the report comes back
// after the run (runner.Spec.Collect). With an SSH resource selected every
// validation tool fails resource_not_allowed before it starts.
//
// A call succeeds when its verdict is passed or no_tests; a failed verdict
// is validation_failed and an unproven one evidence_gap (or timed_out,
// cancelled), whatever result_expectation declares: the expectation sets
// only expectation.matched and how the ledger classifies the run.
package validate

import (
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workspace"
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
// process, never re-run) and becomes evidence once it is terminal, through
// Evidence, the manager's OnFinished hook.
type Tools struct {
	// Runners serves each call's project: its test runner starts there,
	// and its output comes back here to be parsed.
	Runners  workspace.Runners
	Sessions *workflow.Service
	Jobs     *jobs.Manager
	// Evidence is the OnFinished hook of Jobs (required with Jobs): the
	// tools read what it recorded for a job that ended before its call
	// returned.
	Evidence *Evidence
}

// Register adds the validation tools to reg.
func Register(reg *kernel.Registry, t *Tools) {
	kernel.Register(reg, kernel.Spec[GoTestInput, Output]{
		Runners:     true,
		Name:        "go_test",
		Description: "Run go test -json on 1-8 package patterns and record counts and failing tests as validation evidence.",
		Category:    "validate", Scopes: []auth.Scope{auth.ScopeJobRun}, Mutates: true, Writes: true,
		Session: kernel.SessionOptional, Handler: t.goTest,
	})
	kernel.Register(reg, kernel.Spec[CargoTestInput, Output]{
		Runners:     true,
		Name:        "cargo_test",
		Description: "Run cargo test and record counts and failing tests as validation evidence.",
		Category:    "validate", Scopes: []auth.Scope{auth.ScopeJobRun}, Mutates: true, Writes: true,
		Session: kernel.SessionOptional, Handler: t.cargoTest,
	})
	kernel.Register(reg, kernel.Spec[CargoCheckInput, Output]{
		Runners:     true,
		Name:        "cargo_check",
		Description: "Run cargo check and record whether the code builds.",
		Category:    "validate", Scopes: []auth.Scope{auth.ScopeJobRun}, Mutates: true, Writes: true,
		Session: kernel.SessionOptional, Handler: t.cargoCheck,
	})
	kernel.Register(reg, kernel.Spec[RunTestsInput, Output]{
		Runners:     true,
		Name:        "run_tests",
		Description: "Run pytest, node --test or npm test and record counts and failing tests as validation evidence.",
		Category:    "validate", Scopes: []auth.Scope{auth.ScopeJobRun}, Mutates: true, Writes: true,
		Session: kernel.SessionOptional, Handler: t.runTests,
	})
	kernel.Register(reg, kernel.Spec[SummaryInput, SummaryOutput]{
		Runners:     true,
		Name:        "validation_summary",
		Description: "A session's validation evidence: latest run per scope, unresolved failures and the delta to the previous run. Runs nothing.",
		Category:    "validate", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Session:     kernel.SessionRequired, Handler: t.summary,
	})
}

// Common holds the arguments every validation tool takes.
type Common struct {
	kernel.ProjectRef
	kernel.SessionRef
	Cwd               string            `json:"cwd,omitempty" jsonschema:"default: the project root (not the session's default_cwd)"`
	Env               map[string]string `json:"env,omitempty"`
	TimeoutSeconds    *int              `json:"timeout_seconds,omitempty" jsonschema:"1-86400, default 600"`
	ResultExpectation string            `json:"result_expectation,omitempty" jsonschema:"success (default), failure or observe; sets only expectation.matched"`
	MinTests          *int              `json:"min_tests,omitempty" jsonschema:"fewer proven tests is an evidence gap; unset, zero tests is no_tests"`
	Purpose           string            `json:"purpose,omitempty"`
}

// GoTestInput is the input of go_test.
type GoTestInput struct {
	Common
	Packages []string `json:"packages,omitempty" jsonschema:"package patterns, default ./..."`
	Run      string   `json:"run,omitempty" jsonschema:"go test -run regexp"`
	// Uncached runs every test (go test -count=1) instead of letting go
	// replay a package's earlier result from its test cache.
	Uncached bool `json:"uncached,omitempty" jsonschema:"go test -count=1"`
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
// terminal.
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
	Resolved []string `json:"resolved"`
	// CachedPackages are the packages whose result go test replayed from
	// its test cache instead of running (sorted, at most
	// testreport.MaxCachedPackages); CachedTotal counts them all. Their
	// tests did not run now: run with uncached to run them.
	CachedPackages []string      `json:"cached_packages,omitempty"`
	CachedTotal    int           `json:"cached_total,omitempty"`
	Complete       bool          `json:"complete"`
	Problems       []string      `json:"problems"`
	CountCheck     string        `json:"count_check,omitempty"`
	Expectation    Expectation   `json:"expectation"`
	ExitCode       int           `json:"exit_code"`
	Ending         runner.Ending `json:"ending"`
	DurationMS     int64         `json:"duration_ms"`
	// Output is the tail of the runner's human output (stderr for go test,
	// stdout otherwise), for reading failures.
	Output runner.Output `json:"output"`
	// Sandbox is the sandbox mode in force for the run.
	Sandbox runner.Mode `json:"sandbox,omitempty"`
}
