// Package run registers the one-shot execution tools: run_process (a
// literal argv), run_shell (sh or bash text) and run_script (a script body
// run by its interpreter from a private temporary file).
//
// Each run is a real process in its own process group with a scrubbed
// environment (internal/runner). The working directory is project-relative
// and confined to the project; when omitted it is inherited from the exact
// business session's execution defaults (run_process and run_script: cwd;
// run_shell: cwd and shell) and never from recording_session_id. A default
// that escapes the project or no longer exists fails before start, with no
// fallback to the project root.
//
// With a job manager (Tools.Jobs), every run is a supervised job
// (internal/jobs): a run still going after the manager's synchronous grace
// period (default 8 s) is not re-run and not killed: the same process
// continues as a background job, and the call succeeds at once with
// state "running" and a job_id to observe with observe_jobs.
//
// The ledger keeps the program's base name, exit code, ending, job id and
// state and the expectation outcome — never arguments, command text, stdin
// or output.
//
// A call's success, exit code and error are the run's real outcome: only
// exit code 0 of a run that ended by itself succeeds. result_expectation
// and accepted_exit_codes decide only expectation.matched, which the
// ledger's expectation classification reads (an expected failure is not
// actionable).
package run

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/command"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workspace"
)

// MaxScriptBytes bounds a run_script body.
const MaxScriptBytes = runner.MaxScriptBytes

// Interpreters run_script accepts, with the program that runs them.
var Interpreters = map[string]string{"sh": "sh", "bash": "bash", "python3": "python3", "node": "node"}

// Tools holds the execution host and, when set, the job manager that
// supervises every run (and hands long ones off as background jobs).
// Without Jobs a run is waited for until it ends.
type Tools struct {
	// Runners serves each call's project: its processes start there.
	Runners workspace.Runners
	Jobs    *jobs.Manager
}

// Register adds run_process, run_shell and run_script to reg.
func Register(reg *kernel.Registry, t *Tools) {
	kernel.Register(reg, kernel.Spec[ProcessInput, Output]{
		Runners: true,
		Name:    "run_process",
		Description: "Run a program with a literal argv (no shell); returns exit code and bounded output tails. A non-zero " +
			"exit fails with command_failed; a run still going after a few seconds continues as a job (job_id).",
		Category: "exec", Scopes: []auth.Scope{auth.ScopeJobRun},
		Mutates: true, Writes: true, Session: kernel.SessionOptional,
		Annotations: kernel.Annotations{Destructive: true},
		Handler:     t.runProcess,
	})
	kernel.Register(reg, kernel.Spec[ShellInput, Output]{
		Runners:     true,
		Name:        "run_shell",
		Description: "Run sh or bash command text in a fresh shell; nothing persists between calls. Results as run_process.",
		Category:    "exec", Scopes: []auth.Scope{auth.ScopeJobRun},
		Mutates: true, Writes: true, Session: kernel.SessionOptional,
		Annotations: kernel.Annotations{Destructive: true},
		Handler:     t.runShell,
	})
	kernel.Register(reg, kernel.Spec[ScriptInput, Output]{
		Runners:     true,
		Name:        "run_script",
		Description: "Run a script body with sh, bash, python3 or node from a private temporary file.",
		Category:    "exec", Scopes: []auth.Scope{auth.ScopeJobRun},
		Mutates: true, Writes: true, Session: kernel.SessionOptional,
		Annotations: kernel.Annotations{Destructive: true},
		Handler:     t.runScript,
	})
}

// Common holds the arguments every execution tool takes.
type Common struct {
	kernel.ProjectRef
	kernel.SessionRef
	Cwd               string              `json:"cwd,omitempty" jsonschema:"default: the session's default_cwd, else the project root"`
	Env               map[string]string   `json:"env,omitempty" jsonschema:"environment additions"`
	Stdin             string              `json:"stdin,omitempty"`
	TimeoutSeconds    *int                `json:"timeout_seconds,omitempty" jsonschema:"1-86400, default 120"`
	ResultExpectation command.Expectation `json:"result_expectation,omitempty" jsonschema:"success (default), failure or observe; sets only expectation.matched"`
	Purpose           string              `json:"purpose,omitempty" jsonschema:"why you run it (evidence only)"`
	MaxOutputBytes    int                 `json:"max_output_bytes,omitempty" jsonschema:"tail kept per stream, default 16384, at most 262144"`
}

