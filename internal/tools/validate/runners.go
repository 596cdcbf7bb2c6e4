// Per-runner argument building: go test, cargo test, cargo check and
// run_tests (pytest, node --test, npm test), each with its parser and scope.

package validate

import (
	"context"
	"strings"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/testreport"
)

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
	// freshBytecode makes the run compile Python into a directory of its
	// own, created for it and removed after it (pycachePrefixEnv).
	freshBytecode bool
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
	if in.Uncached {
		argv = append(argv, "-count=1")
	}
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
		if _, ok := in.Env[pycachePrefixEnv]; ok {
			return Output{}, failure.New(failure.InvalidArguments,
				"env: %s is the server's for pytest: each run compiles into a fresh directory of its own, so no stale bytecode can run", pycachePrefixEnv)
		}
		r = run{argv: append([]string{"pytest", "-q", "-p", "no:cacheprovider"}, in.Args...), humanStream: "stdout", parseFile: "junit.xml", parser: parserJUnit,
			freshBytecode: true}
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
