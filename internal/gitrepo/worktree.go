package gitrepo

import (
	"context"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
)

// MaxRefBytes bounds a ref given to ResolveCommit.
const MaxRefBytes = 256

// noHooks keeps the repository's hooks (post-checkout) from running when
// the server itself changes a repository.
var noHooks = []string{"-c", "core.hooksPath=/dev/null"}

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

// CommonDir returns the absolute path of the repository's common git
// directory (the .git shared by all its worktrees).
func (r Repo) CommonDir(ctx context.Context) (string, error) {
	out, _, err := r.git.run(ctx, maxProbeBytes, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", asFailure(err, "rev-parse")
	}
	return strings.TrimSpace(string(out)), nil
}

// AddWorktree creates a detached worktree of the repository at path (an
// absolute path that must not exist; its parent must) checked out at
// commit. git may write only the common git directory and path's parent;
// the repository's hooks do not run.
func (r Repo) AddWorktree(ctx context.Context, path, commit string) error {
	common, err := r.CommonDir(ctx)
	if err != nil {
		return err
	}
	g := r.git
	g.write = []string{common, filepath.Dir(path)}
	args := append(append([]string{}, noHooks...), "worktree", "add", "--detach", "--quiet", path, commit)
	if _, _, err := g.run(ctx, maxProbeBytes, args...); err != nil {
		return asFailure(err, "worktree add")
	}
	return nil
}

// RemoveWorktree removes the worktree at path (its directory and its
// administrative files in the common git directory) from the repository
// it belongs to, which is read from path itself. Without force git refuses
// a worktree with changes or untracked files (operation_failed).
func RemoveWorktree(ctx context.Context, host runner.Host, path string, force bool) error {
	r, err := Open(ctx, host, path)
	if err != nil {
		return err
	}
	if !r.Inside {
		return failure.New(failure.NotAGitCheckout, "the worktree directory is not a git work tree")
	}
	common, err := r.CommonDir(ctx)
	if err != nil {
		return err
	}
	g, err := newGit(host, common)
	if err != nil {
		return err
	}
	g.write = []string{common, filepath.Dir(path)}
	args := append(append([]string{}, noHooks...), "worktree", "remove")
	if force {
		args = append(args, "--force")
	}
	if _, _, err := g.run(ctx, maxProbeBytes, append(args, path)...); err != nil {
		return asFailure(err, "worktree remove")
	}
	return nil
}
