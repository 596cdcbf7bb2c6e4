// Package sessionshell registers the persistent-shell tools: open_session_shell,
// session_shell_exec, session_shell_status and close_session_shell.
//
// A persistent shell is one real long-lived sh or bash process bound to
// exactly one Workflow Session (internal/shell): cwd, exports and functions
// persist between commands, unlike run_shell. Every tool takes the
// business session_id, which the kernel authorizes; every operation then
// checks that the shell belongs to that session, and a shell of another
// session is refused before anything runs. read_only sessions cannot open
// or execute (the kernel's write guard); close and status stay available.
//
// The shell lives on the machine that serves the session's project: the
// tools drive it through workspace operations (ops.go), in this process for
// a local project, as requests to the runner for a runner's project. A
// call for a runner with no live connection fails runner_unavailable
// before anything is sent; one whose answer was lost fails outcome_unknown
// (never a made-up result). A restarted runner has lost its shells: their
// ids answer not_found.
//
// With an SSH resource selected on the session (a runner's), the shell is
// opened on that resource (internal/shell, remote.go): its cwd is the
// call's, else the session's default_cwd (remote paths), else the
// resource's default_cwd, else the login directory. A shell keeps running
// where it was opened: an exec while the session selects another resource,
// or none, fails resource_not_allowed before anything runs. Only the
// resource's name is shown or recorded.
//
// The session ledger receives lifecycle and outcome facts only: shell_id,
// action (open, exec, close), state, shell (sh|bash, on open), exit_code,
// ending, timed_out, shell_exited, reset_required, expectation and
// expectation_matched, changed (on close) — never command text, output,
// paths or environment.
package sessionshell

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/command"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/shell"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workspace"
)

// Bounds of session_shell_exec.
const (
	// DefaultTimeoutSeconds is a command's timeout when the call sets none.
	DefaultTimeoutSeconds = 60
	// MaxTimeoutSeconds is the longest timeout a call may ask for.
	MaxTimeoutSeconds = int(shell.MaxTimeout / time.Second)
)

// Expectation is a pre-declared result expectation (the same values as
// run_shell's).
type Expectation string

// Expectations: success (default) requires exit code 0; failure expects a
// completed command with another code; observe accepts any completed
// command. A timeout, cancellation or reset never matches. An expectation
// decides only ExecOutput.Expectation, never the call's result.
const (
	ExpectSuccess Expectation = "success"
	ExpectFailure Expectation = "failure"
	ExpectObserve Expectation = "observe"
)

// Endings of a command as session_shell_exec reports them.
const (
	EndingExited      = "exited"       // the command completed
	EndingShellExited = "shell_exited" // the command ended the shell
	EndingTimedOut    = "timed_out"
	EndingCancelled   = "cancelled"
)

// Register adds the persistent-shell tools to reg. runners serves each
// call's project: its shells live on that machine (workspace.Local.Shells
// for this host's projects, a runner's own Manager for its projects).
func Register(reg *kernel.Registry, runners workspace.Runners) {
	t := &tools{runners: runners}
	kernel.Register(reg, kernel.Spec[OpenInput, OpenOutput]{
		Name: "open_session_shell",
		Description: "Open the session's persistent sh or bash shell (one per session), in which cwd, exports " +
			"and functions persist between session_shell_exec calls. No PTY, no input. With an SSH resource selected on the session, " +
			"the shell runs on that resource (cwd: a remote path).",
		Category: "shell", Scopes: []auth.Scope{auth.ScopeProjectWrite, auth.ScopeJobRun},
		Annotations: kernel.Annotations{Destructive: true},
		Mutates:     true, Writes: true, Session: kernel.SessionRequired, Runners: true,
		Handler: t.open,
	})
	kernel.Register(reg, kernel.Spec[ExecInput, ExecOutput]{
		Name: "session_shell_exec",
		Description: "Run command text in the session's persistent shell and wait for it, one command at a time (else shell_busy). A non-zero " +
			"exit fails with command_failed; a timeout that cannot resynchronize kills the shell (shell_reset_required).",
		Category: "shell", Scopes: []auth.Scope{auth.ScopeProjectWrite, auth.ScopeJobRun},
		Annotations: kernel.Annotations{Destructive: true},
		Mutates:     true, Writes: true, Session: kernel.SessionRequired, Runners: true,
		Handler: t.exec,
	})
	kernel.Register(reg, kernel.Spec[RefInput, ShellView]{
		Name:        "session_shell_status",
		Description: "A persistent shell's state (ready, busy, closed, lost), shell, cwd, times and commands run.",
		Category:    "shell", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Session:     kernel.SessionRequired, Runners: true,
		Handler: t.status,
	})
	kernel.Register(reg, kernel.Spec[RefInput, CloseOutput]{
		Name:        "close_session_shell",
		Description: "Close a persistent shell, killing its process group; closing it again changes nothing.",
		Category:    "shell", Scopes: []auth.Scope{auth.ScopeProjectWrite},
		Annotations: kernel.Annotations{Idempotent: true},
		// Writes is false on purpose: a session switched to read_only
		// after opening a shell must still be able to release it.
		Mutates: true, Session: kernel.SessionRequired, Runners: true,
		Handler: t.close,
	})
}

