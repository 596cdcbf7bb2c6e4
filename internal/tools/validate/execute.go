// Running a validation: checking the common arguments, then running it
// directly or as a supervised job (with the handoff to the background), and
// turning its verdict into the call's result.

package validate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/command"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/testreport"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workspace"
)

func (t *Tools) validate(ctx context.Context, inv *kernel.Invocation, c Common, r run) (Output, error) {
	if err := command.RefuseResource(inv, r.tool); err != nil {
		return Output{}, err
	}
	p, err := t.prepare(ctx, inv, c, r)
	if err != nil {
		return Output{}, err
	}
	var (
		rn      ran
		cleanup func()
	)
	if t.Jobs == nil {
		rn, cleanup, err = t.runDirect(ctx, p)
	} else {
		rn, cleanup, err = t.runJob(ctx, inv, p)
	}
	if cleanup != nil {
		defer cleanup()
	}
	if err != nil {
		return Output{}, err
	}
	if rn.pending {
		return rn.out, nil
	}
	out := rn.out
	if rn.background != nil {
		// Handed off, then finished before the call could return: the
		// jobs hook recorded the evidence once, under the job's marker,
		// before RunSync returned.
		if len(p.meta.Sessions) > 0 && t.Evidence != nil {
			if res := t.Evidence.Resolved(ctx, p.meta.Sessions[0], rn.background.ID); res != nil {
				out.Resolved = res
			}
		}
	} else if res := t.record(ctx, inv, p.meta, rn.rep, out); res != nil {
		out.Resolved = res
	}
	out.Sandbox = p.sb
	inv.Fact("verdict", string(out.Verdict))
	inv.Fact("passed", strconv.Itoa(out.Passed))
	inv.Fact("failed", strconv.Itoa(out.Failed))
	inv.Fact("expectation", p.exp)
	inv.Fact("expectation_matched", strconv.FormatBool(out.Expectation.Matched))
	return callResult(out, rn.ex.ending, p.exp, p.timeout)
}

// prepared is a validation checked and ready to run: r completed from the
// common arguments, the declared expectation, the timeout in seconds, the
// project-relative working directory, the job's validation metadata, the
// process spec, the host that runs it and the sandbox mode in force.
type prepared struct {
	r       run
	host    runner.Host
	exp     string
	timeout int
	clean   string
	meta    jobs.ValidationMeta
	spec    runner.Spec
	sb      runner.Mode
}

// prepare checks the common arguments (expectation, timeout, min_tests,
// env, an existing cwd inside the project) and records the sandbox and
// program facts. The cwd is checked where the project's files are
// (cwdOp).
func (t *Tools) prepare(ctx context.Context, inv *kernel.Invocation, c Common, r run) (*prepared, error) {
	host := t.Runners.For(inv.Project)
	e, err := command.ValidateExpectation(command.Expectation(c.ResultExpectation))
	if err != nil {
		return nil, err
	}
	exp := string(e)
	timeout, err := command.TimeoutSeconds(c.TimeoutSeconds, DefaultTimeoutSeconds)
	if err != nil {
		return nil, err
	}
	if c.MinTests != nil {
		if *c.MinTests < 0 || *c.MinTests > testreport.MaxMinTests {
			return nil, failure.New(failure.InvalidArguments, "min_tests must be 0-%d", testreport.MaxMinTests)
		}
		r.minTests = max(r.minTests, *c.MinTests)
	}
	if err := runner.ValidateEnv(c.Env); err != nil {
		return nil, failure.New(failure.InvalidArguments, "env: %v", err)
	}
	rel := c.Cwd
	if rel == "" {
		rel = "."
	}
	abs, clean, err := inv.Project.Resolve(rel)
	if err != nil {
		return nil, err
	}
	if _, err := workspace.Do(ctx, host, inv.Project, cwdOp, cwdIn{Cwd: clean}); err != nil {
		return nil, err
	}
	r.scope.Cwd = clean
	meta := jobs.ValidationMeta{
		Tool: r.tool, ScopeID: testreport.ScopeID(r.scope), Packages: r.scope.Packages, Filter: r.scope.Filter,
		Parser: r.parser, HumanStream: jobs.Stream(r.humanStream), Expectation: exp, MinTests: r.minTests,
		Sessions: slices.Clone(inv.RecordedIn()),
	}
	spec := runner.Spec{Argv: r.argv, Dir: abs, Env: c.Env, Timeout: time.Duration(timeout) * time.Second, TailBytes: OutputTailBytes,
		Sandbox: command.Sandbox(inv)}
	sb := runner.InForce(host, spec.Sandbox)
	if sb != "" {
		inv.Fact("sandbox", string(sb))
	}
	inv.Fact("program", r.argv[0])
	return &prepared{r: r, host: host, exp: exp, timeout: timeout, clean: clean, meta: meta, spec: spec, sb: sb}, nil
}

