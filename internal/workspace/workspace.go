// Package workspace is the runner boundary: everything that touches a
// project's files or starts a process goes through the [Runner] that serves
// the project.
//
// The in-process runner ([Local]) serves the projects of this host: an
// operation runs here, a process starts through the local execution host.
// A remote runner (a `webcodex runner` on another machine, package
// runnerhub) serves the projects it announced: an operation travels as a
// request with its arguments in JSON and runs there, with the same code,
// against that machine's files.
//
// An operation is the effect half of a tool, declared once with [NewOp] by
// the tool that needs it. The tool calls it with [Do] and never learns
// which runner served it; a runner serves the operations it is given
// ([Served]) and imports no tool.
package workspace

import (
	"context"
	"encoding/json"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/lsp"
	"github.com/webcodex/webcodex/internal/mcpprovider"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/runnerwire"
	"github.com/webcodex/webcodex/internal/shell"
)

// LocalID is the id of the in-process runner.
const LocalID = "local"

// A Runner serves one machine's projects: the processes started there
// (runner.Host) and the operations run there.
type Runner interface {
	runner.Host
	// ID is LocalID for the in-process runner and the client id of a
	// remote one.
	ID() string
}

// A Remote is a runner on another machine. Invoke runs the operation
// named op on project p with JSON arguments and returns its JSON result;
// a failure carries the kind the runner reported, runner_unavailable when
// nothing was sent, and outcome_unknown when the request was sent and its
// answer was lost.
type Remote interface {
	Runner
	Invoke(ctx context.Context, p project.Project, op string, args []byte) ([]byte, error)
}

// Local is the in-process runner. Shells, when set, is this host's
// persistent-shell Manager, and Navigator its language-server Manager,
// Providers its MCP-provider Manager, handed to the operations it runs
// (Env.Shells, Env.Navigator, Env.Providers).
type Local struct {
	runner.Host
	Shells    *shell.Manager
	Navigator *lsp.Manager
	Providers *mcpprovider.Manager
}

// ID implements Runner.
func (Local) ID() string { return LocalID }

// InForce is the sandbox mode a process started with req runs under here.
func (l Local) InForce(req runner.Sandbox) runner.Mode { return runner.InForce(l.Host, req) }

// Runners finds the runner serving a project.
type Runners interface {
	For(p project.Project) Runner
}

// Resolver is the Runners of a server: local projects go to Local, a
// runner's projects to Remote(client id).
type Resolver struct {
	Local  Runner
	Remote func(clientID string) Runner
}

// For implements Runners.
func (r Resolver) For(p project.Project) Runner {
	if p.Runner == "" || r.Remote == nil {
		return r.Local
	}
	return r.Remote(p.Runner)
}

// Env is what an operation runs with, where it runs: the host its
// processes (git, ...) start on, that machine's own.
type Env struct {
	Host runner.Host
	// Shells is the persistent-shell Manager of the machine the operation
	// runs on (the server's for a local project, the runner's own for a
	// runner's project): the shells live in that process and are
	// confined by its sandbox. nil where none is kept; an operation that
	// needs one then fails unavailable.
	Shells *shell.Manager
	// RemoteShell connects a persistent shell to one of this machine's
	// SSH resources (a runner's): target names the resource, the session
	// and the remote cwd the call chose; the result binds every ssh
	// invocation of the shell to the connection of that session and
	// resource at the generation of the request. nil where there are no
	// resources; an operation that needs one then fails
	// resource_not_allowed.
	RemoteShell func(ctx context.Context, target runner.SSH) (*shell.Remote, error)
	// Navigator is the language-server Manager of the machine the
	// operation runs on: its servers live in that process, next to the
	// project's files. nil where none is kept; an operation that needs
	// one then fails unavailable.
	Navigator *lsp.Manager
	// SkillRoots are the machine's own Agent Skills directories (a
	// runner's runner.toml [skills] roots), listed with every project's
	// skills; none on the server.
	SkillRoots []string
	// Providers is the MCP-provider Manager of the machine the operation
	// runs on (its configured stdio MCP servers run there, next to the
	// project's files). nil where none is kept; an operation that needs
	// one then fails unavailable.
	Providers *mcpprovider.Manager
}

// Served is an operation a runner serves for remote callers: Serve decodes
// the arguments strictly, runs the operation against p with env and
// encodes its result.
type Served interface {
	Name() string
	Serve(ctx context.Context, env Env, p project.Project, args []byte) ([]byte, error)
}

// An Op is an operation with typed arguments and result.
type Op[In, Out any] struct {
	name string
	run  func(context.Context, Env, project.Project, In) (Out, error)
}

// NewOp declares the operation name, run against a project where its files
// are.
func NewOp[In, Out any](name string, run func(context.Context, Env, project.Project, In) (Out, error)) *Op[In, Out] {
	return &Op[In, Out]{name: name, run: run}
}

// Name implements Served.
func (o *Op[In, Out]) Name() string { return o.name }

// Serve implements Served.
func (o *Op[In, Out]) Serve(ctx context.Context, env Env, p project.Project, args []byte) ([]byte, error) {
	var in In
	if err := runnerwire.Strict(args, &in); err != nil {
		return nil, failure.Wrap(failure.InvalidArguments, err, "%s: the arguments do not decode", o.name)
	}
	out, err := o.run(ctx, env, p, in)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// Do runs op for project p on r: in this process when r is local, as a
// request to the runner when it is remote.
func Do[In, Out any](ctx context.Context, r Runner, p project.Project, op *Op[In, Out], in In) (Out, error) {
	rem, ok := r.(Remote)
	if !ok {
		env := Env{Host: r}
		if l, ok := r.(Local); ok {
			env.Shells, env.Navigator, env.Providers = l.Shells, l.Navigator, l.Providers
		}
		return op.run(ctx, env, p, in)
	}
	var out Out
	args, err := json.Marshal(in)
	if err != nil {
		return out, failure.Wrap(failure.Internal, err, "%s: encode the arguments", op.name)
	}
	res, err := rem.Invoke(ctx, p, op.name, args)
	if err != nil {
		return out, err
	}
	if err := runnerwire.Strict(res, &out); err != nil {
		return out, failure.Wrap(failure.OutcomeUnknown, err, "%s: the runner's result does not decode", op.name)
	}
	return out, nil
}

// MaxScriptBytes is the largest script body (runner.Spec.Script) r takes
// with a process start: runner.MaxScriptBytes in process,
// runnerwire.MaxScriptBytes through a remote runner, where the body
// travels inside the start request.
func MaxScriptBytes(r Runner) int {
	if _, ok := r.(Remote); ok {
		return runnerwire.MaxScriptBytes
	}
	return runner.MaxScriptBytes
}

// LocalOnly is the Runners of a host that serves no remote runner: every
// project goes to h.
func LocalOnly(h runner.Host) Resolver { return Resolver{Local: Local{Host: h}} }
