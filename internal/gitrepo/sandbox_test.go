package gitrepo_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/gitrepo"
	"github.com/webcodex/webcodex/internal/gitrepo/gittest"
	"github.com/webcodex/webcodex/internal/runner"
)

// TestSandboxedGitWritesOnlyItsPrivateIndex runs git through a confined
// host: diff refreshes the private index copy (allowed), and the
// repository's own index is left as it was.
func TestSandboxedGitWritesOnlyItsPrivateIndex(t *testing.T) {
	needLandlock(t)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644)
	for _, args := range [][]string{{"add", "a.txt"}, {"commit", "-q", "-m", "c"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("two\n"), 0o644)
	index := filepath.Join(dir, ".git", "index")
	before, _ := os.ReadFile(index)

	host := &runner.Local{Policy: &runner.Policy{Mode: runner.WorkspaceWrite, Deny: []string{t.TempDir()}}}
	defer host.Policy.Close()
	priv, cleanup := privateIndex(t, host, dir)
	defer cleanup()
	out, _, err := priv.Run(context.Background(), 1<<20, "diff")
	if err != nil || !strings.Contains(string(out), "+two") {
		t.Fatalf("sandboxed diff: %q %v", out, err)
	}
	st, complete, err := priv.Status(context.Background())
	if err != nil || !complete || st.Total != 1 {
		t.Fatalf("sandboxed status: %+v %v", st, err)
	}
	if after, _ := os.ReadFile(index); string(after) != string(before) {
		t.Fatal("the repository's index changed")
	}
	// A git that tries to write the work tree is refused: git runs read-only.
	if _, _, err := priv.Run(context.Background(), 1<<20, "checkout", "--", "a.txt"); err == nil {
		t.Fatal("a sandboxed git wrote the work tree")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "two\n" {
		t.Fatalf("the work tree changed: %q", b)
	}
}

// TestAddWorktreeWritesOnlyTheNewWorktree covers the programs git cannot
// be told to skip: a smudge filter defined after Open read the
// configuration (a child racing the server) does run during
// AddWorktree, but under a sandbox that lets it write the new worktree
// and nothing else: not a sibling worktree in the same parent directory,
// not the source's configuration.
func TestAddWorktreeWritesOnlyTheNewWorktree(t *testing.T) {
	needLandlock(t)
	src := newRepo(t)
	os.WriteFile(filepath.Join(src, ".gitattributes"), []byte("* filter=late\n"), 0o644)
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("one\n"), 0o644)
	gittest.Run(t, src, "add", ".")
	gittest.Run(t, src, "commit", "-q", "-m", "one")
	parent, _ := filepath.EvalSymlinks(t.TempDir())
	sibling := filepath.Join(parent, "sibling")
	os.Mkdir(sibling, 0o755)
	path := filepath.Join(parent, "new")

	host := &runner.Local{Policy: &runner.Policy{Mode: runner.WorkspaceWrite}}
	defer host.Policy.Close()
	ctx := context.Background()
	repo, d := openDirs(t, host, src)
	config := filepath.Join(src, ".git", "config")
	gittest.Run(t, src, "config", "filter.late.smudge",
		"sh -c 'echo ran >> "+filepath.Join(path, "ran.marker")+"; echo pwned > "+filepath.Join(sibling, "AGENTS.md")+
			"; echo x >> "+config+"; cat'")
	before, _ := os.ReadFile(config)
	if err := repo.AddWorktree(ctx, d, path, "HEAD"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(path, "ran.marker")); !strings.Contains(string(b), "ran") {
		t.Fatalf("the late filter did not run (marker %q): the test proves nothing", b)
	}
	if _, err := os.Lstat(filepath.Join(sibling, "AGENTS.md")); err == nil {
		t.Fatal("the filter wrote a sibling of the new worktree")
	}
	if after, _ := os.ReadFile(config); string(after) != string(before) {
		t.Fatalf("the filter wrote the source's configuration: %q", after)
	}
}

// TestAddWorktreeFailureLeavesNothing: a git worktree add that fails (a
// commit that does not exist) leaves neither the directory the server
// made nor a worktrees directory in the repository.
func TestAddWorktreeFailureLeavesNothing(t *testing.T) {
	src := committedRepo(t)
	ctx := context.Background()
	repo, d := openDirs(t, nil, src)
	path := filepath.Join(t.TempDir(), "new")
	if err := repo.AddWorktree(ctx, d, path, "0123456789abcdef0123456789abcdef01234567"); err == nil {
		t.Fatal("adding a worktree at a missing commit succeeded")
	}
	for _, p := range []string{path, filepath.Join(src, ".git", "worktrees")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was left behind", p)
		}
	}
}

// TestAddWorktreeRefusesALinkedWorktreesDirectory: a repository whose
// .git/worktrees is a symbolic link to another directory is refused
// (git_dir_outside_project) before git runs; nothing is created there
// or at the worktree's path.
func TestAddWorktreeRefusesALinkedWorktreesDirectory(t *testing.T) {
	src := committedRepo(t)
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(src, ".git", "worktrees")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	repo, d := openDirs(t, nil, src)
	path := filepath.Join(t.TempDir(), "new")
	if err := repo.AddWorktree(ctx, d, path, "HEAD"); !failure.Is(err, failure.GitDirOutsideProject) {
		t.Fatalf("a linked worktrees directory: %v", err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("%d entries were created through the link", len(entries))
	}
	if _, err := os.Lstat(path); err == nil {
		t.Error("the worktree directory was created")
	}
}

// TestAddWorktreeUnderALinkedParent: the worktrees' parent reached
// through a symbolic link (a data directory under a linked home) still
// gets a worktree under the exact sandbox grants, at the real path, and
// its removal takes the administrative directory with it.
func TestAddWorktreeUnderALinkedParent(t *testing.T) {
	needLandlock(t)
	src := committedRepo(t)
	real, _ := filepath.EvalSymlinks(t.TempDir())
	link := filepath.Join(t.TempDir(), "data")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	host := &runner.Local{Policy: &runner.Policy{Mode: runner.WorkspaceWrite}}
	defer host.Policy.Close()
	ctx := context.Background()
	repo, d := openDirs(t, host, src)
	if err := repo.AddWorktree(ctx, d, filepath.Join(link, "wt"), "HEAD"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(real, "wt")
	if got := gitrepo.WorktreeGrants(path); len(got) == 0 {
		t.Fatal("the new worktree's links are not git's own")
	}
	if err := gitrepo.RemoveWorktree(ctx, host, &d, filepath.Join(link, "wt"), false); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, filepath.Join(src, ".git", "worktrees")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is left after the removal", p)
		}
	}
}

// TestAddWorktreeAtAnExistingPathChangesNothing: a path that exists is
// worktree_exists, and neither it nor the repository's git directory
// (no worktrees directory) is touched.
func TestAddWorktreeAtAnExistingPathChangesNothing(t *testing.T) {
	src := committedRepo(t)
	ctx := context.Background()
	repo, d := openDirs(t, nil, src)
	path := t.TempDir()
	os.WriteFile(filepath.Join(path, "keep.txt"), []byte("mine"), 0o644)
	if err := repo.AddWorktree(ctx, d, path, "HEAD"); !failure.Is(err, failure.WorktreeExists) {
		t.Fatalf("an existing path: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(src, ".git", "worktrees")); err == nil {
		t.Error("the repository's worktrees directory was created")
	}
	if entries, _ := os.ReadDir(path); len(entries) != 1 {
		t.Errorf("the existing directory holds %d entries", len(entries))
	}
}