// ran is what running a validation gave: its execution, report and
// output; the job when it was handed off to the background and finished
// before the call returned (its evidence goes through its marker); and
// pending when it is still running in the background, out then being the
// call's whole result.
type ran struct {
	ex         execution
	rep        testreport.Report
	out        Output
	background *jobs.Job
	pending    bool
}

// runDirect runs the validation in the call (no job manager) and
// evaluates it. The returned cleanup (nil when none), which the caller
// runs when it is done, removes the run's collected report.
func (t *Tools) runDirect(ctx context.Context, p *prepared) (ran, func(), error) {
	r, spec := p.r, &p.spec
	var cleanup func()
	var reportFile string
	if r.parseFile != "" {
		dir, err := os.MkdirTemp("", "webcodex-validate-")
		if err != nil {
			return ran{}, nil, failure.Wrap(failure.NotStarted, err, "cannot create a report directory")
		}
		cleanup = func() { os.RemoveAll(dir) }
		reportFile = filepath.Join(dir, r.parseFile)
	}
	ownDirectory(r, spec, reportFile)
	var stdout bytes.Buffer
	stdoutCap := &capped{buf: &stdout, limit: jobs.MaxOutputFileBytes}
	spec.Stdout = stdoutCap
	res, err := runner.Run(ctx, p.host, *spec)
	if err != nil {
		if errors.Is(err, runner.ErrNotStarted) {
			return ran{}, cleanup, failure.New(failure.NotStarted, "%s: %v", r.tool, err)
		}
		return ran{}, cleanup, err
	}
	var rn ran
	rn.ex = execution{ending: res.Ending, exitCode: res.ExitCode, duration: res.Duration,
		stdout: bytes.NewReader(stdout.Bytes()), dropped: stdoutCap.dropped, reportFile: reportFile}
	rn.rep, rn.out = evaluate(p.meta, rn.ex)
	rn.out.Output = humanTail(res, r.humanStream)
	return rn, cleanup, nil
}

// ownDirectory gives a run that writes a report or compiles bytecode a
// private directory of its own (runner.Spec.Private) on the machine that
// runs it, the runner's for a runner's project: its report goes there and
// comes back, once the run ended, to reportFile on this machine; its
// bytecode goes there and goes with it. The token stands for the
// directory's path ("/" separates in every Python).
func ownDirectory(r run, spec *runner.Spec, reportFile string) {
	if r.parseFile == "" && !r.freshBytecode {
		return
	}
	spec.Private = true
	if r.parseFile != "" {
		spec.Argv = append(slices.Clone(spec.Argv), "--junitxml="+runner.PrivateDirToken+"/"+r.parseFile)
		spec.Collect, spec.CollectTo = r.parseFile, reportWriter(reportFile)
	}
	if r.freshBytecode {
		spec.Env = withEnv(spec.Env, pycachePrefixEnv, runner.PrivateDirToken+"/"+bytecodeDir)
	}
}

// reportWriter appends what it is given to the file at path, made 0600
// by the first write; each write opens and closes it, so nothing is left
// open whoever stops writing.
type reportWriter string