// ProcessInput is the input of run_process.
type ProcessInput struct {
	Common
	Argv              []string `json:"argv" jsonschema:"program and arguments, taken literally"`
	AcceptedExitCodes []int    `json:"accepted_exit_codes,omitempty" jsonschema:"exit codes meeting the expectation (default [0]); non-zero still fails"`
}

// ShellInput is the input of run_shell.
type ShellInput struct {
	Common
	Command string         `json:"command" jsonschema:"shell text, at most 16000 bytes"`
	Shell   workflow.Shell `json:"shell,omitempty" jsonschema:"sh or bash; default the session's default_shell, else sh"`
}

// ScriptInput is the input of run_script.
type ScriptInput struct {
	Common
	Interpreter string   `json:"interpreter" jsonschema:"sh, bash, python3 or node"`
	Script      string   `json:"script" jsonschema:"the script body"`
	Args        []string `json:"args,omitempty"`
}

// ExpectationResult is the pre-declared expectation and whether the run
// met it. It is reported beside the result and never changes it.
type ExpectationResult struct {
	Declared command.Expectation `json:"declared"`
	Matched  bool                `json:"matched"`
}

// Output is the result of every execution tool. While State is running
// or queued (a run handed off as a background job), ExitCode is -1,
// Ending is empty and the tails hold the output so far.
type Output struct {
	// State is the job state: a terminal one, or running/queued after a
	// handoff.
	State jobs.State `json:"state"`
	// JobID identifies the supervised job (empty without a job manager).
	JobID string `json:"job_id,omitempty"`
	// Cursors, after a handoff, are where observe_jobs continues.
	Cursors *jobs.Cursors `json:"cursors,omitempty"`
	// Hint tells the caller what to do next after a handoff.
	Hint        string            `json:"hint,omitempty"`
	ExitCode    int               `json:"exit_code"`
	Signal      string            `json:"signal,omitempty"`
	Ending      runner.Ending     `json:"ending"`
	KilledGroup bool              `json:"killed_group"`
	DurationMS  int64             `json:"duration_ms"`
	Cwd         string            `json:"cwd"`
	Stdout      runner.Output     `json:"stdout"`
	Stderr      runner.Output     `json:"stderr"`
	Expectation ExpectationResult `json:"expectation"`
	// Sandbox is the sandbox mode in force for the run.
	Sandbox runner.Mode `json:"sandbox"`
}

func (t *Tools) runProcess(ctx context.Context, inv *kernel.Invocation, in ProcessInput) (Output, error) {
	if err := command.RefuseResource(inv, "run_process"); err != nil {
		return Output{}, err
	}
	if len(in.Argv) == 0 || in.Argv[0] == "" {
		return Output{}, failure.New(failure.InvalidArguments, "argv must name a program")
	}
	if len(in.AcceptedExitCodes) > command.MaxAcceptedExitCodes {
		return Output{}, failure.New(failure.InvalidArguments, "accepted_exit_codes holds more than %d codes", command.MaxAcceptedExitCodes)
	}
	cwd, err := command.ResolveCwd(inv, in.Cwd)
	if err != nil {
		return Output{}, err
	}
	return t.execute(ctx, inv, in.Common, cwd, in.Argv, in.AcceptedExitCodes, nil, nil)
}

func (t *Tools) runShell(ctx context.Context, inv *kernel.Invocation, in ShellInput) (Output, error) {
	if err := command.ValidateCommand(in.Command); err != nil {
		return Output{}, err
	}
	sh, err := command.SelectShell(inv, in.Shell)
	if err != nil {
		return Output{}, err
	}
	inv.Fact("shell", string(sh))
	argv := []string{string(sh), "-c", in.Command}
	if ssh := command.SSHTarget(inv, in.Cwd); ssh != nil {
		// The command runs on the resource; the ssh client runs in the
		// project root on the runner.
		inv.Fact("resource", ssh.Resource)
		return t.execute(ctx, inv, in.Common, inv.Project.Root, argv, nil, nil, ssh)
	}
	cwd, err := command.ResolveCwd(inv, in.Cwd)
	if err != nil {
		return Output{}, err
	}
	return t.execute(ctx, inv, in.Common, cwd, argv, nil, nil, nil)
}

