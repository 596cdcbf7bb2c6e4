package worktree

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/gitrepo"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/workspace"
)

// RunnerDirName is the directory, inside the user's configuration
// directory of a runner's machine, that holds the managed worktrees the
// runner makes (decision 0065): <user config dir>/webcodex/runner-worktrees.
const RunnerDirName = "runner-worktrees"

// RunnerDir is where a `webcodex runner` keeps the managed worktrees of its
// projects: a directory of the runner's user, outside every project (so no
// project's processes can write another's worktree), with its symbolic
// links resolved (the path git records).
func RunnerDir() (string, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", failure.Wrap(failure.Unavailable, err, "this runner has no user configuration directory to keep worktrees in")
	}
	dir := filepath.Join(base, "webcodex", RunnerDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", failure.Wrap(failure.OperationFailed, err, "cannot create the runner's worktrees directory")
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", failure.Wrap(failure.OperationFailed, err, "cannot resolve the runner's worktrees directory")
	}
	return real, nil
}

// OfSource reports whether name is the name of a managed worktree made
// from the project named source (<source, at most 52 characters>-wt-<suffix>).
func OfSource(name, source string) bool {
	if len(source) > maxSourceNameChars {
		source = source[:maxSourceNameChars]
	}
	suffix, ok := strings.CutPrefix(name, source+"-wt-")
	return ok && suffix != "" && project.ValidateName(name) == nil
}

// Ops are the operations a runner serves for the managed worktrees of its
// projects; each runs against the source project, on the runner.
func Ops() []workspace.Served { return []workspace.Served{addOp, resolveOp, removeOp} }

// AddArgs are worktree.add's arguments: the new worktree's name (made by
// the server; OfSource of the source) and the ref to check out ("": HEAD).
type AddArgs struct {
	Name    string `json:"name"`
	BaseRef string `json:"base_ref,omitempty"`
}

// AddResult is worktree.add's result.
type AddResult struct {
	Root        string `json:"root"`
	BaseCommit  string `json:"base_commit"`
	SourceDirty bool   `json:"source_dirty"`
}

var addOp = workspace.NewOp("worktree.add", func(ctx context.Context, env workspace.Env, source project.Project, in AddArgs) (AddResult, error) {
	if !OfSource(in.Name, source.Name) {
		return AddResult{}, failure.New(failure.InvalidArguments, "%q is not a worktree name of project %s", in.Name, source.Name)
	}
	ctx, cancel := gitrepo.WithTimeout(ctx)
	defer cancel()
	repo, dirs, err := openSource(ctx, env.Host, source)
	if err != nil {
		return AddResult{}, err
	}
	ref := in.BaseRef
	if ref == "" {
		ref = "HEAD"
	}
	commit, err := repo.ResolveCommit(ctx, ref)
	if err != nil {
		return AddResult{}, err
	}
	st, _, err := repo.Status(ctx)
	if err != nil {
		return AddResult{}, err
	}
	dir, err := RunnerDir()
	if err != nil {
		return AddResult{}, err
	}
	path := filepath.Join(dir, in.Name)
	if err := repo.AddWorktree(ctx, dirs, path, commit); err != nil {
		return AddResult{}, err
	}
	return AddResult{Root: path, BaseCommit: commit, SourceDirty: !st.Clean}, nil
})

// ResolveArgs are worktree.resolve's arguments: the worktree's name and a
// ref to resolve in the source ("": none).
type ResolveArgs struct {
	Name string `json:"name"`
	Ref  string `json:"ref,omitempty"`
}

// ResolveResult is worktree.resolve's result ("" when no ref was given).
type ResolveResult struct {
	Commit string `json:"commit"`
}

var resolveOp = workspace.NewOp("worktree.resolve", func(ctx context.Context, env workspace.Env, source project.Project, in ResolveArgs) (ResolveResult, error) {
	path, err := runnerPath(source, in.Name)
	if err != nil {
		return ResolveResult{}, err
	}
	if st, err := os.Lstat(path); err != nil || !st.IsDir() {
		return ResolveResult{}, failure.New(failure.NotAGitCheckout, "the directory of worktree %s no longer exists", in.Name)
	}
	if in.Ref == "" {
		return ResolveResult{}, nil
	}
	ctx, cancel := gitrepo.WithTimeout(ctx)
	defer cancel()
	repo, _, err := openSource(ctx, env.Host, source)
	if err != nil {
		return ResolveResult{}, err
	}
	commit, err := repo.ResolveCommit(ctx, in.Ref)
	return ResolveResult{Commit: commit}, err
})

// RemoveArgs are worktree.remove's arguments. Check only checks that the
// worktree may be removed without force (see [Manager.CheckRemovable]).
type RemoveArgs struct {
	Name  string `json:"name"`
	Force bool   `json:"force,omitempty"`
	Check bool   `json:"check,omitempty"`
}

var removeOp = workspace.NewOp("worktree.remove", func(ctx context.Context, env workspace.Env, source project.Project, in RemoveArgs) (struct{}, error) {
	path, err := runnerPath(source, in.Name)
	if err != nil {
		return struct{}{}, err
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return struct{}{}, nil
	}
	if in.Check {
		return struct{}{}, checkClean(ctx, env.Host, path)
	}
	ctx, cancel := gitrepo.WithTimeout(ctx)
	defer cancel()
	_, dirs, err := openSource(ctx, env.Host, source)
	if err != nil {
		return struct{}{}, err
	}
	return struct{}{}, gitrepo.RemoveWorktree(ctx, env.Host, &dirs, path, in.Force)
})