type tools struct{ runners workspace.Runners }

// OpenInput is the input of open_session_shell.
type OpenInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
	Cwd   string         `json:"cwd,omitempty" jsonschema:"project-relative initial directory; default the session's default_cwd, else the project root"`
	Shell workflow.Shell `json:"shell,omitempty" jsonschema:"sh or bash; default the session's default_shell, else sh"`
}

// RefInput names one shell of the session.
type RefInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
	ShellID string `json:"shell_id" jsonschema:"the wc_shell_ id from open_session_shell"`
}

// ExecInput is the input of session_shell_exec.
type ExecInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
	ShellID           string      `json:"shell_id" jsonschema:"the wc_shell_ id from open_session_shell"`
	Command           string      `json:"command" jsonschema:"shell text, at most 16000 bytes"`
	TimeoutSeconds    *int        `json:"timeout_seconds,omitempty" jsonschema:"1-3600, default 60"`
	ResultExpectation Expectation `json:"result_expectation,omitempty" jsonschema:"success (default), failure or observe; sets only expectation.matched"`
}

// ShellView is a shell as the tools show it.
type ShellView struct {
	ShellID   string `json:"shell_id"`
	SessionID string `json:"session_id"`
	Project   string `json:"project"`
	Shell     string `json:"shell"`
	// Cwd is the initial directory, project-relative.
	Cwd         string `json:"cwd"`
	State       string `json:"state"`
	EndReason   string `json:"end_reason,omitempty"`
	OpenedAt    string `json:"opened_at"`
	LastUsedAt  string `json:"last_used_at"`
	EndedAt     string `json:"ended_at,omitempty"`
	CommandsRun int64  `json:"commands_run"`
	// Sandbox is the sandbox mode in force for the shell.
	Sandbox string `json:"sandbox"`
	// Resource is the SSH resource the shell runs on (its name only);
	// absent for a shell of the project's machine.
	Resource string `json:"resource,omitempty"`
}

// OpenOutput is the result of open_session_shell.
type OpenOutput struct {
	Shell ShellView `json:"shell"`
	// CwdSource and ShellSource say where cwd and shell came from:
	// explicit, session_default or default.
	CwdSource   string `json:"cwd_source"`
	ShellSource string `json:"shell_source"`
}

// ExpectationResult reports the pre-declared expectation.
type ExpectationResult struct {
	Declared Expectation `json:"declared"`
	Matched  bool        `json:"matched"`
}

// ExecOutput is the result of session_shell_exec.
type ExecOutput struct {
	ShellID  string `json:"shell_id"`
	ExitCode int    `json:"exit_code"`
	// Ending is exited, shell_exited, timed_out or cancelled.
	Ending      string `json:"ending"`
	TimedOut    bool   `json:"timed_out"`
	ShellExited bool   `json:"shell_exited"`
	// ShellState is the shell's state after the command.
	ShellState string `json:"shell_state"`
	DurationMS int64  `json:"duration_ms"`
	// Cwd is the shell's directory after the command, project-relative;
	// empty when outside the project (cwd_outside_project) or unknown.
	Cwd               string            `json:"cwd,omitempty"`
	CwdOutsideProject bool              `json:"cwd_outside_project,omitempty"`
	Stdout            runner.Output     `json:"stdout"`
	Stderr            runner.Output     `json:"stderr"`
	Expectation       ExpectationResult `json:"expectation"`
	// Sandbox is the sandbox mode in force for the shell.
	Sandbox string `json:"sandbox"`
}

// CloseOutput is the result of close_session_shell.
type CloseOutput struct {
	Shell   ShellView `json:"shell"`
	Changed bool      `json:"changed"`
}

const timeFormat = "2006-01-02T15:04:05.000Z07:00"