func (t *Tools) runScript(ctx context.Context, inv *kernel.Invocation, in ScriptInput) (Output, error) {
	if err := command.RefuseResource(inv, "run_script"); err != nil {
		return Output{}, err
	}
	prog, ok := Interpreters[in.Interpreter]
	if !ok {
		return Output{}, failure.New(failure.InvalidArguments, "interpreter must be sh, bash, python3 or node")
	}
	host := t.Runners.For(inv.Project)
	if max := workspace.MaxScriptBytes(host); in.Script == "" || len(in.Script) > max {
		msg := fmt.Sprintf("script must be 1-%d bytes", max)
		if max < MaxScriptBytes {
			msg += fmt.Sprintf(" through runner %s (it travels with the process start); run a longer one from a file in the project", host.ID())
		}
		return Output{}, failure.New(failure.InvalidArguments, "%s", msg)
	}
	cwd, err := command.ResolveCwd(inv, in.Cwd)
	if err != nil {
		return Output{}, err
	}
	inv.Fact("interpreter", in.Interpreter)
	// The host that starts the process writes the script to a private
	// file on its own machine and removes it when the run ends, however
	// it ends (runner.Spec.Script): a queued job has no file yet.
	return t.execute(ctx, inv, in.Common, cwd, append([]string{prog}, in.Args...), nil, []byte(in.Script), nil)
}

// execute runs argv, with script, when set, as the body run_script's
// interpreter runs (runner.Spec.Script).
func (t *Tools) execute(ctx context.Context, inv *kernel.Invocation, c Common, cwd string, argv []string, accepted []int, script []byte, ssh *runner.SSH) (Output, error) {
	exp, err := command.ValidateExpectation(c.ResultExpectation)
	if err != nil {
		return Output{}, err
	}
	if err := command.ValidatePurpose(c.Purpose); err != nil {
		return Output{}, err
	}
	timeout, err := command.TimeoutSeconds(c.TimeoutSeconds, command.DefaultTimeoutSeconds)
	if err != nil {
		return Output{}, err
	}
	if err := runner.ValidateEnv(c.Env); err != nil {
		return Output{}, failure.New(failure.InvalidArguments, "env: %v", err)
	}
	if len(accepted) == 0 {
		accepted = []int{0}
	}
	spec := runner.Spec{
		Argv: argv, Dir: cwd, Env: c.Env, Timeout: time.Duration(timeout) * time.Second, TailBytes: c.MaxOutputBytes,
		Sandbox: command.Sandbox(inv), SSH: ssh, Script: script,
	}
	if c.Stdin != "" {
		spec.Stdin = []byte(c.Stdin)
	}
	inv.Fact("program", filepath.Base(argv[0]))
	if c.Purpose != "" {
		inv.Fact("purpose", c.Purpose)
	}
	inv.Fact("expectation", string(exp))
	rel, _ := inv.Project.Rel(cwd)
	if ssh != nil {
		rel = ssh.Cwd // a remote path; "" is the resource's default
	}
	host := t.Runners.For(inv.Project)
	var res runner.Result
	jobID := ""
	if t.Jobs == nil {
		res, err = runner.Run(ctx, host, spec)
		if err != nil {
			if errors.Is(err, runner.ErrNotStarted) {
				return Output{}, failure.New(failure.NotStarted, "%s", trimPrefix(err))
			}
			return Output{}, err
		}
	} else {
		ss := command.StartSpec(inv, rel, c.Purpose, exp, accepted, false, spec)
		ss.Host = host
		job, r, err := t.Jobs.RunSync(ctx, ss, 0)
		// A run answered inline has no job record (nothing to observe);
		// only a handed-off run is named by its job id.
		if job.ID != "" && (r == nil || job.Background) {
			inv.Fact("job_id", job.ID)
			inv.Fact("job_state", string(job.State))
		}
		if err != nil {
			return Output{}, err
		}
		if r == nil {
			sb := runner.InForce(host, spec.Sandbox)
			inv.Fact("sandbox", string(sb))
			out, err := t.handoff(ctx, inv, job, rel, exp, c.MaxOutputBytes)
			out.Sandbox = sb
			return out, err
		}
		res = *r
		if job.Background {
			jobID = job.ID
		}
	}
	out := Output{
		JobID:    jobID,
		ExitCode: res.ExitCode, Signal: res.Signal, Ending: res.Ending, KilledGroup: res.KilledGroup,
		DurationMS: res.Duration.Milliseconds(), Cwd: rel, Stdout: res.Stdout, Stderr: res.Stderr,
		Expectation: ExpectationResult{Declared: exp}, Sandbox: res.Sandbox,
	}
	out.State, out.Expectation.Matched = jobs.Classify(res, accepted, exp)
	inv.Fact("sandbox", string(res.Sandbox))
	inv.Fact("exit_code", strconv.Itoa(res.ExitCode))
	inv.Fact("ending", string(res.Ending))
	inv.Fact("expectation_matched", strconv.FormatBool(out.Expectation.Matched))
	// The result is the run's real outcome: only exit code 0 of a run that
	// ended by itself is a success, whatever was expected.
	if out.State == jobs.Succeeded {
		return out, nil
	}
	kind, msg := failure.CommandFailed, fmt.Sprintf("exit code %d", res.ExitCode)
	switch res.Ending {
	case runner.TimedOut:
		kind, msg = failure.TimedOut, fmt.Sprintf("timed out after %ds; the process group was killed", timeout)
	case runner.Cancelled:
		kind, msg = failure.Cancelled, "cancelled; the process group was killed"
	case runner.Stopped:
		msg = "stopped before it finished; the process group was killed"
	case runner.ProcessLimit:
		kind, msg = failure.CommandFailed, fmt.Sprintf("more than %d processes; the process group was killed", runner.MaxProcesses)
	case runner.Signaled:
		msg = "terminated by " + res.Signal
	}
	if out.Expectation.Matched {
		msg += fmt.Sprintf(" (as declared: the %s expectation was met)", exp)
	}
	ferr := failure.New(kind, "%s", msg).WithDetail("execution", out).WithDetail("state_changed", true)
	return Output{}, ferr
}

