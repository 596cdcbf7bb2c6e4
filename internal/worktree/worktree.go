// Package worktree manages the detached git worktrees work_on_project
// creates in mode=worktree: each is a fresh checkout of a source project at
// an exact commit, in its own directory under the data directory, and
// registered as an ordinary local project that records its source project
// and base commit.
//
// Creating a worktree never changes the source checkout's files (git
// writes only the new directory and its administrative entry in the
// source's git directory, which must lie inside the source's root);
// finishing or closing a session on a worktree removes nothing. A
// worktree is removed only by [Manager.Remove] (`webcodex project
// remove`, or close_session with remove_worktree).
//
// A worktree of a runner's project is made, re-observed and removed on
// that runner (runner.go, decision 0065): [Ops] are the operations the
// runner serves, in its own directory [RunnerDir], and the worktree is
// registered as a project of that runner.
package worktree

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/gitrepo"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/workspace"
)

// DirName is the directory of the managed worktrees inside the data
// directory.
const DirName = "worktrees"

// maxSourceNameChars bounds the source name inside a worktree's name
// (the name is <source>-wt-<8 hex>, at most 64 characters).
const maxSourceNameChars = 52

// A Manager creates, re-observes and removes managed worktrees.
type Manager struct {
	Projects *project.Registry
	// Host runs git (its sandbox confines git too).
	Host runner.Host
	// Dir holds the worktrees (<data>/worktrees); it is created on first
	// use.
	Dir string
	// Suffix returns the random part of a new worktree's name; nil is 8
	// random hex digits (tests fix it).
	Suffix func() string
	// Runners, when set, serve the worktrees of runners' projects: a
	// worktree of a runner's project is made, re-observed and removed on
	// that runner (runner.go). Without it such a project's worktrees are
	// unavailable.
	Runners workspace.Runners
}

// A Worktree is a managed worktree as work_on_project reports it.
type Worktree struct {
	Project project.Project
	Source  string
	// BaseRef is the ref the caller gave ("" for the source's HEAD).
	BaseRef    string
	BaseCommit string
	// SourceDirty is true when the source checkout had uncommitted
	// changes or untracked files, which the worktree does not carry.
	SourceDirty bool
}

// Create makes a detached worktree of source at baseRef (the source's HEAD
// when empty) and registers it. Nothing is left behind on failure.
//
// Errors: failure.NotAGitCheckout when source is not the root of a git
// work tree; failure.GitDirOutsideProject when its git directory (a .git
// file, a symbolic link, a commondir) resolves outside its root, checked
// before anything is created; failure.UnknownRef (or invalid_arguments)
// for a ref naming no commit; failure.WorktreeExists when the chosen
// directory exists; operation_failed when git fails.
func (m *Manager) Create(ctx context.Context, source project.Project, baseRef string) (Worktree, error) {
	if source.Runner != "" {
		return m.createOnRunner(ctx, source, baseRef)
	}
	ctx, cancel := gitrepo.WithTimeout(ctx)
	defer cancel()
	repo, dirs, err := m.openSource(ctx, source)
	if err != nil {
		return Worktree{}, err
	}
	ref := baseRef
	if ref == "" {
		ref = "HEAD"
	}
	commit, err := repo.ResolveCommit(ctx, ref)
	if err != nil {
		return Worktree{}, err
	}
	st, _, err := repo.Status(ctx)
	if err != nil {
		return Worktree{}, err
	}
	name := m.name(source.Name)
	dir := filepath.Join(m.Dir, name)
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		return Worktree{}, failure.New(failure.WorktreeExists, "the worktree directory for %s already exists", project.LocalID(name))
	}
	if _, err := m.Projects.Get(ctx, project.LocalID(name)); err == nil {
		return Worktree{}, failure.New(failure.WorktreeExists, "project %s is already registered", project.LocalID(name))
	}
	if err := os.MkdirAll(m.Dir, 0o700); err != nil {
		return Worktree{}, failure.Wrap(failure.OperationFailed, err, "cannot create the worktrees directory")
	}
	if err := repo.AddWorktree(ctx, dirs, dir, commit); err != nil {
		return Worktree{}, err
	}
	p, err := m.Projects.RegisterWorktree(ctx, name, dir, source, commit)
	if err != nil {
		m.discardDir(&dirs, dir)
		return Worktree{}, err
	}
	return Worktree{Project: p, Source: source.ID, BaseRef: baseRef, BaseCommit: commit, SourceDirty: !st.Clean}, nil
}

// openSource opens the source checkout and checks that it is the root of
// a work tree whose git directories lie inside it: the server runs no git
// that writes in another project's repository.
//
// Errors: failure.NotAGitCheckout, failure.GitDirOutsideProject (see
// [gitrepo.Repo.Dirs]).
func (m *Manager) openSource(ctx context.Context, source project.Project) (gitrepo.Repo, gitrepo.Dirs, error) {
	return openSource(ctx, m.Host, source)
}

// openSource is Manager.openSource with git run on host.
func openSource(ctx context.Context, host runner.Host, source project.Project) (gitrepo.Repo, gitrepo.Dirs, error) {
	repo, err := gitrepo.Open(ctx, host, source.Root)
	if err != nil {
		return gitrepo.Repo{}, gitrepo.Dirs{}, err
	}
	if !repo.Inside || repo.Prefix != "" {
		return gitrepo.Repo{}, gitrepo.Dirs{}, failure.New(failure.NotAGitCheckout, "project %s is not the root of a git work tree", source.ID)
	}
	dirs, err := repo.Dirs()
	if err != nil {
		return gitrepo.Repo{}, gitrepo.Dirs{}, err
	}
	return repo, dirs, nil
}

