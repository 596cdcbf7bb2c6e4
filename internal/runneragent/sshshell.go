package runneragent

import (
	"context"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/shell"
	"github.com/webcodex/webcodex/internal/sshresource"
)

// remoteShell returns the connector of persistent shells to this runner's
// SSH resources for requests of connection generation gen
// (workspace.Env.RemoteShell). The shell is bound to the master of its
// session, resource and gen as it was when the shell opened: its ssh
// client and its signals go through that master, and when a newer
// generation retires it the shell is lost, never moved (internal/shell,
// remote.go). The remote cwd is the call's or session's, else the
// resource's default_cwd, else the login directory; nothing about the
// resource but its name leaves this machine.
func (a *Agent) remoteShell(gen uint64) func(ctx context.Context, target runner.SSH) (*shell.Remote, error) {
	return func(ctx context.Context, target runner.SSH) (*shell.Remote, error) {
		r, ok := a.resources[target.Resource]
		if !ok {
			return nil, failure.New(failure.ResourceNotAllowed, "this runner has no SSH resource %q", target.Resource)
		}
		cwd := sshresource.RemoteCwd(target.Cwd, "", r.DefaultCwd)
		if _, err := sshresource.RemoteCommand(cwd, ":"); err != nil {
			return nil, err
		}
		via, err := a.connection(ctx, gen, r, target.Session)
		if err != nil {
			return nil, err
		}
		in := func(dir string) func(string) ([]string, error) {
			return func(text string) ([]string, error) {
				remote, err := sshresource.RemoteCommand(dir, text)
				if err != nil {
					return nil, err
				}
				return via(remote)
			}
		}
		return &shell.Remote{Resource: r.Name, Cwd: target.Cwd, Argv: in(cwd), Command: in("")}, nil
	}
}
