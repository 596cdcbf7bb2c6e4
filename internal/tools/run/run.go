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
// The ledger keeps the program's base name, exit code, ending and the
// expectation outcome — never arguments, command text, stdin or output.
package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/workflow"
)

// Bounds of the execution tools.
const (
	// MaxShellBytes bounds run_shell text (and, in the shell tools,
	// session_shell_exec) in UTF-8 bytes.
	MaxShellBytes = 16000
	// MaxScriptBytes bounds a run_script body.
	MaxScriptBytes = 256 << 10
	// MaxAcceptedExitCodes bounds accepted_exit_codes.
	MaxAcceptedExitCodes = 16
	// MaxPurposeChars bounds purpose.
	MaxPurposeChars = 64
	// DefaultTimeoutSeconds is the timeout when a call sets none.
	DefaultTimeoutSeconds = 120
)

// Expectation is a pre-declared result expectation.
type Expectation string

// Expectations: success (default) requires an accepted exit code; failure
// expects a completed run with another exit code; observe accepts any
// completed run. A timeout, cancellation or kill never matches.
const (
	ExpectSuccess Expectation = "success"
	ExpectFailure Expectation = "failure"
	ExpectObserve Expectation = "observe"
)

// Interpreters run_script accepts, with the program that runs them.
var Interpreters = map[string]string{"sh": "sh", "bash": "bash", "python3": "python3", "node": "node"}

// Tools holds the execution host.
type Tools struct {
	Host runner.Host
}

