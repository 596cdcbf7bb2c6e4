package gitrepo

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
)

// MaxRefBytes bounds a ref given to ResolveCommit.
const MaxRefBytes = 256

// worktreesDir is the directory of the linked worktrees' administrative
// directories inside a common git directory.
const worktreesDir = "worktrees"

// maxGitdirFileBytes bounds each git link file read (a .git file, an
// administrative directory's gitdir and commondir).
const maxGitdirFileBytes = 4096

// ResolveCommit resolves ref (a branch, tag, commit or any revision
// expression) to the full id of the commit it names. Errors:
// failure.InvalidArguments for an empty, over-long or option-like ref or
// one holding a control character; failure.UnknownRef when it names no
// commit.
func (r Repo) ResolveCommit(ctx context.Context, ref string) (string, error) {
	if ref == "" || len(ref) > MaxRefBytes || strings.HasPrefix(ref, "-") || strings.IndexFunc(ref, unicode.IsControl) >= 0 {
		return "", failure.New(failure.InvalidArguments, "base_ref must be 1-%d bytes, not start with '-' and hold no control character", MaxRefBytes)
	}
	out, _, err := r.git.run(ctx, maxProbeBytes, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if _, ok := err.(*exitError); ok {
		return "", failure.New(failure.UnknownRef, "%q names no commit in this repository", ref)
	}
	if err != nil {
		return "", asFailure(err, "rev-parse")
	}
	return strings.TrimSpace(string(out)), nil
}

// Dirs are the git directories of a work tree, resolved (absolute, every
// symbolic link followed) and checked to lie inside the work tree's root.
type Dirs struct {
	// Root is the work tree's root, resolved.
	Root string
	// Git is the work tree's git directory (<Root>/.git for a main
	// checkout).
	Git string
	// Common is the common git directory shared by all the worktrees of
	// the repository (Git itself for a main checkout).
	Common string
}

// Dirs checks that the directory r was opened on is the root of a work
// tree whose git directory and common git directory, wherever a .git
// file, a .git symbolic link or a commondir file send them, resolve to
// paths inside that root, and returns them. Nothing is written.
//
// Errors: failure.NotAGitCheckout when the directory is not the root of a
// work tree; failure.GitDirOutsideProject when either git directory
// resolves outside it (or cannot be resolved).
func (r Repo) Dirs() (Dirs, error) {
	if !r.Inside || r.Prefix != "" {
		return Dirs{}, failure.New(failure.NotAGitCheckout, "the project is not the root of a git work tree")
	}
	root, err := filepath.EvalSymlinks(r.git.dir)
	if err != nil {
		return Dirs{}, failure.Wrap(failure.NotAGitCheckout, err, "the project's root cannot be resolved")
	}
	d := Dirs{Root: root}
	for _, p := range []struct {
		in  string
		out *string
	}{{r.gitDir, &d.Git}, {r.commonDir, &d.Common}} {
		resolved, err := filepath.EvalSymlinks(p.in)
		if err != nil || !filepath.IsAbs(resolved) || resolved == root || !within(resolved, root) {
			return Dirs{}, failure.New(failure.GitDirOutsideProject,
				"the project's git directory %s resolves outside the project's root; the server runs no git that writes there", p.in)
		}
		*p.out = resolved
	}
	return d, nil
}

// Admin returns the administrative directory git keeps for the linked
// worktree whose directory is named name: <Common>/worktrees/<name>.
func (d Dirs) Admin(name string) string {
	return filepath.Join(d.Common, worktreesDir, name)
}

// AddWorktree creates a detached worktree of the repository of d (which
// r was opened on) at path, checked out at commit. path must not exist
// and its parent must (symbolic links in the parent's path are resolved
// first); path's base name is the worktree's name, and no administrative
// directory of that name may exist yet.
//
// AddWorktree creates the empty directory path itself, so that git,
// pinned to d (GIT_DIR), may write only path and <Common>/worktrees (the
// new administrative directory), never path's parent, which holds other
// projects' worktrees. Hooks do not run and the repository's filter
// drivers are emptied (see the package documentation). On failure
// nothing is left: path and its administrative directory are removed.
//
// Errors: failure.WorktreeExists when path or the administrative
// directory exists; failure.GitDirOutsideProject when
// <Common>/worktrees is not a directory (a symbolic link); operation_failed
// when git fails.
func (r Repo) AddWorktree(ctx context.Context, d Dirs, path, commit string) error {
	name := filepath.Base(path)
	// The parent is the server's own directory: resolving its links makes
	// path the real path git records and the exact grant names.
	parent, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return failure.Wrap(failure.OperationFailed, err, "cannot resolve the worktree's parent directory")
	}
	path = filepath.Join(parent, name)
	git, rel, err := d.open()
	if err != nil {
		return failure.Wrap(failure.OperationFailed, err, "cannot open the repository's git directory")
	}
	defer git.Close()
	admins := filepath.Join(rel, worktreesDir)
	st, err := git.Lstat(admins)
	missing := errors.Is(err, fs.ErrNotExist)
	switch {
	case missing:
	case err != nil:
		return failure.Wrap(failure.GitDirOutsideProject, err, "the repository's %s directory cannot be reached inside the project", worktreesDir)
	case !st.IsDir():
		return failure.New(failure.GitDirOutsideProject, "the repository's %s is not a directory", worktreesDir)
	default:
		if _, err := git.Lstat(filepath.Join(admins, name)); !errors.Is(err, fs.ErrNotExist) {
			return failure.New(failure.WorktreeExists, "the repository already has a worktree named %s", name)
		}
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return failure.New(failure.WorktreeExists, "the worktree directory %s already exists", name)
		}
		return failure.Wrap(failure.OperationFailed, err, "cannot create the worktree directory")
	}
	// git would create the worktrees directory; the server does, so that
	// git's grant is it.
	if missing {
		if err := git.Mkdir(admins, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			removeBeneath(parent, name)
			return failure.Wrap(failure.OperationFailed, err, "cannot create the repository's worktrees directory")
		}
	}
	g := r.git
	g.gitDir = d.Git
	g.write = addGrants(d, path)
	if _, _, err := g.run(ctx, maxProbeBytes, "worktree", "add", "--detach", "--quiet", path, commit); err != nil {
		removeAdded(d, path)
		return asFailure(err, "worktree add")
	}
	return nil
}

