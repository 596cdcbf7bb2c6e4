package gitrepo_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/gitrepo"
	"github.com/webcodex/webcodex/internal/gitrepo/gittest"
	"github.com/webcodex/webcodex/internal/runner"
)

// needLandlock skips t on a kernel without Landlock.
func needLandlock(t *testing.T) {
	t.Helper()
	if runner.LandlockABI() < 1 {
		t.Skip("Landlock is unavailable on this kernel")
	}
}

// newRepo runs git init in a fresh directory (symbolic links resolved)
// and returns it; git reads neither the system's nor the user's
// configuration for the rest of t.
func newRepo(t *testing.T) string {
	t.Helper()
	gittest.Need(t)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("HOME", t.TempDir())
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	gittest.Run(t, dir, "init", "-q")
	return dir
}

// committedRepo is newRepo with one empty commit.
func committedRepo(t *testing.T) string {
	t.Helper()
	dir := newRepo(t)
	gittest.Run(t, dir, "commit", "-q", "--allow-empty", "-m", "one")
	return dir
}

// openDirs opens dir through host (nil: no sandbox) and returns the
// repository and its directories.
func openDirs(t *testing.T, host runner.Host, dir string) (gitrepo.Repo, gitrepo.Dirs) {
	t.Helper()
	repo, err := gitrepo.Open(context.Background(), host, dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := repo.Dirs()
	if err != nil {
		t.Fatal(err)
	}
	return repo, d
}

// privateIndex opens dir through host (nil: no sandbox) and returns its
// private-index copy and the cleanup that removes it.
func privateIndex(t *testing.T, host runner.Host, dir string) (gitrepo.Repo, func()) {
	t.Helper()
	repo, err := gitrepo.Open(context.Background(), host, dir)
	if err != nil {
		t.Fatal(err)
	}
	priv, cleanup, err := repo.PrivateIndex()
	if err != nil {
		t.Fatal(err)
	}
	return priv, cleanup
}
