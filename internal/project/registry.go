package project

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
)

// A Registry registers local projects over a [Store]. It is safe for
// concurrent use when its Store is.
type Registry struct {
	store Store
	now   func() time.Time
}

// NewRegistry returns a Registry over store. now is the clock used for
// AddedAt; nil means time.Now.
func NewRegistry(store Store, now func() time.Time) *Registry {
	if now == nil {
		now = time.Now
	}
	return &Registry{store: store, now: now}
}

// Register registers the directory dir as the local project name and returns
// the stored project.
//
// An empty name defaults to [NameFromDir] of the canonical root. The root is
// [CanonicalRoot] of dir and the id is [LocalID] of the name. Registering the
// same name with the same root again succeeds and returns the project as
// first registered (original AddedAt).
//
// Errors: [failure.InvalidArguments] for an invalid name or a dir that is
// empty or not an existing directory; [failure.Conflict] when the name is registered with
// a different root.
func (r *Registry) Register(ctx context.Context, name, dir string) (Project, error) {
	return r.RegisterSandboxed(ctx, name, dir, "")
}

// RegisterSandboxed is Register with the project's sandbox mode
// (workspace-write, read-only or off; "" keeps the registered mode, or
// the server's default for a new project). Registering the same name and
// root again with a mode sets it. Errors as Register, and
// [failure.InvalidArguments] for an unknown mode.
func (r *Registry) RegisterSandboxed(ctx context.Context, name, dir, sandbox string) (Project, error) {
	if _, err := runner.ParseMode(sandbox); err != nil {
		return Project{}, failure.New(failure.InvalidArguments, "%v", err)
	}
	if dir == "" {
		return Project{}, failure.New(failure.InvalidArguments, "project directory must not be empty")
	}
	root, err := CanonicalRoot(dir)
	if err != nil {
		return Project{}, err
	}
	if name == "" {
		name = NameFromDir(root)
	}
	if err := ValidateName(name); err != nil {
		return Project{}, err
	}
	p := Project{
		ID:      LocalID(name),
		Name:    name,
		Root:    root,
		AddedAt: r.now().UTC().Round(0),
		Sandbox: sandbox,
	}
	if err := r.store.Add(ctx, p); err != nil {
		return Project{}, err
	}
	return r.store.Get(ctx, p.ID)
}

// RegisterWorktree registers the managed worktree dir of the source
// project source at commit base as the local project name, with the
// source's sandbox mode. Errors as RegisterSandboxed; registering a name
// that is taken, whatever its root, is [failure.Conflict] (a worktree is
// always new).
func (r *Registry) RegisterWorktree(ctx context.Context, name, dir string, source Project, base string) (Project, error) {
	root, err := CanonicalRoot(dir)
	if err != nil {
		return Project{}, err
	}
	if err := ValidateName(name); err != nil {
		return Project{}, err
	}
	if _, err := r.store.Get(ctx, LocalID(name)); err == nil {
		return Project{}, failure.New(failure.Conflict, "project %s is already registered", LocalID(name))
	}
	p := Project{
		ID: LocalID(name), Name: name, Root: root, AddedAt: r.now().UTC().Round(0),
		Sandbox: source.Sandbox, Source: source.ID, BaseCommit: base,
	}
	if err := r.store.Add(ctx, p); err != nil {
		return Project{}, err
	}
	return r.store.Get(ctx, p.ID)
}

// Unregister removes the project with the exact id. It never touches the
// project's files. Errors: [failure.UnknownProject] when absent.
func (r *Registry) Unregister(ctx context.Context, id string) error {
	return r.store.Remove(ctx, id)
}

// Get returns the project with the exact id. Errors:
// [failure.UnknownProject] when absent.
func (r *Registry) Get(ctx context.Context, id string) (Project, error) {
	return r.store.Get(ctx, id)
}

// List returns every registered project ordered by id.
func (r *Registry) List(ctx context.Context) ([]Project, error) {
	return r.store.List(ctx)
}

// ParseSpec splits a command-line project spec of the form "DIR" or
// "NAME=DIR". The text before the first '=' is taken as a name only when it
// is a valid project name, so a directory whose path contains '=' can still
// be given (write "./a=b" for a relative one whose prefix would be a valid
// name). Without a name, name is [NameFromDir] of the absolute form of dir.
// ParseSpec does not validate that dir exists; [Registry.Register] does.
func ParseSpec(spec string) (name, dir string) {
	if i := strings.IndexByte(spec, '='); i > 0 && ValidateName(spec[:i]) == nil {
		return spec[:i], spec[i+1:]
	}
	abs, err := filepath.Abs(spec)
	if err != nil {
		abs = spec
	}
	return NameFromDir(abs), spec
}

// RegisterRunner registers the project name that the runner clientID, whose
// token belongs to the authority group owner, serves at root on its own
// machine, and returns the stored project (id [RunnerID]). The runner is
// the authority over its projects: announcing a name again with another
// root moves the registration there. Nothing is checked on this host's
// filesystem; the runner applies its own path policy to every request.
//
// Errors: [failure.InvalidArguments] for an invalid client id, owner, name
// or root; [failure.PermissionDenied] when the id is registered for another
// runner or owner.
func (r *Registry) RegisterRunner(ctx context.Context, clientID, owner, name, root string) (Project, error) {
	if err := ValidateName(clientID); err != nil {
		return Project{}, err
	}
	if err := ValidateName(name); err != nil {
		return Project{}, err
	}
	if owner == "" || root == "" || len(root) > MaxPathBytes {
		return Project{}, failure.New(failure.InvalidArguments, "a runner project needs an owner and a root of 1-%d bytes", MaxPathBytes)
	}
	p := Project{ID: RunnerID(clientID, name), Name: name, Root: root, AddedAt: r.now().UTC().Round(0),
		Runner: clientID, Owner: owner}
	old, err := r.store.Get(ctx, p.ID)
	switch {
	case err == nil && (old.Runner != clientID || old.Owner != owner):
		return Project{}, failure.New(failure.PermissionDenied, "project %s belongs to another runner or owner", p.ID)
	case err == nil && old.Root == root:
		return old, nil
	case err == nil:
		if err := r.store.Remove(ctx, p.ID); err != nil && !failure.Is(err, failure.UnknownProject) {
			return Project{}, err
		}
	case !failure.Is(err, failure.UnknownProject):
		return Project{}, err
	}
	if err := r.store.Add(ctx, p); err != nil {
		return Project{}, err
	}
	return r.store.Get(ctx, p.ID)
}
