package runneragent

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/webcodex/webcodex/internal/gitrepo/gittest"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/worktree"
)

// A request's project name outside runner.toml is served only when it is
// git's own linked worktree, in the runner's worktrees directory, of the
// repository of the runner.toml project the name starts with.
func TestWorktreeProjectResolvesOnlyTheRunnersWorktrees(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the worktrees directory is placed through XDG_CONFIG_HOME")
	}
	gittest.Need(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	repo := func() string {
		d, _ := project.CanonicalRoot(t.TempDir())
		os.WriteFile(filepath.Join(d, "a.txt"), []byte("a\n"), 0o644)
		for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "one"}} {
			gittest.Run(t, d, args...)
		}
		return d
	}
	demo, other := repo(), repo()
	cfg, err := ParseConfig([]byte(fmt.Sprintf("client_id = \"box\"\n[projects]\ndemo = %q\nother = %q\n", demo, other)), "/")
	if err != nil {
		t.Fatal(err)
	}
	a := New(Options{Config: cfg, Policy: &runner.Policy{Mode: runner.Off}})
	dir, err := worktree.RunnerDir()
	if err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, demo, "worktree", "add", "-q", "--detach", filepath.Join(dir, "demo-wt-good"))
	gittest.Run(t, other, "worktree", "add", "-q", "--detach", filepath.Join(dir, "demo-wt-theirs")) // another repository's
	os.Mkdir(filepath.Join(dir, "demo-wt-plain"), 0o700)                                             // no worktree
	os.Symlink(filepath.Join(dir, "demo-wt-good"), filepath.Join(dir, "demo-wt-link"))

	p, ok := a.worktreeProject("demo-wt-good")
	if !ok || p.Root != filepath.Join(dir, "demo-wt-good") || p.Source != project.LocalID("demo") || !p.Worktree() {
		t.Fatalf("the runner's worktree: %+v %v", p, ok)
	}
	var spec runner.Spec
	grantWorktree(p, &spec)
	if len(spec.Sandbox.ProjectWrite) == 0 {
		t.Fatal("a process of the worktree gets no commit grants")
	}
	for _, name := range []string{"demo-wt-theirs", "demo-wt-plain", "demo-wt-link", "demo-wt-missing", "other-wt-good", "../demo-wt-good", "demo"} {
		if p, ok := a.worktreeProject(name); ok {
			t.Errorf("%q resolved to %+v", name, p)
		}
	}
}