// addGrants are the paths git worktree add may write: the new worktree's
// directory and the repository's worktrees directory.
func addGrants(d Dirs, path string) []string {
	return []string{path, filepath.Join(d.Common, worktreesDir)}
}

// removeAdded removes what a failed AddWorktree may have left: the
// directory and, when it is the new worktree's, its administrative
// directory.
func removeAdded(d Dirs, path string) {
	removeAdmin(d, path)
	removeBeneath(filepath.Dir(path), filepath.Base(path))
	if git, rel, err := d.open(); err == nil {
		git.Remove(filepath.Join(rel, worktreesDir)) // the server made it; fails unless empty
		git.Close()
	}
}

// open opens the directory through which the server itself touches d's
// git directory, and returns the common directory's path relative to
// it: d.Root (so that no symbolic link swapped into the project leads
// out), or d.Common when Root is unset.
func (d Dirs) open() (*os.Root, string, error) {
	base := d.Root
	if base == "" {
		base = d.Common
	}
	rel, err := filepath.Rel(base, d.Common)
	if err != nil {
		return nil, "", err
	}
	root, err := os.OpenRoot(base)
	return root, rel, err
}

// ownAdmin reports whether the administrative directory named after path
// is the one git made for the worktree at path: its gitdir file names
// <path>/.git. A directory of that name made for another worktree (or
// planted) is not touched.
func ownAdmin(d Dirs, path string) bool {
	git, rel, err := d.open()
	if err != nil {
		return false
	}
	defer git.Close()
	f, err := git.Open(filepath.Join(rel, worktreesDir, filepath.Base(path), "gitdir"))
	if err != nil {
		return false
	}
	defer f.Close()
	text, ok := readBounded(f)
	return ok && strings.TrimSpace(text) == filepath.Join(path, ".git")
}

// removeAdmin removes the administrative directory of the worktree at
// path when it is git's own for path (ownAdmin), and then the worktrees
// directory when it is left empty, as git worktree remove does. Every
// path is resolved beneath d's root.
func removeAdmin(d Dirs, path string) error {
	if !ownAdmin(d, path) {
		return nil
	}
	git, rel, err := d.open()
	if err != nil {
		return err
	}
	defer git.Close()
	if err := git.RemoveAll(filepath.Join(rel, worktreesDir, filepath.Base(path))); err != nil {
		return err
	}
	git.Remove(filepath.Join(rel, worktreesDir)) // fails unless empty
	return nil
}

// removeBeneath removes name (and everything beneath it) inside dir,
// never following a symbolic link out of dir.
func removeBeneath(dir, name string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return root.RemoveAll(name)
}

