// Package command is the policy every tool that starts a process shares:
// the bounds of a command request, its validation (command text, shell,
// timeout, purpose, result expectation), the working directory of a run
// (explicit, else the business session's default, else the project root;
// never outside the project), and the job description of a run.
//
// It decides these once so that the run, job, shell and validation tools
// cannot disagree; none of those tool packages imports another.
package command

import (
	"os"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/gitrepo"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/workflow"
)

// Bounds of a command request.
const (
	// MaxShellBytes bounds run_shell text (and, in the shell tools,
	// session_shell_exec) in UTF-8 bytes.
	MaxShellBytes = 16000
	// MaxAcceptedExitCodes bounds accepted_exit_codes.
	MaxAcceptedExitCodes = 16
	// MaxPurposeChars bounds purpose.
	MaxPurposeChars = 64
	// DefaultTimeoutSeconds is the timeout when a call sets none.
	DefaultTimeoutSeconds = 120
)

// Expectation is a pre-declared result expectation.
type Expectation = jobs.Expectation

// Expectations: success (default) requires an accepted exit code; failure
// expects a completed run with another exit code; observe accepts any
// completed run. A timeout, cancellation or kill never matches. They decide
// only Output.Expectation (and the ledger's classification), never the
// call's success, exit code or error.
const (
	ExpectSuccess = jobs.ExpectSuccess
	ExpectFailure = jobs.ExpectFailure
	ExpectObserve = jobs.ExpectObserve
)

// ValidateCommand checks run_shell / run_job command text.
func ValidateCommand(cmd string) error {
	if cmd == "" || len(cmd) > MaxShellBytes || !utf8.ValidString(cmd) {
		return failure.New(failure.InvalidArguments, "command must be 1-%d bytes of UTF-8", MaxShellBytes)
	}
	return nil
}

// SelectShell returns the shell of a run: the explicit one, else the
// business session's default_shell, else sh.
func SelectShell(inv *kernel.Invocation, explicit workflow.Shell) (workflow.Shell, error) {
	sh := explicit
	if sh == "" && inv.Session != nil {
		sh = inv.Session.ExecutionContext.DefaultShell
	}
	if sh == "" {
		sh = workflow.ShellSh
	}
	if sh != workflow.ShellSh && sh != workflow.ShellBash {
		return "", failure.New(failure.InvalidArguments, "shell must be sh or bash")
	}
	return sh, nil
}

// TimeoutSeconds returns the timeout a call asked for (def when given is
// nil), checked against runner.MaxTimeout.
func TimeoutSeconds(given *int, def int) (int, error) {
	timeout := def
	if given != nil {
		timeout = *given
	}
	if timeout < 1 || time.Duration(timeout)*time.Second > runner.MaxTimeout {
		return 0, failure.New(failure.InvalidArguments, "timeout_seconds must be 1-%d", int(runner.MaxTimeout/time.Second))
	}
	return timeout, nil
}

// ValidatePurpose checks a purpose.
func ValidatePurpose(p string) error {
	if utf8.RuneCountInString(p) > MaxPurposeChars {
		return failure.New(failure.InvalidArguments, "purpose is longer than %d characters", MaxPurposeChars)
	}
	return nil
}

// ValidateExpectation checks a declared expectation and returns it with
// its default.
func ValidateExpectation(e Expectation) (Expectation, error) {
	if e == "" {
		return ExpectSuccess, nil
	}
	if !e.Valid() {
		return "", failure.New(failure.InvalidArguments, "result_expectation must be success, failure or observe")
	}
	return e, nil
}

// Where a resolved working directory came from (CwdSource).
const (
	CwdExplicit       = "explicit"
	CwdSessionDefault = "session_default"
	CwdDefault        = "default"
)

// ResolveCwd resolves the absolute working directory of a run: the
// explicit one, else the business session's default, else the project
// root. It must exist inside the project and be a directory.
func ResolveCwd(inv *kernel.Invocation, explicit string) (string, error) {
	abs, _, err := CwdSource(inv, explicit)
	return abs, err
}

