package sessionshell

import (
	"context"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/webcodex/webcodex/internal/command"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/shell"
	"github.com/webcodex/webcodex/internal/workspace"
)

// The persistent-shell operations run where the project's files are, on
// the shell Manager of that machine (workspace.Env.Shells): the server's
// for a local project, the runner's own for a runner's project, so the
// shell lives in the runner process, confined by the runner's sandbox and
// project roots, and outlives a reconnect of that process. A restarted
// runner has lost its shells: their ids answer not_found.
//
// With an SSH resource selected on the session, the shell runs on the
// resource (shell.Remote, connected by the runner's Env.RemoteShell), and
// only its name travels; each exec names the session's current resource,
// and a shell that does not run there refuses the command
// (resource_not_allowed) before anything runs.

// openArgs are the arguments of shell.open.
type openArgs struct {
	SessionID string `json:"session_id"`
	// Project is the caller's project id, shown in the shell's Info.
	Project string `json:"project"`
	// Cwd is the initial directory, project-relative.
	Cwd   string        `json:"cwd"`
	Shell shell.Dialect `json:"shell"`
	// Sandbox is the project's sandbox mode ("" the machine's default).
	Sandbox runner.Mode `json:"sandbox,omitempty"`
	// Resource, when set, opens the shell on that SSH resource of the
	// machine, in RemoteCwd (the call's or the session's remote cwd; ""
	// leaves it to the resource); Cwd is then unused.
	Resource  string `json:"resource,omitempty"`
	RemoteCwd string `json:"remote_cwd,omitempty"`
}

// execArgs are the arguments of shell.exec.
type execArgs struct {
	ShellID        string `json:"shell_id"`
	SessionID      string `json:"session_id"`
	Command        string `json:"command"`
	TimeoutSeconds int    `json:"timeout_seconds"`
	// Resource is the SSH resource the session selects now ("" none):
	// the shell must run there.
	Resource string `json:"resource,omitempty"`
}

// execResult is the result of shell.exec: the command's Result and, when
// the command ran but the shell was lost or closed meanwhile, that
// failure's kind and message (a command refused before it ran is the
// operation's error instead).
type execResult struct {
	Result  shell.Result
	Kind    failure.Kind `json:",omitempty"`
	Message string       `json:",omitempty"`
}

// refArgs name one shell of a session.
type refArgs struct {
	ShellID   string `json:"shell_id"`
	SessionID string `json:"session_id"`
}

// closeResult is the result of shell.close.
type closeResult struct {
	Info    shell.Info
	Changed bool
}

// sessionArgs name a session (shell.close_session).
type sessionArgs struct {
	SessionID string `json:"session_id"`
}

// closedResult is the result of shell.close_session.
type closedResult struct {
	Closed bool `json:"closed"`
}

var (
	openOp         = workspace.NewOp("shell.open", openShell)
	execOp         = workspace.NewOp("shell.exec", execShell)
	statusOp       = workspace.NewOp("shell.status", statusShell)
	closeOp        = workspace.NewOp("shell.close", closeShell)
	closeSessionOp = workspace.NewOp("shell.close_session", closeSessionShell)
)

// Ops are the persistent-shell operations a runner serves.
func Ops() []workspace.Served {
	return []workspace.Served{openOp, execOp, statusOp, closeOp, closeSessionOp}
}

// CloseSession closes the live shell a session holds on the machine r
// serving p, if any (session close); it reports whether one was closed.
func CloseSession(ctx context.Context, r workspace.Runner, p project.Project, sessionID string) (bool, error) {
	out, err := workspace.Do(ctx, r, p, closeSessionOp, sessionArgs{SessionID: sessionID})
	return out.Closed, err
}

// shells is the Manager of env, unavailable when that machine keeps none.
func shells(env workspace.Env) (*shell.Manager, error) {
	if env.Shells == nil {
		return nil, failure.New(failure.Unavailable, "persistent shells are not served here")
	}
	return env.Shells, nil
}