// Discard undoes a Create whose session could not be created: it
// unregisters the worktree project and removes its directory and its
// administrative directory in the source's git directory.
func (m *Manager) Discard(ctx context.Context, w Worktree) error {
	if w.Project.Runner != "" {
		return m.discardOnRunner(ctx, w)
	}
	err := m.Projects.Unregister(context.WithoutCancel(ctx), w.Project.ID)
	var dirs *gitrepo.Dirs
	if src, serr := m.Projects.Get(ctx, w.Source); serr == nil {
		if _, d, oerr := m.openSource(ctx, src); oerr == nil {
			dirs = &d
		}
	}
	m.discardDir(dirs, w.Project.Root)
	return err
}

func (m *Manager) discardDir(dirs *gitrepo.Dirs, dir string) {
	ctx, cancel := gitrepo.WithTimeout(context.Background())
	defer cancel()
	if gitrepo.RemoveWorktree(ctx, m.Host, dirs, dir, true) != nil {
		os.RemoveAll(dir)
	}
}

// Resume re-observes the managed worktree p for an explicit session
// resume: p must be a managed worktree whose directory exists, and a
// non-empty baseRef must resolve (in the source checkout when it is still
// registered, else in the worktree) to p's stored base commit.
//
// Errors: failure.NotAWorktree when p is an ordinary project;
// failure.NotAGitCheckout when its directory is gone; failure.BaseRefMismatch when baseRef names another commit;
// failure.UnknownRef when it names none; failure.GitDirOutsideProject
// when the registered source's git directory now lies outside it.
func (m *Manager) Resume(ctx context.Context, p project.Project, baseRef string) (Worktree, error) {
	if !p.Worktree() {
		return Worktree{}, failure.New(failure.NotAWorktree, "project %s is not a managed worktree", p.ID)
	}
	if p.Runner != "" {
		return m.resumeOnRunner(ctx, p, baseRef)
	}
	if st, err := os.Stat(p.Root); err != nil || !st.IsDir() {
		return Worktree{}, failure.New(failure.NotAGitCheckout, "the directory of worktree %s no longer exists", p.ID)
	}
	w := Worktree{Project: p, Source: p.Source, BaseRef: baseRef, BaseCommit: p.BaseCommit}
	if baseRef == "" {
		return w, nil
	}
	ctx, cancel := gitrepo.WithTimeout(ctx)
	defer cancel()
	var repo gitrepo.Repo
	if src, err := m.Projects.Get(ctx, p.Source); err == nil {
		if repo, _, err = m.openSource(ctx, src); err != nil {
			return Worktree{}, err
		}
	} else {
		if repo, err = gitrepo.Open(ctx, m.Host, p.Root); err != nil {
			return Worktree{}, err
		}
		if !repo.Inside {
			return Worktree{}, failure.New(failure.NotAGitCheckout, "the checkout of %s is no longer a git work tree", p.ID)
		}
	}
	commit, err := repo.ResolveCommit(ctx, baseRef)
	if err != nil {
		return Worktree{}, err
	}
	if commit != p.BaseCommit {
		return Worktree{}, failure.New(failure.BaseRefMismatch, "base_ref %q is %s, but worktree %s was created at %s", baseRef, commit, p.ID, p.BaseCommit).
			WithDetail("base_commit", p.BaseCommit)
	}
	return w, nil
}

// Remove removes the managed worktree p: its directory and its
// administrative directory in the source's git directory are removed
// (refusing, without force, a worktree with changes or untracked files;
// see [gitrepo.RemoveWorktree]), then it is unregistered. A directory
// already gone is only unregistered. When the source is no longer
// registered, the administrative directory is left to git worktree
// prune. Whether a session is still active on it is the caller's check.
//
// Errors: failure.NotAWorktree; failure.GitDirOutsideProject when the
// registered source's git directory now lies outside it (nothing is
// removed); operation_failed as RemoveWorktree.
func (m *Manager) Remove(ctx context.Context, p project.Project, force bool) error {
	if !p.Worktree() {
		return failure.New(failure.NotAWorktree, "project %s is not a managed worktree", p.ID)
	}
	if p.Runner != "" {
		return m.removeOnRunner(ctx, p, force)
	}
	if _, err := os.Lstat(p.Root); err == nil {
		gctx, cancel := gitrepo.WithTimeout(ctx)
		defer cancel()
		var dirs *gitrepo.Dirs
		if src, err := m.Projects.Get(ctx, p.Source); err == nil {
			_, d, err := m.openSource(gctx, src)
			if err != nil {
				return err
			}
			dirs = &d
		}
		if err := gitrepo.RemoveWorktree(gctx, m.Host, dirs, p.Root, force); err != nil {
			return err
		}
	}
	return m.Projects.Unregister(ctx, p.ID)
}

func (m *Manager) name(source string) string {
	if len(source) > maxSourceNameChars {
		source = source[:maxSourceNameChars]
	}
	suffix := ""
	if m.Suffix != nil {
		suffix = m.Suffix()
	} else {
		var b [4]byte
		rand.Read(b[:])
		suffix = hex.EncodeToString(b[:])
	}
	return source + "-wt-" + suffix
}