func (w reportWriter) Write(b []byte) (int, error) {
	f, err := os.OpenFile(string(w), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// runJob runs the validation as a supervised job, which may be handed
// off to the background, and evaluates it when it finished. The returned
// cleanup (nil when none), which the caller runs when it is done,
// discards a foreground job's output.
func (t *Tools) runJob(ctx context.Context, inv *kernel.Invocation, p *prepared) (ran, func(), error) {
	r, spec := p.r, &p.spec
	id := jobs.NewID()
	reportFile := ""
	if r.parseFile != "" {
		// The report comes back to the job's own directory, so a run
		// handed off to the background can still be parsed later.
		p.meta.ReportFile = r.parseFile
		reportFile = filepath.Join(t.Jobs.JobDir(id), r.parseFile)
	}
	ownDirectory(r, spec, reportFile)
	ss := jobs.StartSpec{
		ID: id, Project: inv.Project.ID, Principal: inv.Principal.AuthorityFingerprint(), Tool: inv.Tool,
		Cwd: p.clean, Expectation: jobs.Expectation(p.exp), Run: *spec, Validation: &p.meta, KeepOutput: true,
		Host: p.host,
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
		return ran{}, nil, err
	}
	if res == nil {
		inv.Fact("verdict", "pending")
		inv.Fact("expectation", p.exp)
		return ran{pending: true, out: Output{State: job.State, JobID: job.ID, Hint: HandoffHint, Tool: r.tool, ScopeID: p.meta.ScopeID,
			Failures: []string{}, Resolved: []string{}, Problems: []string{}, ExitCode: -1,
			Expectation: Expectation{Declared: p.exp}, Sandbox: p.sb}}, nil, nil
	}
	var rn ran
	var discard func()
	if job.Background {
		rn.background = &job
	} else {
		discard = func() { t.Jobs.DiscardOutput(context.WithoutCancel(ctx), job.ID) }
	}
	rn.rep, rn.out = evaluateJob(t.Jobs, job, res)
	rn.out.Output = humanTail(*res, r.humanStream)
	rn.out.State = job.State
	if job.Background {
		rn.out.JobID = job.ID
	}
	rn.ex.ending = res.Ending
	return rn, discard, nil
}

// callResult is the call's result for the validator's real outcome out,
// whatever was expected (exp): out itself when it passed or found no
// tests, else a failure whose kind says why (a timeout after timeout
// seconds, a cancellation, an evidence gap, failed tests) with out as its
// validation detail.
func callResult(out Output, ending runner.Ending, exp string, timeout int) (Output, error) {
	if out.Verdict == workflow.VerdictPassed || out.Verdict == workflow.VerdictNoTests {
		return out, nil
	}
	kind := failure.ValidationFailed
	msg := fmt.Sprintf("%d failed, %d passed", out.Failed, out.Passed)
	switch {
	case ending == runner.TimedOut:
		kind, msg = failure.TimedOut, fmt.Sprintf("timed out after %ds", timeout)
	case ending == runner.Cancelled:
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

// pycachePrefixEnv moves Python's bytecode caches out of the source tree
// (and, from pytest 6.0, those of pytest's assertion rewriter). Python and
// the rewriter trust a cached .pyc whose source kept its size and its
// modification time in whole seconds, so a same-size edit made within the
// second of an earlier run would run, and be recorded as, the old code. A
// pytest validation therefore sets it to a directory created for that run
// alone and removed after it: no bytecode compiled before the run can be
// read, whoever wrote it. The caller's env may not set it (runTests).
const pycachePrefixEnv = "PYTHONPYCACHEPREFIX"

// bytecodeDir is the name of a run's bytecode directory inside the run's
// private directory (runner.Spec.Private), removed with it.
const bytecodeDir = "pycache"

// withEnv returns a copy of env with key set to value, leaving env (the
// caller's map) as it was.
func withEnv(env map[string]string, key, value string) map[string]string {
	out := maps.Clone(env)
	if out == nil {
		out = map[string]string{}
	}
	out[key] = value
	return out
}

// HandoffHint is what a validation handed off to the background tells its
// caller.
const HandoffHint = "still running: it continues as a background job (not re-run). Its evidence is recorded in the session when it ends, " +
	"observed or not: follow it with observe_jobs and this job_id, or read validation_summary."

func humanTail(res runner.Result, stream string) runner.Output {
	if stream == "stderr" {
		return res.Stderr
	}
	return res.Stdout
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
