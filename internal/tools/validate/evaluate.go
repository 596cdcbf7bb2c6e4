// Evaluation: parsing a finished run's output with internal/testreport and
// deciding its verdict, for runs answered inline and terminal jobs alike.

package validate

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/testreport"
	"github.com/webcodex/webcodex/internal/workflow"
)

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
	out.CachedPackages, out.CachedTotal = slices.Clone(rep.Cached), rep.CachedTotal
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
