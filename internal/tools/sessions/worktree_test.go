package sessions_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/gitrepo/gittest"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/project/projectdb"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/tools/sessions"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
	"github.com/webcodex/webcodex/internal/worktree"
)

type wtEnv struct {
	*kerneltest.Env
	svc  *workflow.Service
	reg  *project.Registry
	m    *worktree.Manager
	data string
}

// newWtEnv registers a git source project (commits one and two, tag v1
// at one) in a real registry the kernel resolves from, with worktrees in
// the data directory run through a sandboxed runner.
func newWtEnv(t *testing.T) *wtEnv {
	t.Helper()
	gittest.Need(t)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	ctx := context.Background()
	data, _ := project.CanonicalRoot(t.TempDir())
	src, _ := project.CanonicalRoot(t.TempDir())
	gittest.Run(t, src, "init", "-q")
	os.WriteFile(filepath.Join(src, "AGENTS.md"), []byte("one\n"), 0o644)
	gittest.Run(t, src, "add", ".")
	gittest.Run(t, src, "commit", "-q", "-m", "one")
	gittest.Run(t, src, "tag", "v1")
	os.WriteFile(filepath.Join(src, "AGENTS.md"), []byte("two\n"), 0o644)
	gittest.Run(t, src, "commit", "-q", "-am", "two")
	ps, err := projectdb.Open(ctx, filepath.Join(data, projectdb.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.Close() })
	ws, err := workflowdb.Open(ctx, filepath.Join(data, "workflow.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	reg := project.NewRegistry(ps, nil)
	p, err := reg.Register(ctx, "src", src)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(data, worktree.DirName)
	pol := &runner.Policy{Mode: runner.WorkspaceWrite, Deny: []string{data}, Allow: []string{dir}}
	t.Cleanup(pol.Close)
	m := &worktree.Manager{Projects: reg, Host: &runner.Local{Policy: pol}, Dir: dir}
	svc := workflow.NewService(ws, nil)
	kreg := kernel.NewRegistry()
	sessions.Register(kreg, &sessions.Tools{Sessions: svc, Worktrees: m, Guidance: "g"})
	k := kernel.New(kernel.Options{Registry: kreg, Projects: reg, Sessions: svc})
	return &wtEnv{Env: &kerneltest.Env{T: t, Kernel: k, Project: p}, svc: svc, reg: reg, m: m, data: data}
}

func worktreeOf(t *testing.T, out sessions.WorkOutput) sessions.WorktreeView {
	t.Helper()
	b, _ := json.Marshal(out.Worktree)
	var v sessions.WorktreeView
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// nothingCreated checks that only the source is registered, that no
// session exists, and that git knows no worktree but the source.
func (e *wtEnv) nothingCreated() {
	e.T.Helper()
	ctx := context.Background()
	ps, _ := e.reg.List(ctx)
	if len(ps) != 1 {
		e.T.Errorf("%d projects registered", len(ps))
	}
	if _, total, _ := e.svc.List(ctx, workflow.ListFilter{}); total != 0 {
		e.T.Errorf("%d sessions created", total)
	}
	if list := gittest.Run(e.T, e.Project.Root, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		e.T.Errorf("git worktrees: %s", list)
	}
}

func TestWorktreeModeStartsOnANewWorktree(t *testing.T) {
	e := newWtEnv(t)
	head := gittest.Run(t, e.Project.Root, "rev-parse", "HEAD")
	out := kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"instruction": "fix it", "mode": "worktree"}))
	v := worktreeOf(t, out)
	if out.Project == e.Project.ID || v.Project != out.Project || v.SourceProject != e.Project.ID || v.BaseCommit != head ||
		!v.Managed || v.SourceDirty || out.Mode != workflow.ModeNormal || len(out.Warnings) != 0 ||
		!strings.HasPrefix(v.Path, e.m.Dir+string(filepath.Separator)) {
		t.Fatalf("worktree start: %+v %+v", out, v)
	}
	s, err := e.svc.Get(context.Background(), out.SessionID)
	if err != nil || s.Project != v.Project {
		t.Fatalf("session on %q, want the worktree %s (%v)", s.Project, v.Project, err)
	}
	// The instruction files are the worktree's.
	if out.Instructions.Sources[0].Content != "two\n" {
		t.Fatalf("instructions: %+v", out.Instructions)
	}
	// Resume names the worktree project; a base_ref must resolve to the
	// stored base commit.
	resume := func(ref string) kernel.Result {
		args := map[string]any{"project": v.Project, "session_id": out.SessionID, "instruction": "more", "mode": "worktree"}
		if ref != "" {
			args["base_ref"] = ref
		}
		return e.Call("work_on_project", args)
	}
	r := kerneltest.OK[sessions.WorkOutput](t, resume("main"))
	if r.SessionID != out.SessionID || r.Continuation != "continued" || worktreeOf(t, r).BaseCommit != head {
		t.Fatalf("resume with the matching base_ref: %+v", r)
	}
	before, _ := e.svc.Get(context.Background(), out.SessionID)
	kerneltest.Fails(t, resume("v1"), failure.BaseRefMismatch)
	kerneltest.Fails(t, resume("no-such-ref"), failure.UnknownRef)
	evs, _ := e.svc.Store().Events(context.Background(), out.SessionID, 0)
	for _, ev := range evs {
		if ev.Seq > before.EventsObserved && ev.Kind == workflow.EventTaskInstruction {
			t.Fatalf("a refused resume appended an instruction: %+v", ev)
		}
	}
	if ps, _ := e.reg.List(context.Background()); len(ps) != 2 {
		t.Fatalf("resume created worktrees: %d projects", len(ps))
	}
	// The source project with a worktree session is refused by the
	// session's project fence; an ordinary session in worktree mode is
	// not a worktree.
	kerneltest.Fails(t, e.Call("work_on_project", map[string]any{"session_id": out.SessionID, "instruction": "x", "mode": "worktree"}), failure.SessionProjectMismatch)
	plain := kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"instruction": "plain"}))
	kerneltest.Fails(t, e.Call("work_on_project", map[string]any{"session_id": plain.SessionID, "instruction": "x", "mode": "worktree"}), failure.NotAWorktree)
	// Closing the session removes nothing.
	kerneltest.OK[sessions.CloseOutput](t, e.Call("close_session", map[string]any{"session_id": out.SessionID, "project": v.Project}))
	if _, err := os.Stat(filepath.Join(v.Path, "AGENTS.md")); err != nil {
		t.Fatalf("closing removed the worktree: %v", err)
	}
	if _, err := e.reg.Get(context.Background(), v.Project); err != nil {
		t.Fatalf("closing unregistered the worktree: %v", err)
	}
}