// Register adds run_process, run_shell and run_script to reg.
func Register(reg *kernel.Registry, t *Tools) {
	kernel.Register(reg, kernel.Spec[ProcessInput, Output]{
		Name: "run_process",
		Description: "Run a program with a literal argv (no shell) in the project. Returns exit code, duration and bounded stdout/stderr tails. " +
			"A non-accepted exit code fails with command_failed unless result_expectation is failure or observe.",
		Category: "exec", Scopes: []auth.Scope{auth.ScopeJobRun},
		Mutates: true, Writes: true, Session: kernel.SessionOptional,
		Annotations: kernel.Annotations{Destructive: true},
		Handler:     t.runProcess,
	})
	kernel.Register(reg, kernel.Spec[ShellInput, Output]{
		Name:        "run_shell",
		Description: "Run sh or bash command text (at most 16,000 bytes) in a fresh shell process. Nothing persists between calls; use run_script for long programs.",
		Category:    "exec", Scopes: []auth.Scope{auth.ScopeJobRun},
		Mutates: true, Writes: true, Session: kernel.SessionOptional,
		Annotations: kernel.Annotations{Destructive: true},
		Handler:     t.runShell,
	})
	kernel.Register(reg, kernel.Spec[ScriptInput, Output]{
		Name:        "run_script",
		Description: "Write a script body to a private temporary file and run it with sh, bash, python3 or node, with optional arguments.",
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
	Cwd               string            `json:"cwd,omitempty" jsonschema:"project-relative working directory; default the session's default_cwd, else the project root"`
	Env               map[string]string `json:"env,omitempty" jsonschema:"environment additions"`
	Stdin             string            `json:"stdin,omitempty"`
	TimeoutSeconds    *int              `json:"timeout_seconds,omitempty" jsonschema:"1-86400, default 120"`
	ResultExpectation Expectation       `json:"result_expectation,omitempty" jsonschema:"success (default), failure or observe"`
	Purpose           string            `json:"purpose,omitempty" jsonschema:"why you run it, e.g. test, build, diagnostic (evidence only)"`
	MaxOutputBytes    int               `json:"max_output_bytes,omitempty" jsonschema:"tail kept per stream, default 16384, at most 262144"`
}

// ProcessInput is the input of run_process.
type ProcessInput struct {
	Common
	Argv              []string `json:"argv" jsonschema:"program and arguments, taken literally"`
	AcceptedExitCodes []int    `json:"accepted_exit_codes,omitempty" jsonschema:"exit codes that count as success (default [0])"`
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

// Expectation outcome as reported.
type ExpectationResult struct {
	Declared Expectation `json:"declared"`
	Matched  bool        `json:"matched"`
}

// Output is the result of every execution tool.
type Output struct {
	ExitCode    int               `json:"exit_code"`
	Signal      string            `json:"signal,omitempty"`
	Ending      runner.Ending     `json:"ending"`
	KilledGroup bool              `json:"killed_group"`
	DurationMS  int64             `json:"duration_ms"`
	Cwd         string            `json:"cwd"`
	Stdout      runner.Output     `json:"stdout"`
	Stderr      runner.Output     `json:"stderr"`
	Expectation ExpectationResult `json:"expectation"`
}

func (t *Tools) runProcess(ctx context.Context, inv *kernel.Invocation, in ProcessInput) (Output, error) {
	if len(in.Argv) == 0 || in.Argv[0] == "" {
		return Output{}, failure.New(failure.InvalidArguments, "argv must name a program")
	}
	if len(in.AcceptedExitCodes) > MaxAcceptedExitCodes {
		return Output{}, failure.New(failure.InvalidArguments, "accepted_exit_codes holds more than %d codes", MaxAcceptedExitCodes)
	}
	cwd, err := t.cwd(inv, in.Cwd)
	if err != nil {
		return Output{}, err
	}
	return t.execute(ctx, inv, in.Common, cwd, in.Argv, in.AcceptedExitCodes)
}

func (t *Tools) runShell(ctx context.Context, inv *kernel.Invocation, in ShellInput) (Output, error) {
	if in.Command == "" || len(in.Command) > MaxShellBytes || !utf8.ValidString(in.Command) {
		return Output{}, failure.New(failure.InvalidArguments, "command must be 1-%d bytes of UTF-8", MaxShellBytes)
	}
	sh := in.Shell
	if sh == "" && inv.Session != nil {
		sh = inv.Session.ExecutionContext.DefaultShell
	}
	if sh == "" {
		sh = workflow.ShellSh
	}
	if sh != workflow.ShellSh && sh != workflow.ShellBash {
		return Output{}, failure.New(failure.InvalidArguments, "shell must be sh or bash")
	}
	cwd, err := t.cwd(inv, in.Cwd)
	if err != nil {
		return Output{}, err
	}
	inv.Fact("shell", string(sh))
	return t.execute(ctx, inv, in.Common, cwd, []string{string(sh), "-c", in.Command}, nil)
}

func (t *Tools) runScript(ctx context.Context, inv *kernel.Invocation, in ScriptInput) (Output, error) {
	prog, ok := Interpreters[in.Interpreter]
	if !ok {
		return Output{}, failure.New(failure.InvalidArguments, "interpreter must be sh, bash, python3 or node")
	}
	if in.Script == "" || len(in.Script) > MaxScriptBytes {
		return Output{}, failure.New(failure.InvalidArguments, "script must be 1-%d bytes", MaxScriptBytes)
	}
	cwd, err := t.cwd(inv, in.Cwd)
	if err != nil {
		return Output{}, err
	}
	dir, err := os.MkdirTemp("", "webcodex-script-")
	if err != nil {
		return Output{}, failure.Wrap(failure.NotStarted, err, "cannot create the script file")
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "script")
	if err := os.WriteFile(file, []byte(in.Script), 0o600); err != nil {
		return Output{}, failure.Wrap(failure.NotStarted, err, "cannot write the script file")
	}
	inv.Fact("interpreter", in.Interpreter)
	return t.execute(ctx, inv, in.Common, cwd, append([]string{prog, file}, in.Args...), nil)
}

// cwd resolves the working directory: the explicit one, else the business
// session's default, else the project root. It must exist inside the
// project and be a directory.
func (t *Tools) cwd(inv *kernel.Invocation, explicit string) (string, error) {
	rel, inherited := explicit, false
	if rel == "" && inv.Session != nil && inv.Session.ExecutionContext.DefaultCwd != "" {
		rel, inherited = inv.Session.ExecutionContext.DefaultCwd, true
	}
	if rel == "" {
		rel = "."
	}
	abs, clean, err := inv.Project.Resolve(rel)
	if err == nil {
		if st, serr := os.Stat(abs); serr != nil || !st.IsDir() {
			err = failure.New(failure.InvalidArguments, "cwd %q is not an existing directory", clean)
		}
	}
	if err != nil {
		if inherited {
			return "", failure.New(failure.InvalidExecutionContext, "the session's default_cwd %q cannot be used: %s", rel, failure.MessageOf(err))
		}
		return "", err
	}
	return abs, nil
}

func (t *Tools) execute(ctx context.Context, inv *kernel.Invocation, c Common, cwd string, argv []string, accepted []int) (Output, error) {
	exp := c.ResultExpectation
	if exp == "" {
		exp = ExpectSuccess
	}
	if exp != ExpectSuccess && exp != ExpectFailure && exp != ExpectObserve {
		return Output{}, failure.New(failure.InvalidArguments, "result_expectation must be success, failure or observe")
	}
	if utf8.RuneCountInString(c.Purpose) > MaxPurposeChars {
		return Output{}, failure.New(failure.InvalidArguments, "purpose is longer than %d characters", MaxPurposeChars)
	}
	timeout := DefaultTimeoutSeconds
	if c.TimeoutSeconds != nil {
		timeout = *c.TimeoutSeconds
	}
	if timeout < 1 || time.Duration(timeout)*time.Second > runner.MaxTimeout {
		return Output{}, failure.New(failure.InvalidArguments, "timeout_seconds must be 1-%d", int(runner.MaxTimeout/time.Second))
	}
	if err := runner.ValidateEnv(c.Env); err != nil {
		return Output{}, failure.New(failure.InvalidArguments, "env: %v", err)
	}
	if len(accepted) == 0 {
		accepted = []int{0}
	}
	spec := runner.Spec{
		Argv: argv, Dir: cwd, Env: c.Env, Timeout: time.Duration(timeout) * time.Second, TailBytes: c.MaxOutputBytes,
	}
	if c.Stdin != "" {
		spec.Stdin = []byte(c.Stdin)
	}
	inv.Fact("program", filepath.Base(argv[0]))
	if c.Purpose != "" {
		inv.Fact("purpose", c.Purpose)
	}
	inv.Fact("expectation", string(exp))
	res, err := runner.Run(ctx, t.Host, spec)
	if err != nil {
		if errors.Is(err, runner.ErrNotStarted) {
			return Output{}, failure.New(failure.NotStarted, "%s", trimPrefix(err))
		}
		return Output{}, err
	}
	rel, _ := inv.Project.Rel(cwd)
	out := Output{
		ExitCode: res.ExitCode, Signal: res.Signal, Ending: res.Ending, KilledGroup: res.KilledGroup,
		DurationMS: res.Duration.Milliseconds(), Cwd: rel, Stdout: res.Stdout, Stderr: res.Stderr,
		Expectation: ExpectationResult{Declared: exp},
	}
	completed := res.Ending == runner.Exited
	ok := completed && slices.Contains(accepted, res.ExitCode)
	switch exp {
	case ExpectSuccess:
		out.Expectation.Matched = ok
	case ExpectFailure:
		out.Expectation.Matched = completed && !ok
	case ExpectObserve:
		out.Expectation.Matched = completed
	}
	inv.Fact("exit_code", strconv.Itoa(res.ExitCode))
	inv.Fact("ending", string(res.Ending))
	inv.Fact("expectation_matched", strconv.FormatBool(out.Expectation.Matched))
	if out.Expectation.Matched {
		return out, nil
	}
	kind, msg := failure.CommandFailed, fmt.Sprintf("exit code %d did not meet the %s expectation", res.ExitCode, exp)
	switch res.Ending {
	case runner.TimedOut:
		kind, msg = failure.TimedOut, fmt.Sprintf("timed out after %ds; the process group was killed", timeout)
	case runner.Cancelled:
		kind, msg = failure.Cancelled, "cancelled; the process group was killed"
	case runner.ProcessLimit:
		kind, msg = failure.CommandFailed, fmt.Sprintf("more than %d processes; the process group was killed", runner.MaxProcesses)
	case runner.Signaled:
		msg = "terminated by " + res.Signal
	}
	ferr := failure.New(kind, "%s", msg).WithDetail("execution", out).WithDetail("state_changed", true)
	return Output{}, ferr
}

func trimPrefix(err error) string {
	s := err.Error()
	const p = "runner: not started: "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}