func view(i shell.Info) ShellView {
	v := ShellView{
		ShellID: i.ShellID, SessionID: i.SessionID, Project: i.Project, Shell: string(i.Shell), Cwd: i.Cwd,
		State: string(i.State), EndReason: i.EndReason, OpenedAt: i.OpenedAt.UTC().Format(timeFormat),
		LastUsedAt: i.LastUsedAt.UTC().Format(timeFormat), CommandsRun: i.CommandsRun, Sandbox: string(i.Sandbox),
		Resource: i.Resource,
	}
	if !i.EndedAt.IsZero() {
		v.EndedAt = i.EndedAt.UTC().Format(timeFormat)
	}
	return v
}

// factShellID records a well-formed shell id (never arbitrary caller text).
func factShellID(inv *kernel.Invocation, id string) {
	if shell.ValidID(id) {
		inv.Fact("shell_id", id)
	}
}

func sessionOf(inv *kernel.Invocation) (*workflow.Session, error) {
	if inv.Session == nil || !inv.HasProject {
		return nil, failure.New(failure.InvalidArguments, "session_id is required")
	}
	return inv.Session, nil
}

func (t *tools) open(ctx context.Context, inv *kernel.Invocation, in OpenInput) (OpenOutput, error) {
	sess, err := sessionOf(inv)
	if err != nil {
		return OpenOutput{}, err
	}
	inv.Fact("action", "open")
	out := OpenOutput{ShellSource: "explicit"}
	sh := in.Shell
	switch {
	case sh != "":
		if sh != workflow.ShellSh && sh != workflow.ShellBash {
			return OpenOutput{}, failure.New(failure.InvalidArguments, "shell must be sh or bash")
		}
	case sess.ExecutionContext.DefaultShell != "":
		sh, out.ShellSource = sess.ExecutionContext.DefaultShell, "session_default"
	default:
		sh, out.ShellSource = workflow.ShellSh, "default"
	}
	args := openArgs{SessionID: sess.ID, Project: inv.Project.ID, Shell: shell.Dialect(sh), Sandbox: runner.Mode(inv.Project.Sandbox)}
	if ssh := command.SSHTarget(inv, in.Cwd); ssh != nil {
		// A remote path, checked on the runner.
		args.Resource, args.RemoteCwd = ssh.Resource, ssh.Cwd
		switch {
		case in.Cwd != "":
			out.CwdSource = command.CwdExplicit
		case ssh.Cwd != "":
			out.CwdSource = command.CwdSessionDefault
		default:
			out.CwdSource = command.CwdDefault
		}
		inv.Fact("resource", ssh.Resource)
	} else {
		abs, source, err := command.CwdSource(inv, in.Cwd)
		if err != nil {
			return OpenOutput{}, err
		}
		if args.Cwd, err = inv.Project.Rel(abs); err != nil {
			return OpenOutput{}, failure.New(failure.PermissionDenied, "cwd is outside the project")
		}
		out.CwdSource = source
	}
	inv.Fact("shell", string(sh))
	info, err := workspace.Do(ctx, t.runners.For(inv.Project), inv.Project, openOp, args)
	if err != nil {
		if id, ok := failure.DetailOf(err)["shell_id"].(string); ok {
			inv.Fact("shell_id", id)
		}
		return OpenOutput{}, err
	}
	inv.Fact("shell_id", info.ShellID)
	inv.Fact("state", string(info.State))
	inv.Fact("sandbox", string(info.Sandbox))
	out.Shell = view(info)
	return out, nil
}