// checkClean refuses, as a removal without force would, a worktree at
// path with changes or untracked files.
func checkClean(ctx context.Context, host runner.Host, path string) error {
	st, complete, err := gitrepo.ReadStatus(ctx, host, path)
	if err != nil {
		return err
	}
	if !complete || !st.Clean {
		return failure.New(failure.OperationFailed, "the worktree has changes or untracked files; commit or discard them first")
	}
	return nil
}

// CheckRemovable checks, changing nothing, that the managed worktree p
// may be removed without force: it has no changes or untracked files (or
// its directory is gone). A runner's worktree is checked on its runner.
//
// Errors: failure.NotAWorktree; operation_failed for a worktree with
// changes; runner_unavailable and outcome_unknown as any runner call.
func (m *Manager) CheckRemovable(ctx context.Context, p project.Project) error {
	if !p.Worktree() {
		return failure.New(failure.NotAWorktree, "project %s is not a managed worktree", p.ID)
	}
	if p.Runner == "" {
		if _, err := os.Lstat(p.Root); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return checkClean(ctx, m.Host, p.Root)
	}
	src, err := m.Projects.Get(ctx, p.Source)
	if err != nil {
		return err
	}
	r, err := m.runnerOf(src)
	if err != nil {
		return err
	}
	_, err = workspace.Do(ctx, r, src, removeOp, RemoveArgs{Name: p.Name, Check: true})
	return err
}

// runnerPath is the directory of source's worktree name on this runner.
func runnerPath(source project.Project, name string) (string, error) {
	if !OfSource(name, source.Name) {
		return "", failure.New(failure.InvalidArguments, "%q is not a worktree name of project %s", name, source.Name)
	}
	dir, err := RunnerDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// runnerOf is the runner serving p.
func (m *Manager) runnerOf(p project.Project) (workspace.Runner, error) {
	if m.Runners == nil {
		return nil, failure.New(failure.Unavailable, "project %s is served by runner %s, and this command reaches no runner: use close_session with remove_worktree on the server", p.ID, p.Runner)
	}
	return m.Runners.For(p), nil
}

// createOnRunner is Create for a runner's project: the runner makes the
// worktree (worktree.add) and it is registered as a project of that runner
// with the source's owner and sandbox. A registration that fails removes
// the worktree on the runner again.
func (m *Manager) createOnRunner(ctx context.Context, source project.Project, baseRef string) (Worktree, error) {
	r, err := m.runnerOf(source)
	if err != nil {
		return Worktree{}, err
	}
	name := m.name(source.Name)
	if _, err := m.Projects.Get(ctx, project.RunnerID(source.Runner, name)); err == nil {
		return Worktree{}, failure.New(failure.WorktreeExists, "project %s is already registered", project.RunnerID(source.Runner, name))
	}
	res, err := workspace.Do(ctx, r, source, addOp, AddArgs{Name: name, BaseRef: baseRef})
	if err != nil {
		return Worktree{}, err
	}
	p, err := m.Projects.RegisterRunnerWorktree(ctx, source, name, res.Root, res.BaseCommit)
	if err != nil {
		workspace.Do(context.WithoutCancel(ctx), r, source, removeOp, RemoveArgs{Name: name, Force: true})
		return Worktree{}, err
	}
	return Worktree{Project: p, Source: source.ID, BaseRef: baseRef, BaseCommit: res.BaseCommit, SourceDirty: res.SourceDirty}, nil
}

// discardOnRunner is Discard for a runner's worktree.
func (m *Manager) discardOnRunner(ctx context.Context, w Worktree) error {
	err := m.Projects.Unregister(context.WithoutCancel(ctx), w.Project.ID)
	if src, serr := m.Projects.Get(ctx, w.Source); serr == nil {
		if r, rerr := m.runnerOf(src); rerr == nil {
			workspace.Do(context.WithoutCancel(ctx), r, src, removeOp, RemoveArgs{Name: w.Project.Name, Force: true})
		}
	}
	return err
}

// resumeOnRunner is Resume for a runner's worktree: the runner checks its
// directory and resolves baseRef in the source.
func (m *Manager) resumeOnRunner(ctx context.Context, p project.Project, baseRef string) (Worktree, error) {
	src, err := m.Projects.Get(ctx, p.Source)
	if err != nil {
		return Worktree{}, err
	}
	r, err := m.runnerOf(src)
	if err != nil {
		return Worktree{}, err
	}
	res, err := workspace.Do(ctx, r, src, resolveOp, ResolveArgs{Name: p.Name, Ref: baseRef})
	if err != nil {
		return Worktree{}, err
	}
	if baseRef != "" && res.Commit != p.BaseCommit {
		return Worktree{}, failure.New(failure.BaseRefMismatch, "base_ref %q is %s, but worktree %s was created at %s", baseRef, res.Commit, p.ID, p.BaseCommit).
			WithDetail("base_commit", p.BaseCommit)
	}
	return Worktree{Project: p, Source: p.Source, BaseRef: baseRef, BaseCommit: p.BaseCommit}, nil
}

// removeOnRunner is Remove for a runner's worktree: the runner removes it
// (worktree.remove, refusing a dirty one without force), then it is
// unregistered.
func (m *Manager) removeOnRunner(ctx context.Context, p project.Project, force bool) error {
	src, err := m.Projects.Get(ctx, p.Source)
	if err != nil {
		return err
	}
	r, err := m.runnerOf(src)
	if err != nil {
		return err
	}
	if _, err := workspace.Do(ctx, r, src, removeOp, RemoveArgs{Name: p.Name, Force: force}); err != nil {
		return err
	}
	return m.Projects.Unregister(ctx, p.ID)
}