// CwdSource is ResolveCwd that also says where the directory came from
// (CwdExplicit, CwdSessionDefault or CwdDefault). An unusable session
// default is failure.InvalidExecutionContext, never a fallback to the
// project root.
func CwdSource(inv *kernel.Invocation, explicit string) (abs, source string, err error) {
	rel, source := explicit, CwdExplicit
	switch {
	case rel != "":
	case inv.Session != nil && inv.Session.ExecutionContext.DefaultCwd != "":
		rel, source = inv.Session.ExecutionContext.DefaultCwd, CwdSessionDefault
	default:
		rel, source = ".", CwdDefault
	}
	abs, clean, err := inv.Project.Resolve(rel)
	if err == nil && inv.Project.Runner == "" { // a runner checks its own
		if st, serr := os.Stat(abs); serr != nil || !st.IsDir() {
			err = failure.New(failure.InvalidArguments, "cwd %q is not an existing directory", clean)
		}
	}
	if err != nil {
		if source == CwdSessionDefault {
			return "", "", failure.New(failure.InvalidExecutionContext, "the session's default_cwd %q cannot be used: %s", rel, failure.MessageOf(err))
		}
		return "", "", err
	}
	return abs, source, nil
}

// Sandbox is what a process started by inv asks of its sandbox: the
// project's mode (empty: the server's default) over the project's root.
// A managed worktree's process may also write, when it may write the
// worktree, what git commit there needs in the source's git directory
// ([gitrepo.WorktreeGrants]): its administrative directory and the
// repository's objects, refs and logs. For a runner's project those
// grants are the runner's to compute from its own files: the server never
// reads a path of another machine.
func Sandbox(inv *kernel.Invocation) runner.Sandbox {
	if inv.Project.Runner != "" {
		return runner.Sandbox{Mode: runner.Mode(inv.Project.Sandbox), Project: inv.Project.Root}
	}
	return ProjectSandbox(inv.Project, runner.Mode(inv.Project.Sandbox))
}

// ProjectSandbox is Sandbox for a process of project p under mode, built
// where p's files are (a runner builds it against its own project).
func ProjectSandbox(p project.Project, mode runner.Mode) runner.Sandbox {
	sb := runner.Sandbox{Mode: mode, Project: p.Root}
	if p.Worktree() {
		sb.ProjectWrite = gitrepo.WorktreeGrants(p.Root)
	}
	return sb
}

// StartSpec builds the job description of a run made by inv.
func StartSpec(inv *kernel.Invocation, cwdRel, purpose string, exp Expectation, accepted []int, background bool, spec runner.Spec) jobs.StartSpec {
	s := jobs.StartSpec{
		Project: inv.Project.ID, Principal: inv.Principal.AuthorityFingerprint(), Tool: inv.Tool,
		Purpose: purpose, Cwd: cwdRel, Background: background, Expectation: exp,
		AcceptedExitCodes: accepted, Run: spec,
	}
	if inv.Session != nil {
		s.SessionID = inv.Session.ID
	}
	return s
}

// SSHTarget is where a shell command of a call runs when its business
// session selected an SSH resource (nil when it did not): the resource, the
// session, and the remote cwd: the call's explicit one, else the session's
// default_cwd (a remote path), else "" (the resource's default, then the
// login directory, decided on the runner).
func SSHTarget(inv *kernel.Invocation, explicitCwd string) *runner.SSH {
	if inv.Session == nil || inv.Session.ExecutionContext.Resource == "" {
		return nil
	}
	cwd := explicitCwd
	if cwd == "" {
		cwd = inv.Session.ExecutionContext.DefaultCwd
	}
	return &runner.SSH{Resource: inv.Session.ExecutionContext.Resource, Session: inv.Session.ID, Cwd: cwd}
}

// RefuseResource fails a tool that never runs through an SSH resource
// (run_process, run_script, the validation tools) when the call's business
// session selected one, rather than running it on the runner's host
// instead: failure.ResourceNotAllowed, before anything starts.
func RefuseResource(inv *kernel.Invocation, tool string) error {
	if inv.Session == nil || inv.Session.ExecutionContext.Resource == "" {
		return nil
	}
	return failure.New(failure.ResourceNotAllowed, "the session selected SSH resource %q, and %s never runs through one: use run_shell, or clear the resource with update_session_context",
		inv.Session.ExecutionContext.Resource, tool)
}