func (t *tools) exec(ctx context.Context, inv *kernel.Invocation, in ExecInput) (ExecOutput, error) {
	sess, err := sessionOf(inv)
	if err != nil {
		return ExecOutput{}, err
	}
	inv.Fact("action", "exec")
	factShellID(inv, in.ShellID)
	exp := in.ResultExpectation
	if exp == "" {
		exp = ExpectSuccess
	}
	if exp != ExpectSuccess && exp != ExpectFailure && exp != ExpectObserve {
		return ExecOutput{}, failure.New(failure.InvalidArguments, "result_expectation must be success, failure or observe")
	}
	timeout := DefaultTimeoutSeconds
	if in.TimeoutSeconds != nil {
		timeout = *in.TimeoutSeconds
	}
	if timeout < 1 || timeout > MaxTimeoutSeconds {
		return ExecOutput{}, failure.New(failure.InvalidArguments, "timeout_seconds must be 1-%d", MaxTimeoutSeconds)
	}
	inv.Fact("expectation", string(exp))
	if err := shell.ValidateCommand(in.Command); err != nil {
		return ExecOutput{}, err
	}
	if err := shell.ValidateID(in.ShellID); err != nil {
		return ExecOutput{}, err
	}
	ran, err := workspace.Do(ctx, t.runners.For(inv.Project), inv.Project, execOp, execArgs{
		ShellID: in.ShellID, SessionID: sess.ID, Command: in.Command, TimeoutSeconds: timeout,
		Resource: sess.ExecutionContext.Resource,
	})
	res := ran.Result // zero when refused, or when a runner's answer was lost: nothing to report as run
	if err == nil {
		res, err = ran.outcome()
	}
	out := ExecOutput{
		ShellID: in.ShellID, ExitCode: res.ExitCode, TimedOut: res.TimedOut, ShellExited: res.ShellExited,
		ShellState: string(res.State), DurationMS: res.Duration.Milliseconds(), Cwd: res.Cwd,
		CwdOutsideProject: res.CwdOutsideProject, Stdout: res.Stdout, Stderr: res.Stderr,
		Expectation: ExpectationResult{Declared: exp}, Sandbox: string(res.Sandbox),
	}
	if res.Sandbox != "" {
		inv.Fact("sandbox", string(res.Sandbox))
	}
	switch {
	case res.TimedOut:
		out.Ending = EndingTimedOut
	case res.Cancelled:
		out.Ending = EndingCancelled
	case res.ShellExited:
		out.Ending = EndingShellExited
	default:
		out.Ending = EndingExited
	}
	if err != nil {
		reset := failure.Is(err, failure.ShellResetRequired)
		if reset {
			inv.Fact("reset_required", "true")
		}
		var fe *failure.Error
		if res.State == "" || !errors.As(err, &fe) {
			return ExecOutput{}, err // refused before anything ran
		}
		// The command ran, but the shell was lost or closed meanwhile.
		inv.Fact("state", string(res.State))
		inv.Fact("ending", out.Ending)
		inv.Fact("timed_out", strconv.FormatBool(res.TimedOut))
		inv.Fact("reset_required", strconv.FormatBool(reset))
		return ExecOutput{}, fe.WithDetail("execution", out).WithDetail("state_changed", true)
	}
	// The result is the command's real outcome (exit code 0 of a command
	// that completed); the expectation only says whether it was declared.
	completed := out.Ending == EndingExited || out.Ending == EndingShellExited
	ok := completed && res.ExitCode == 0
	out.Expectation.Matched = command.Expectation(exp).Met(completed, ok)
	inv.Fact("state", string(res.State))
	inv.Fact("exit_code", strconv.Itoa(res.ExitCode))
	inv.Fact("ending", out.Ending)
	inv.Fact("timed_out", strconv.FormatBool(res.TimedOut))
	inv.Fact("shell_exited", strconv.FormatBool(res.ShellExited))
	inv.Fact("reset_required", "false")
	inv.Fact("expectation_matched", strconv.FormatBool(out.Expectation.Matched))
	if ok {
		return out, nil
	}
	var ferr *failure.Error
	switch out.Ending {
	case EndingTimedOut:
		ferr = failure.New(failure.TimedOut, "timed out after %ds; the command was interrupted and the shell is %s", timeout, res.State)
	case EndingCancelled:
		ferr = failure.New(failure.Cancelled, "cancelled; the command was interrupted and the shell is %s", res.State)
	default:
		ferr = failure.New(failure.CommandFailed, "exit code %d", res.ExitCode)
		if out.Expectation.Matched {
			ferr.Message += fmt.Sprintf(" (as declared: the %s expectation was met)", exp)
		}
		if res.ShellExited {
			ferr.Message += "; the command ended the shell, open a new one"
		}
	}
	return ExecOutput{}, ferr.WithDetail("execution", out).WithDetail("state_changed", true)
}

func (t *tools) status(ctx context.Context, inv *kernel.Invocation, in RefInput) (ShellView, error) {
	sess, err := sessionOf(inv)
	if err != nil {
		return ShellView{}, err
	}
	info, err := workspace.Do(ctx, t.runners.For(inv.Project), inv.Project, statusOp, refArgs{ShellID: in.ShellID, SessionID: sess.ID})
	if err != nil {
		return ShellView{}, err
	}
	return view(info), nil
}

func (t *tools) close(ctx context.Context, inv *kernel.Invocation, in RefInput) (CloseOutput, error) {
	sess, err := sessionOf(inv)
	if err != nil {
		return CloseOutput{}, err
	}
	inv.Fact("action", "close")
	factShellID(inv, in.ShellID)
	closed, err := workspace.Do(ctx, t.runners.For(inv.Project), inv.Project, closeOp, refArgs{ShellID: in.ShellID, SessionID: sess.ID})
	if err != nil {
		return CloseOutput{}, err
	}
	info, changed := closed.Info, closed.Changed
	inv.Fact("state", string(info.State))
	inv.Fact("changed", strconv.FormatBool(changed))
	return CloseOutput{Shell: view(info), Changed: changed}, nil
}
