package worktree_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/gitrepo/gittest"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/project/projectdb"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/worktree"
)

type env struct {
	t      *testing.T
	data   string
	reg    *project.Registry
	m      *worktree.Manager
	source project.Project
}

// newEnv makes a source repository with two commits (tag v1 at the
// first), a registry in a real SQLite file and a manager whose worktrees
// live in the data directory, run through a sandboxed runner that denies
// the data directory but allows its worktrees, as the server's does.
func newEnv(t *testing.T) *env {
	t.Helper()
	gittest.Need(t)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	data, _ := project.CanonicalRoot(t.TempDir())
	src, _ := project.CanonicalRoot(t.TempDir())
	gittest.Run(t, src, "init", "-q")
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("one\n"), 0o644)
	gittest.Run(t, src, "add", ".")
	gittest.Run(t, src, "commit", "-q", "-m", "one")
	gittest.Run(t, src, "tag", "v1")
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("two\n"), 0o644)
	gittest.Run(t, src, "commit", "-q", "-am", "two")
	st, err := projectdb.Open(context.Background(), filepath.Join(data, projectdb.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := project.NewRegistry(st, nil)
	sp, err := reg.Register(context.Background(), "src", src)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(data, worktree.DirName)
	pol := &runner.Policy{Mode: runner.WorkspaceWrite, Deny: []string{data}, Allow: []string{dir}}
	t.Cleanup(pol.Close)
	return &env{t: t, data: data, reg: reg, source: sp,
		m: &worktree.Manager{Projects: reg, Host: &runner.Local{Policy: pol}, Dir: dir}}
}

// create makes a worktree of p at ref through the manager; an error
// fails the test.
func (e *env) create(t *testing.T, p project.Project, ref string) worktree.Worktree {
	t.Helper()
	w, err := e.m.Create(context.Background(), p, ref)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// unchanged checks that a failed Create left no project, no worktree
// directory and no git worktree.
func (e *env) unchanged(projects int) {
	e.t.Helper()
	ps, _ := e.reg.List(context.Background())
	if len(ps) != projects {
		e.t.Errorf("%d projects registered, want %d", len(ps), projects)
	}
	if list := gittest.Run(e.t, e.source.Root, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		e.t.Errorf("git worktrees: %s", list)
	}
}

func TestCreateAtHeadAndAtRef(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	head := gittest.Run(t, e.source.Root, "rev-parse", "HEAD")
	w := e.create(t, e.source, "")
	if w.BaseCommit != head || w.Source != e.source.ID || w.SourceDirty || !w.Project.Worktree() ||
		w.Project.Source != e.source.ID || w.Project.BaseCommit != head || !strings.HasPrefix(w.Project.Root, e.m.Dir+"/") {
		t.Fatalf("worktree: %+v", w)
	}
	if got := gittest.Run(t, w.Project.Root, "rev-parse", "HEAD"); got != head {
		t.Fatalf("worktree HEAD %s, want %s", got, head)
	}
	stored, err := e.reg.Get(ctx, w.Project.ID)
	if err != nil || stored.Source != e.source.ID || stored.BaseCommit != head {
		t.Fatalf("registered: %+v, %v", stored, err)
	}
	v1 := gittest.Run(t, e.source.Root, "rev-parse", "v1^{commit}")
	w1, err := e.m.Create(ctx, e.source, "v1")
	if err != nil || w1.BaseCommit != v1 || w1.Project.ID == w.Project.ID {
		t.Fatalf("at v1: %+v, %v", w1, err)
	}
	if b, _ := os.ReadFile(filepath.Join(w1.Project.Root, "a.txt")); string(b) != "one\n" {
		t.Fatalf("v1 checkout has %q", b)
	}
	// Writing in one worktree touches neither the source nor the other.
	os.WriteFile(filepath.Join(w.Project.Root, "a.txt"), []byte("changed\n"), 0o644)
	if b, _ := os.ReadFile(filepath.Join(e.source.Root, "a.txt")); string(b) != "two\n" {
		t.Fatalf("source changed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(w1.Project.Root, "a.txt")); string(b) != "one\n" {
		t.Fatalf("other worktree changed: %q", b)
	}
}

func TestCreateReportsADirtySource(t *testing.T) {
	e := newEnv(t)
	os.WriteFile(filepath.Join(e.source.Root, "new.txt"), []byte("untracked\n"), 0o644)
	w, err := e.m.Create(context.Background(), e.source, "")
	if err != nil || !w.SourceDirty {
		t.Fatalf("dirty source: %+v, %v", w, err)
	}
	if _, err := os.Stat(filepath.Join(w.Project.Root, "new.txt")); err == nil {
		t.Fatal("the untracked file was carried into the worktree")
	}
}

func TestCreateBadInputChangesNothing(t *testing.T) {
	ctx := context.Background()
	t.Run("unknown ref", func(t *testing.T) {
		e := newEnv(t)
		for _, ref := range []string{"no-such-branch", "0123456789abcdef0123456789abcdef01234567"} {
			if _, err := e.m.Create(ctx, e.source, ref); !failure.Is(err, failure.UnknownRef) {
				t.Fatalf("%s: %v", ref, err)
			}
		}
		if _, err := e.m.Create(ctx, e.source, "--output=/tmp/x"); !failure.Is(err, failure.InvalidArguments) {
			t.Fatalf("option-like ref: %v", err)
		}
		e.unchanged(1)
		if _, err := os.Stat(e.m.Dir); err == nil {
			t.Fatal("the worktrees directory was created")
		}
	})
	t.Run("not a git checkout", func(t *testing.T) {
		e := newEnv(t)
		plain, err := e.reg.Register(ctx, "plain", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.m.Create(ctx, plain, ""); !failure.Is(err, failure.NotAGitCheckout) {
			t.Fatalf("plain directory: %v", err)
		}
		sub := filepath.Join(e.source.Root, "sub")
		os.Mkdir(sub, 0o755)
		subp, err := e.reg.Register(ctx, "sub", sub)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.m.Create(ctx, subp, ""); !failure.Is(err, failure.NotAGitCheckout) {
			t.Fatalf("subdirectory of a work tree: %v", err)
		}
		e.unchanged(3)
	})
	t.Run("worktree path exists", func(t *testing.T) {
		e := newEnv(t)
		e.m.Suffix = func() string { return "fixed000" }
		taken := filepath.Join(e.m.Dir, "src-wt-fixed000")
		os.MkdirAll(taken, 0o755)
		os.WriteFile(filepath.Join(taken, "keep.txt"), []byte("mine"), 0o644)
		if _, err := e.m.Create(ctx, e.source, ""); !failure.Is(err, failure.WorktreeExists) {
			t.Fatalf("existing path: %v", err)
		}
		e.unchanged(1)
		entries, _ := os.ReadDir(taken)
		if b, _ := os.ReadFile(filepath.Join(taken, "keep.txt")); len(entries) != 1 || string(b) != "mine" {
			t.Fatalf("the existing directory was touched: %d entries", len(entries))
		}
	})
}

func TestResumeChecksTheBaseCommit(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	w := e.create(t, e.source, "v1")
	if r, err := e.m.Resume(ctx, w.Project, "v1"); err != nil || r.BaseCommit != w.BaseCommit {
		t.Fatalf("matching base_ref: %+v, %v", r, err)
	}
	if _, err := e.m.Resume(ctx, w.Project, ""); err != nil {
		t.Fatalf("no base_ref: %v", err)
	}
	_, err := e.m.Resume(ctx, w.Project, "main")
	if !failure.Is(err, failure.BaseRefMismatch) || failure.DetailOf(err)["base_commit"] != w.BaseCommit {
		t.Fatalf("mismatching base_ref: %v", err)
	}
	if _, err := e.m.Resume(ctx, w.Project, "nope"); !failure.Is(err, failure.UnknownRef) {
		t.Fatalf("unknown base_ref: %v", err)
	}
	if _, err := e.m.Resume(ctx, e.source, ""); !failure.Is(err, failure.NotAWorktree) {
		t.Fatalf("ordinary project: %v", err)
	}
	os.RemoveAll(w.Project.Root)
	if _, err := e.m.Resume(ctx, w.Project, ""); !failure.Is(err, failure.NotAGitCheckout) {
		t.Fatalf("worktree directory gone: %v", err)
	}
}

func TestRemove(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	w := e.create(t, e.source, "")
	os.WriteFile(filepath.Join(w.Project.Root, "a.txt"), []byte("dirty\n"), 0o644)
	if err := e.m.Remove(ctx, w.Project, false); !failure.Is(err, failure.OperationFailed) {
		t.Fatalf("removing a dirty worktree without force: %v", err)
	}
	if _, err := e.reg.Get(ctx, w.Project.ID); err != nil {
		t.Fatalf("a refused removal unregistered the worktree: %v", err)
	}
	if err := e.m.Remove(ctx, w.Project, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.Project.Root); err == nil {
		t.Fatal("the worktree directory is still there")
	}
	e.unchanged(1)
	if err := e.m.Remove(ctx, e.source, true); !failure.Is(err, failure.NotAWorktree) {
		t.Fatalf("removing the source: %v", err)
	}
}

// newRepo makes a git repository with one commit of a.txt in a new
// canonical directory.
func newRepo(t *testing.T) string {
	t.Helper()
	dir, _ := project.CanonicalRoot(t.TempDir())
	gittest.Run(t, dir, "init", "-q")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("victim\n"), 0o644)
	gittest.Run(t, dir, "add", ".")
	gittest.Run(t, dir, "commit", "-q", "-m", "one")
	return dir
}

// untouched checks that a refused Create changed nothing in the victim
// repository: no worktrees directory in its git directory, one worktree.
func untouched(t *testing.T, victim string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(victim, ".git", "worktrees")); err == nil {
		t.Error("the server created worktrees/ inside another project's repository")
	}
	if list := gittest.Run(t, victim, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("victim's git worktrees: %s", list)
	}
}

// TestCreateRefusesAGitDirOutsideTheSource reproduces the redirect
// finding: a source whose .git is a file or a symbolic link naming
// another project's repository, or whose .git/commondir does, is refused
// with git_dir_outside_project before anything is created; the other
// repository, the worktrees directory and the registry are unchanged.
func TestCreateRefusesAGitDirOutsideTheSource(t *testing.T) {
	ctx := context.Background()
	for name, redirect := range map[string]func(t *testing.T, src, victim string){
		".git file": func(t *testing.T, src, victim string) {
			os.WriteFile(filepath.Join(src, ".git"), []byte("gitdir: "+filepath.Join(victim, ".git")+"\n"), 0o644)
		},
		".git symlink": func(t *testing.T, src, victim string) {
			os.Symlink(filepath.Join(victim, ".git"), filepath.Join(src, ".git"))
		},
		"commondir": func(t *testing.T, src, victim string) {
			gd := filepath.Join(src, ".git")
			os.Mkdir(gd, 0o755)
			os.WriteFile(filepath.Join(gd, "HEAD"), []byte(gittest.Run(t, victim, "rev-parse", "HEAD")+"\n"), 0o644)
			os.WriteFile(filepath.Join(gd, "commondir"), []byte(filepath.Join(victim, ".git")+"\n"), 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			victim := newRepo(t)
			if _, err := e.reg.Register(ctx, "victim", victim); err != nil {
				t.Fatal(err)
			}
			src, _ := project.CanonicalRoot(t.TempDir())
			os.WriteFile(filepath.Join(src, "a.txt"), []byte("victim\n"), 0o644)
			redirect(t, src, victim)
			// git itself takes the directory for a work tree of the
			// victim's repository: the redirect is live.
			if got := gittest.Run(t, src, "rev-parse", "--is-inside-work-tree"); got != "true" {
				t.Fatalf("git does not follow the redirect: %s", got)
			}
			evil, err := e.reg.Register(ctx, "evil", src)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.m.Create(ctx, evil, "")
			if !failure.Is(err, failure.GitDirOutsideProject) {
				t.Fatalf("redirected source: %v", err)
			}
			untouched(t, victim)
			e.unchanged(3)
			if _, err := os.Stat(e.m.Dir); err == nil {
				t.Fatal("the worktrees directory was created")
			}
		})
	}
}

// TestCreateNeutralisesTheSourcesFilterAndHooks reproduces the smudge
// finding: the source's configuration names a smudge filter (applied to
// every file by its committed .gitattributes, and required) and a
// post-checkout hook, each writing AGENTS.md into another owner's
// worktree and a marker into the new one. Creating the worktree runs
// neither: the other worktree is unchanged, the new one holds no marker,
// and its files are the committed bytes.
func TestCreateNeutralisesTheSourcesFilterAndHooks(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	victim := e.create(t, e.source, "")
	src := newRepo(t)
	os.WriteFile(filepath.Join(src, ".gitattributes"), []byte("* filter=evil\n"), 0o644)
	gittest.Run(t, src, "add", ".gitattributes")
	gittest.Run(t, src, "commit", "-q", "-m", "attributes")
	plant := "echo pwned > " + filepath.Join(victim.Project.Root, "AGENTS.md") + "; echo ran > ran.marker"
	gittest.Run(t, src, "config", "filter.evil.smudge", "sh -c '"+plant+"; cat'")
	gittest.Run(t, src, "config", "filter.evil.required", "true")
	os.WriteFile(filepath.Join(src, ".git", "hooks", "post-checkout"), []byte("#!/bin/sh\n"+plant+"\n"), 0o755)
	evil, err := e.reg.Register(ctx, "evil", src)
	if err != nil {
		t.Fatal(err)
	}
	w := e.create(t, evil, "")
	if _, err := os.Lstat(filepath.Join(victim.Project.Root, "AGENTS.md")); err == nil {
		t.Fatal("the source's filter or hook planted AGENTS.md in another worktree")
	}
	if _, err := os.Lstat(filepath.Join(w.Project.Root, "ran.marker")); err == nil {
		t.Fatal("the source's filter or hook ran")
	}
	if b, _ := os.ReadFile(filepath.Join(w.Project.Root, "a.txt")); string(b) != "victim\n" {
		t.Fatalf("checked-out a.txt: %q", b)
	}
	if st := gittest.Run(t, victim.Project.Root, "status", "--porcelain"); st != "" {
		t.Fatalf("the other worktree changed: %s", st)
	}
}

// TestRemoveFollowsTheSourceNotTheWorktreesGitFile: a child of the
// worktree rewrites its .git to name another repository. Removal still
// judges the worktree against its own administrative directory in the
// source (a dirty worktree is refused without force), removes exactly it
// and the directory, and leaves the other repository alone.
func TestRemoveFollowsTheSourceNotTheWorktreesGitFile(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	w := e.create(t, e.source, "")
	victim := newRepo(t)
	os.WriteFile(filepath.Join(w.Project.Root, "a.txt"), []byte("dirty\n"), 0o644)
	os.WriteFile(filepath.Join(w.Project.Root, ".git"), []byte("gitdir: "+filepath.Join(victim, ".git")+"\n"), 0o644)
	if err := e.m.Remove(ctx, w.Project, false); !failure.Is(err, failure.OperationFailed) {
		t.Fatalf("removing a dirty, redirected worktree without force: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.Project.Root, "a.txt")); err != nil {
		t.Fatalf("a refused removal removed files: %v", err)
	}
	if err := e.m.Remove(ctx, w.Project, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(w.Project.Root); err == nil {
		t.Fatal("the worktree directory is still there")
	}
	e.unchanged(1)
	if _, err := os.Lstat(filepath.Join(e.source.Root, ".git", "worktrees")); err == nil {
		t.Error("the source's empty worktrees directory was left")
	}
	untouched(t, victim)
	if b, _ := os.ReadFile(filepath.Join(victim, "a.txt")); string(b) != "victim\n" {
		t.Errorf("the other repository's checkout changed: %q", b)
	}
}

// TestResumeRefusesARedirectedSource: once the source's .git names
// another repository, a resume's base_ref is not resolved there.
func TestResumeRefusesARedirectedSource(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	w := e.create(t, e.source, "v1")
	victim := newRepo(t)
	gitDir := filepath.Join(e.source.Root, ".git")
	if err := os.Rename(gitDir, gitDir+".moved"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(gitDir, []byte("gitdir: "+filepath.Join(victim, ".git")+"\n"), 0o644)
	if _, err := e.m.Resume(ctx, w.Project, "HEAD"); !failure.Is(err, failure.GitDirOutsideProject) {
		t.Fatalf("resume against a redirected source: %v", err)
	}
	untouched(t, victim)
}
