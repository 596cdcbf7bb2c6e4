package gitrepo_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/webcodex/webcodex/internal/gitrepo"
	"github.com/webcodex/webcodex/internal/gitrepo/gittest"
)

// linkedWorktree makes a repository with one commit and a linked
// worktree of it (made by git itself), and returns both, symbolic links
// resolved.
func linkedWorktree(t *testing.T) (src, wt string) {
	t.Helper()
	src = newRepo(t)
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("one\n"), 0o644)
	gittest.Run(t, src, "add", ".")
	gittest.Run(t, src, "commit", "-q", "-m", "one")
	parent, _ := filepath.EvalSymlinks(t.TempDir())
	wt = filepath.Join(parent, "src-wt-0000abcd")
	gittest.Run(t, src, "worktree", "add", "-q", "--detach", wt, "HEAD")
	return src, wt
}

// TestWorktreeGrantsAreExact: a linked worktree's grants are its
// administrative directory and the common directory's objects, refs and
// logs, nothing else (not config, not hooks, not the common directory).
func TestWorktreeGrantsAreExact(t *testing.T) {
	src, wt := linkedWorktree(t)
	common := filepath.Join(src, ".git")
	want := []string{filepath.Join(common, "worktrees", filepath.Base(wt)),
		filepath.Join(common, "objects"), filepath.Join(common, "refs"), filepath.Join(common, "logs")}
	if got := gitrepo.WorktreeGrants(wt); !slices.Equal(got, want) {
		t.Fatalf("grants = %q, want %q", got, want)
	}
	// A main checkout and a plain directory get none.
	for _, dir := range []string{src, t.TempDir()} {
		if got := gitrepo.WorktreeGrants(dir); got != nil {
			t.Errorf("%s: grants %q", dir, got)
		}
	}
}

// TestWorktreeGrantsRefuseRedirects: a worktree whose .git file, .git
// symlink or administrative files no longer are git's own gets no grant,
// so a child cannot steer its write grants into another repository.
func TestWorktreeGrantsRefuseRedirects(t *testing.T) {
	for name, tamper := range map[string]func(t *testing.T, src, wt, other string){
		".git file to another repository's worktree entry": func(t *testing.T, src, wt, other string) {
			// The other repository has an entry of the same name, made
			// by git for a worktree elsewhere.
			os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+filepath.Join(other, ".git", "worktrees", filepath.Base(wt))+"\n"), 0o644)
		},
		".git symlink to the real administrative directory": func(t *testing.T, src, wt, other string) {
			admin := filepath.Join(src, ".git", "worktrees", filepath.Base(wt))
			os.Remove(filepath.Join(wt, ".git"))
			os.Symlink(admin, filepath.Join(wt, ".git"))
		},
		"gitdir path through a symbolic link": func(t *testing.T, src, wt, other string) {
			link := filepath.Join(t.TempDir(), "link")
			os.Symlink(filepath.Join(src, ".git"), link)
			os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+filepath.Join(link, "worktrees", filepath.Base(wt))+"\n"), 0o644)
		},
		"commondir to another repository": func(t *testing.T, src, wt, other string) {
			admin := filepath.Join(src, ".git", "worktrees", filepath.Base(wt))
			os.WriteFile(filepath.Join(admin, "commondir"), []byte(filepath.Join(other, ".git")+"\n"), 0o644)
		},
		"gitdir back-link to another worktree": func(t *testing.T, src, wt, other string) {
			admin := filepath.Join(src, ".git", "worktrees", filepath.Base(wt))
			os.WriteFile(filepath.Join(admin, "gitdir"), []byte(filepath.Join(other, ".git")+"\n"), 0o644)
		},
		"the worktree's parent posing as a common directory": func(t *testing.T, src, wt, other string) {
			// <parent>/<name> is itself named like the worktree, so its
			// grandparent would pass for the common directory.
			os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+wt+"\n"), 0o644)
			os.WriteFile(filepath.Join(wt, "gitdir"), []byte(filepath.Join(wt, ".git")+"\n"), 0o644)
			os.WriteFile(filepath.Join(wt, "commondir"), []byte("../..\n"), 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			src, wt := linkedWorktree(t)
			other, otherWt := linkedWorktree(t)
			if filepath.Base(otherWt) != filepath.Base(wt) {
				t.Fatal("the other repository's worktree is named differently")
			}
			tamper(t, src, wt, other)
			if got := gitrepo.WorktreeGrants(wt); got != nil {
				t.Fatalf("grants after tampering: %q", got)
			}
		})
	}
}