// RemoveWorktree removes the managed worktree at path: its directory and,
// when d is not nil, its administrative directory in d's common git
// directory, provided git made that one for path (its gitdir file names
// <path>/.git). Without force a worktree with changes or untracked files
// (or one git reports locked) is refused, as git worktree remove would:
// the check is a read-only git status pinned to the administrative
// directory (or, without d, to whatever the worktree's .git names:
// only a read). The server removes the files itself, beneath the two
// directories, following no symbolic link; no git writes anything. A nil
// d (the source is no longer a project) leaves the administrative
// directory to git worktree prune.
//
// Errors: operation_failed for a worktree with changes without force, or
// a removal that fails.
func RemoveWorktree(ctx context.Context, host runner.Host, d *Dirs, path string, force bool) error {
	if parent, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		path = filepath.Join(parent, filepath.Base(path)) // the real path git recorded
	}
	own := d != nil && ownAdmin(*d, path)
	if !force {
		g, err := newGit(host, path)
		if err != nil {
			return err
		}
		if own {
			admin := d.Admin(filepath.Base(path))
			if _, err := os.Lstat(filepath.Join(admin, "locked")); err == nil {
				return failure.New(failure.OperationFailed, "the worktree is locked; remove it with --force")
			}
			g.gitDir, g.workTree = admin, path
		}
		r, err := g.probe(ctx)
		if err != nil {
			return err
		}
		st, complete, err := r.Status(ctx)
		if err != nil {
			return err
		}
		if !complete || !st.Clean {
			return failure.New(failure.OperationFailed, "the worktree has changes or untracked files; remove it with --force")
		}
	}
	if err := removeBeneath(filepath.Dir(path), filepath.Base(path)); err != nil {
		return failure.Wrap(failure.OperationFailed, err, "cannot remove the worktree directory")
	}
	if own {
		if err := removeAdmin(*d, path); err != nil {
			return failure.Wrap(failure.OperationFailed, err, "cannot remove the worktree's git administrative directory")
		}
	}
	return nil
}

// The parts of a common git directory a commit in a linked worktree
// writes besides the worktree's administrative directory: new objects,
// branch and tag refs, and their reflogs. Everything else there (config,
// hooks, info, packed-refs, the other worktrees' administrative
// directories) stays read-only.
var commitDataDirs = []string{"objects", "refs", "logs"}

// WorktreeGrants returns the paths a child of the managed worktree at
// root may write besides root itself so that git commit works there: the
// worktree's administrative directory <common>/worktrees/<name> (its
// HEAD, index, reflog, config.worktree) and the common directory's
// objects, refs and logs. Nothing else of the common directory is
// granted. It reads only files, runs no git, and returns nil unless
// every link between the worktree and the repository is git's own:
//
//   - <root>/.git is a regular file "gitdir: <admin>" with <admin> an
//     absolute path without symbolic links, named like root, inside a
//     directory named worktrees, outside root;
//   - <admin>/gitdir names <root>/.git back (git writes it at creation;
//     a .git file redirected elsewhere finds no such file);
//   - <admin>/commondir names <admin>/../.. (git's "../..");
//   - each granted directory exists and has no symbolic link on its
//     path.
func WorktreeGrants(root string) []string {
	own := filepath.Join(root, ".git")
	admin, ok := readGitdir(own)
	if !ok || !filepath.IsAbs(admin) || filepath.Clean(admin) != admin || filepath.Base(admin) != filepath.Base(root) ||
		filepath.Base(filepath.Dir(admin)) != worktreesDir || !realDir(admin) {
		return nil
	}
	common := filepath.Dir(filepath.Dir(admin))
	if within(admin, root) || within(root, common) {
		return nil
	}
	d := Dirs{Common: common}
	if !ownAdmin(d, root) {
		return nil
	}
	cd, ok := readFileBounded(filepath.Join(admin, "commondir"))
	if !ok {
		return nil
	}
	if cd = strings.TrimSpace(cd); !filepath.IsAbs(cd) {
		cd = filepath.Join(admin, cd)
	}
	if filepath.Clean(cd) != common {
		return nil
	}
	grants := []string{admin}
	for _, name := range commitDataDirs {
		if p := filepath.Join(common, name); realDir(p) {
			grants = append(grants, p)
		}
	}
	return grants
}

// readGitdir reads the "gitdir: <path>" of a .git file (not a symbolic
// link, not a directory).
func readGitdir(path string) (string, bool) {
	text, ok := readFileBounded(path)
	if !ok {
		return "", false
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(text), "gitdir: ")
	return dir, ok
}

// readFileBounded reads the regular file at path, which must not be a
// symbolic link, as readBounded does.
func readFileBounded(path string) (string, bool) {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return "", false
	}
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	return readBounded(f)
}

// readBounded reads all of f, which must hold at most
// maxGitdirFileBytes.
func readBounded(f io.Reader) (string, bool) {
	b, err := io.ReadAll(io.LimitReader(f, maxGitdirFileBytes+1))
	return string(b), err == nil && len(b) <= maxGitdirFileBytes
}

// realDir reports whether p is a directory whose path holds no symbolic
// link.
func realDir(p string) bool {
	st, err := os.Lstat(p)
	if err != nil || !st.IsDir() {
		return false
	}
	r, err := filepath.EvalSymlinks(p)
	return err == nil && r == p
}

// within reports whether p is d or lies beneath it.
func within(p, d string) bool {
	return p == d || strings.HasPrefix(p, d+string(filepath.Separator))
}