func openShell(ctx context.Context, env workspace.Env, p project.Project, in openArgs) (shell.Info, error) {
	m, err := shells(env)
	if err != nil {
		return shell.Info{}, err
	}
	if in.Resource != "" {
		return openRemote(ctx, env, m, p, in)
	}
	// Confined here, against this machine's files.
	abs, clean, err := p.Resolve(in.Cwd)
	if err != nil {
		return shell.Info{}, err
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return shell.Info{}, failure.New(failure.InvalidArguments, "cwd %q is not an existing directory", clean)
	}
	return m.Open(ctx, shell.OpenSpec{
		SessionID: in.SessionID, Project: in.Project, ProjectRoot: p.Root, Cwd: abs, Shell: in.Shell,
		Sandbox: command.ProjectSandbox(p, in.Sandbox),
	})
}

// openRemote opens a shell on the SSH resource in.Resource; its local
// process (the ssh client) starts in the project root.
func openRemote(ctx context.Context, env workspace.Env, m *shell.Manager, p project.Project, in openArgs) (shell.Info, error) {
	if env.RemoteShell == nil {
		return shell.Info{}, failure.New(failure.ResourceNotAllowed, "this machine has no SSH resources")
	}
	rem, err := env.RemoteShell(ctx, runner.SSH{Resource: in.Resource, Session: in.SessionID, Cwd: in.RemoteCwd})
	if err != nil {
		return shell.Info{}, err
	}
	return m.Open(ctx, shell.OpenSpec{
		SessionID: in.SessionID, Project: in.Project, ProjectRoot: p.Root, Cwd: p.Root, Shell: in.Shell,
		Sandbox: command.ProjectSandbox(p, in.Sandbox), Remote: rem,
	})
}

func execShell(ctx context.Context, env workspace.Env, _ project.Project, in execArgs) (execResult, error) {
	m, err := shells(env)
	if err != nil {
		return execResult{}, err
	}
	// A shell runs where it was opened, for good: never elsewhere than
	// the session now selects.
	info, err := m.Status(in.ShellID, in.SessionID)
	if err != nil {
		return execResult{}, err
	}
	if info.Resource != in.Resource {
		return execResult{}, failure.New(failure.ResourceNotAllowed, "shell %s runs on %s, but the session now selects %s; "+
			"open a new shell (or select that again with update_session_context)", info.ShellID, where(info.Resource), where(in.Resource))
	}
	res, err := m.Exec(ctx, in.ShellID, in.SessionID, in.Command, time.Duration(in.TimeoutSeconds)*time.Second)
	if err != nil && res.State == "" {
		return execResult{}, err // refused before anything ran
	}
	out := execResult{Result: res}
	if err != nil {
		out.Kind, out.Message = failure.KindOf(err), failure.MessageOf(err)
	}
	return out, nil
}

// where names a shell's place in a message: an SSH resource by name, or
// the project's machine.
func where(resource string) string {
	if resource == "" {
		return "the project's machine (no SSH resource)"
	}
	return "SSH resource " + strconv.Quote(resource)
}

// outcome is the command's Result and the Manager's error, as
// Manager.Exec returns them, from an execResult (which may come from a
// runner: an unknown kind is internal, never a success).
func (r execResult) outcome() (shell.Result, error) {
	if r.Kind == "" {
		return r.Result, nil
	}
	if !slices.Contains(failure.Kinds, r.Kind) {
		return r.Result, failure.New(failure.Internal, "the shell reported an unknown failure kind")
	}
	return r.Result, failure.New(r.Kind, "%s", r.Message)
}

func statusShell(_ context.Context, env workspace.Env, _ project.Project, in refArgs) (shell.Info, error) {
	m, err := shells(env)
	if err != nil {
		return shell.Info{}, err
	}
	return m.Status(in.ShellID, in.SessionID)
}

func closeShell(_ context.Context, env workspace.Env, _ project.Project, in refArgs) (closeResult, error) {
	m, err := shells(env)
	if err != nil {
		return closeResult{}, err
	}
	info, changed, err := m.CloseShell(in.ShellID, in.SessionID)
	return closeResult{Info: info, Changed: changed}, err
}

func closeSessionShell(_ context.Context, env workspace.Env, _ project.Project, in sessionArgs) (closedResult, error) {
	m, err := shells(env)
	if err != nil {
		return closedResult{}, err
	}
	if in.SessionID == "" {
		return closedResult{}, failure.New(failure.InvalidArguments, "a session is required")
	}
	return closedResult{Closed: m.CloseSession(in.SessionID)}, nil
}