func TestWorktreeModeAtARefWithADirtySource(t *testing.T) {
	e := newWtEnv(t)
	os.WriteFile(filepath.Join(e.Project.Root, "scratch.txt"), []byte("x"), 0o644)
	out := kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"instruction": "old", "mode": "worktree", "base_ref": "v1"}))
	v := worktreeOf(t, out)
	if v.BaseCommit != gittest.Run(t, e.Project.Root, "rev-parse", "v1^{commit}") || v.BaseRef != "v1" || !v.SourceDirty ||
		len(out.Warnings) != 1 || out.Warnings[0] != sessions.WarningSourceDirty || out.Instructions.Sources[0].Content != "one\n" {
		t.Fatalf("worktree at v1 from a dirty source: %+v %+v", out, v)
	}
}

func TestWorktreeModeBadInputChangesNothing(t *testing.T) {
	t.Run("unknown ref", func(t *testing.T) {
		e := newWtEnv(t)
		kerneltest.Fails(t, e.Call("work_on_project", map[string]any{"instruction": "x", "mode": "worktree", "base_ref": "nope"}), failure.UnknownRef)
		e.nothingCreated()
		if _, err := os.Stat(e.m.Dir); err == nil {
			t.Error("the worktrees directory was created")
		}
	})
	t.Run("not a git checkout", func(t *testing.T) {
		e := newWtEnv(t)
		os.RemoveAll(filepath.Join(e.Project.Root, ".git"))
		kerneltest.Fails(t, e.Call("work_on_project", map[string]any{"instruction": "x", "mode": "worktree"}), failure.NotAGitCheckout)
		ps, _ := e.reg.List(context.Background())
		if _, total, _ := e.svc.List(context.Background(), workflow.ListFilter{}); len(ps) != 1 || total != 0 {
			t.Errorf("%d projects, %d sessions", len(ps), total)
		}
		if _, err := os.Stat(e.m.Dir); err == nil {
			t.Error("the worktrees directory was created")
		}
	})
	t.Run("worktree path exists", func(t *testing.T) {
		e := newWtEnv(t)
		e.m.Suffix = func() string { return "taken000" }
		taken := filepath.Join(e.m.Dir, "src-wt-taken000")
		os.MkdirAll(taken, 0o755)
		kerneltest.Fails(t, e.Call("work_on_project", map[string]any{"instruction": "x", "mode": "worktree"}), failure.WorktreeExists)
		e.nothingCreated()
		if entries, _ := os.ReadDir(taken); len(entries) != 0 {
			t.Errorf("the existing directory was written: %d entries", len(entries))
		}
	})
	t.Run("invalid instruction or scope", func(t *testing.T) {
		e := newWtEnv(t)
		kerneltest.Fails(t, e.Call("work_on_project", map[string]any{"instruction": "", "mode": "worktree"}), failure.InvalidCodingInstruction)
		reader := auth.Principal{Kind: auth.KindAPIToken, ID: "tok_r", Owner: "local", Scopes: []auth.Scope{auth.ScopeProjectRead}}
		kerneltest.Fails(t, e.CallAs(reader, "work_on_project", map[string]any{"instruction": "x", "mode": "worktree"}), failure.InsufficientScope)
		e.nothingCreated()
		if _, err := os.Stat(e.m.Dir); err == nil {
			t.Error("the worktrees directory was created")
		}
	})
}
