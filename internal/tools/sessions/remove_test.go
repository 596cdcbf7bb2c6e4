package sessions_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/tools/sessions"
	"github.com/webcodex/webcodex/internal/workflow"
)

// close_session remove_worktree removes the session's clean managed
// worktree and unregisters it; every refusal changes nothing: the session
// stays active, the worktree and its registration stay.
func TestCloseSessionRemovesTheWorktree(t *testing.T) {
	e := newWtEnv(t)
	out := kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"instruction": "fix it", "mode": "worktree"}))
	v := worktreeOf(t, out)
	unchanged := func(what string) {
		t.Helper()
		s, err := e.svc.Get(t.Context(), out.SessionID)
		if err != nil || s.Lifecycle != workflow.Active {
			t.Fatalf("%s: the session is %v %v", what, s.Lifecycle, err)
		}
		if _, err := e.reg.Get(t.Context(), v.Project); err != nil {
			t.Fatalf("%s: the worktree was unregistered: %v", what, err)
		}
		if _, err := os.Stat(filepath.Join(v.Path, "AGENTS.md")); err != nil {
			t.Fatalf("%s: the worktree's files: %v", what, err)
		}
	}
	closeArgs := map[string]any{"session_id": out.SessionID, "project": v.Project, "remove_worktree": true}

	reader := auth.Principal{Kind: auth.KindAPIToken, ID: "tok_r", Owner: "local", Scopes: []auth.Scope{auth.ScopeProjectRead}}
	kerneltest.Fails(t, e.CallAs(reader, "close_session", closeArgs), failure.InsufficientScope)
	unchanged("a reader")

	scratch := filepath.Join(v.Path, "scratch.txt")
	os.WriteFile(scratch, []byte("x\n"), 0o644)
	kerneltest.Fails(t, e.Call("close_session", closeArgs), failure.OperationFailed)
	unchanged("a dirty worktree")
	os.Remove(scratch)

	other := kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"project": v.Project, "instruction": "also here"}))
	kerneltest.Fails(t, e.Call("close_session", closeArgs), failure.ProjectInUse)
	unchanged("another active session")
	kerneltest.OK[sessions.CloseOutput](t, e.Call("close_session", map[string]any{"session_id": other.SessionID, "project": v.Project}))

	plain := kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"instruction": "plain"}))
	kerneltest.Fails(t, e.Call("close_session", map[string]any{"session_id": plain.SessionID, "remove_worktree": true}), failure.NotAWorktree)
	if s, _ := e.svc.Get(t.Context(), plain.SessionID); s.Lifecycle != workflow.Active {
		t.Fatal("a refused remove_worktree closed an ordinary session")
	}

	done := kerneltest.OK[sessions.CloseOutput](t, e.Call("close_session", closeArgs))
	if done.Lifecycle != workflow.Closed || done.WorktreeRemoved != v.Project {
		t.Fatalf("close_session remove_worktree: %+v", done)
	}
	if _, err := os.Stat(v.Path); !os.IsNotExist(err) {
		t.Fatalf("the worktree's directory is still there: %v", err)
	}
	if _, err := e.reg.Get(t.Context(), v.Project); !failure.Is(err, failure.UnknownProject) {
		t.Fatalf("the removed worktree is still registered: %v", err)
	}
}