// HandoffHint is the next step a handed-off run tells its caller.
const HandoffHint = "still running: it continues as a background job (not re-run). Call observe_jobs with this job_id and cursors to follow it, stop_job to stop it."

// handoff answers a run that outlived the sync grace: the job continues;
// the call succeeds with its id and the output so far.
func (t *Tools) handoff(ctx context.Context, inv *kernel.Invocation, job jobs.Job, rel string, exp command.Expectation, tail int) (Output, error) {
	if tail <= 0 {
		tail = runner.DefaultTailBytes
	}
	tail = min(tail, jobs.MaxReadBytes)
	acc := jobs.Access{Project: inv.Project.ID, Fingerprint: inv.Principal.AuthorityFingerprint()}
	out := Output{
		State: job.State, JobID: job.ID, Hint: HandoffHint, ExitCode: -1, Cwd: rel,
		Expectation: ExpectationResult{Declared: exp},
	}
	cur := &jobs.Cursors{}
	for _, s := range []jobs.Stream{jobs.Stdout, jobs.Stderr} {
		_, c, err := t.Jobs.Read(ctx, acc, job.ID, s, nil, tail)
		if err != nil {
			return Output{}, err
		}
		next := c.NextCursor
		o := runner.Output{Text: c.Text, Truncated: c.Cursor > 0 || c.DroppedBytes > 0, TotalBytes: c.FileBytes + c.DroppedBytes}
		if s == jobs.Stdout {
			out.Stdout, cur.Stdout = o, &next
		} else {
			out.Stderr, cur.Stderr = o, &next
		}
	}
	out.Cursors = cur
	if !job.StartedAt.IsZero() {
		out.DurationMS = time.Since(job.StartedAt).Milliseconds()
	}
	return out, nil
}

func trimPrefix(err error) string {
	s := err.Error()
	const p = "runner: not started: "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}
