package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/gitrepo/gittest"
)

// TestProjectListAndRemoveWorktrees: with a server running, two
// work_on_project mode=worktree sessions make two worktrees; `project
// list` shows each with its source and base; `project remove` refuses
// the one whose session is active (changing nothing), removes the one
// whose session was closed, and removes the active one with --force.
func TestProjectListAndRemoveWorktrees(t *testing.T) {
	gittest.Need(t)
	data, src := t.TempDir(), t.TempDir()
	gitc := func(args ...string) string { return gittest.Run(t, src, args...) }
	gitc("init", "-q")
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("a\n"), 0o644)
	gitc("add", ".")
	gitc("commit", "-q", "-m", "a")
	head := gitc("rev-parse", "HEAD")
	srv := startServe(t, "--data-dir", data, "--project", "src="+src)
	start := func() (session, proj, path string) {
		out := mustCall(t, srv.base, "work_on_project", map[string]any{"project": "agent:local:src", "mode": "worktree", "instruction": "go"})
		return field(t, out, "session_id"), field(t, out, "worktree", "project"), field(t, out, "worktree", "path")
	}
	_, wActive, pActive := start()
	closed, wClosed, pClosed := start()
	mustCall(t, srv.base, "close_session", map[string]any{"session_id": closed})

	var list struct {
		Projects []struct {
			ID         string `json:"id"`
			Source     string `json:"source"`
			BaseCommit string `json:"base_commit"`
		} `json:"projects"`
	}
	json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "project", "list", "--json")), &list)
	seen := map[string]bool{}
	for _, p := range list.Projects {
		if p.ID == wActive || p.ID == wClosed {
			seen[p.ID] = p.Source == "agent:local:src" && p.BaseCommit == head
		}
	}
	if !seen[wActive] || !seen[wClosed] {
		t.Fatalf("project list --json: %+v", list)
	}
	if out := mustRun(t, "--data-dir", data, "project", "list"); !strings.Contains(out, "WORKTREE OF") || !strings.Contains(out, head[:12]) {
		t.Fatalf("project list:\n%s", out)
	}

	// Refused while active: nothing changes.
	_, err := run(t, "--data-dir", data, "project", "remove", wActive)
	if !failure.Is(err, failure.ProjectInUse) {
		t.Fatalf("remove with an active session: %v", err)
	}
	if _, err := os.Stat(filepath.Join(pActive, "a.txt")); err != nil {
		t.Fatalf("a refused remove touched the worktree: %v", err)
	}
	if out := mustRun(t, "--data-dir", data, "project", "list"); !strings.Contains(out, wActive) {
		t.Fatalf("a refused remove unregistered the worktree:\n%s", out)
	}
	// A closed session's worktree goes without --force.
	mustRun(t, "--data-dir", data, "project", "remove", wClosed)
	if _, err := os.Stat(pClosed); err == nil {
		t.Fatal("the removed worktree's directory is still there")
	}
	// --force removes the active one.
	mustRun(t, "--data-dir", data, "project", "remove", "--force", wActive)
	if _, err := os.Stat(pActive); err == nil {
		t.Fatal("the force-removed worktree's directory is still there")
	}
	out := mustRun(t, "--data-dir", data, "project", "list")
	if strings.Contains(out, wActive) || strings.Contains(out, wClosed) || !strings.Contains(out, "agent:local:src") {
		t.Fatalf("project list after removal:\n%s", out)
	}
	if wl := gitc("worktree", "list", "--porcelain"); strings.Count(wl, "worktree ") != 1 {
		t.Fatalf("git still knows removed worktrees:\n%s", wl)
	}
	if st := gitc("status", "--porcelain"); st != "" {
		t.Fatalf("the source checkout changed: %s", st)
	}
}
