package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/gitrepo/gittest"
	"github.com/webcodex/webcodex/internal/worktree"
)

// runnerWorktreeFixture is a runner fixture whose project is a git
// repository with one commit, and the directory where that runner keeps its
// managed worktrees (the runner's user configuration directory is a
// temporary one: XDG_CONFIG_HOME, inherited by the runner child).
type runnerWorktreeFixture struct {
	*runnerFixture
	seed string // the repository's one commit
	wts  string // worktree.RunnerDir of the runner child
}

func newRunnerWorktreeFixture(t *testing.T) *runnerWorktreeFixture {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the runner's worktrees directory is placed through XDG_CONFIG_HOME")
	}
	gittest.Need(t)
	f := newRunnerFixture(t)
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "seed"}} {
		gittest.Run(t, f.dir, args...)
	}
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	wts, err := filepath.EvalSymlinks(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &runnerWorktreeFixture{runnerFixture: f, seed: gittest.Run(t, f.dir, "rev-parse", "HEAD"),
		wts: filepath.Join(wts, "webcodex", worktree.RunnerDirName)}
}

// made lists the worktree directories the runner holds.
func (f *runnerWorktreeFixture) made(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(f.wts)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// unchanged checks that nothing was made: no worktree directory on the
// runner, no worktree project registered, the source's repository knows
// only its main checkout.
func (f *runnerWorktreeFixture) unchanged(t *testing.T, what string) {
	t.Helper()
	if m := f.made(t); len(m) != 0 {
		t.Errorf("%s left worktree directories on the runner: %v", what, m)
	}
	if out := mustRun(t, "--data-dir", f.data, "project", "list", "--json"); strings.Contains(out, "-wt-") {
		t.Errorf("%s registered a worktree project:\n%s", what, out)
	}
	if out := gittest.Run(t, f.dir, "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 1 {
		t.Errorf("%s added a worktree to the source repository:\n%s", what, out)
	}
}

type worktreeStart struct {
	SessionID string `json:"session_id"`
	Project   string `json:"project"`
	Worktree  struct {
		Managed       bool   `json:"managed"`
		Project       string `json:"project"`
		Path          string `json:"path"`
		SourceProject string `json:"source_project"`
		BaseCommit    string `json:"base_commit"`
	} `json:"worktree"`
}

// TestRunnerManagedWorktree: work_on_project mode=worktree on a runner's
// project makes the worktree with the runner's git in the runner's
// worktrees directory, serves it through the runner as a project of that
// runner, every tool works in it (edit, diff, a commit from a sandboxed
// shell), the main checkout stays as it was, and close_session
// remove_worktree removes it on the runner. Bad inputs change nothing.
func TestRunnerManagedWorktree(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server and runner processes")
	}
	overTransports(t, runnerManagedWorktree)
}

func runnerManagedWorktree(t *testing.T, transport string) {
	f := newRunnerWorktreeFixture(t)
	r := startRunner(t, f.srv.base, f.toml, f.token, "--transport", transport)
	ctx := context.Background()
	open := func(args map[string]any) toolResult {
		t.Helper()
		args["project"], args["instruction"], args["mode"] = remoteProject, "work in a worktree", "worktree"
		res, err := callTool(ctx, f.srv.base, "work_on_project", args, "")
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// Bad inputs: the exact kind, nothing made.
	for _, c := range []struct {
		ref, kind string
	}{{"no-such-ref", "unknown_ref"}, {"--output=/tmp/x", "invalid_arguments"}} {
		if res := open(map[string]any{"base_ref": c.ref}); res.Success || res.Error.Kind != c.kind {
			t.Fatalf("base_ref %q: %+v", c.ref, res)
		}
		f.unchanged(t, "base_ref "+c.ref)
	}

	var wt worktreeStart
	res := open(map[string]any{})
	if !res.Success {
		t.Fatalf("work_on_project mode=worktree on a runner project: %+v", res.Error)
	}
	if err := json.Unmarshal(res.Output, &wt); err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(wt.Worktree.Project, "agent:box:")
	if !wt.Worktree.Managed || wt.Project != wt.Worktree.Project || !strings.HasPrefix(name, "demo-wt-") ||
		wt.Worktree.Path != filepath.Join(f.wts, name) || wt.Worktree.SourceProject != remoteProject || wt.Worktree.BaseCommit != f.seed {
		t.Fatalf("the worktree: %+v (runner's worktrees in %s)", wt, f.wts)
	}
	if b, err := os.ReadFile(filepath.Join(wt.Worktree.Path, "main.go")); err != nil || !strings.Contains(string(b), "package main") {
		t.Fatalf("the runner's checkout: %v %q", err, b)
	}

	// Every tool works in it, through the runner.
	wp := wt.Worktree.Project
	var rd struct {
		Files []struct {
			ReadRevision string `json:"read_revision"`
		} `json:"files"`
	}
	call(t, f.srv.base, "read_files", map[string]any{"project": wp, "files": []any{map[string]any{"path": "notes/todo.txt"}}}, &rd)
	ed, err := callTool(ctx, f.srv.base, "apply_text_edits", map[string]any{"project": wp, "session_id": wt.SessionID,
		"changes": []any{map[string]any{"path": "notes/todo.txt", "op": "replace", "expected_read_revision": rd.Files[0].ReadRevision,
			"edits": []any{map[string]any{"old_text": "needle here", "new_text": "needle in the worktree"}}}}}, "")
	if err != nil || !ed.Success {
		t.Fatalf("apply_text_edits in the worktree: %v %+v", err, ed.Error)
	}
	gd, err := callTool(ctx, f.srv.base, "git_diff", map[string]any{"project": wp}, "")
	if err != nil || !gd.Success || !strings.Contains(string(gd.Output), "needle in the worktree") {
		t.Fatalf("git_diff in the worktree: %v %+v %s", err, gd.Error, gd.Output)
	}
	commit, err := callTool(ctx, f.srv.base, "run_shell", map[string]any{"project": wp, "session_id": wt.SessionID,
		"command": "git -c user.name=t -c user.email=t@example.com -c commit.gpgsign=false commit -qam 'in the worktree' && git log --format=%s -1"}, "")
	if err != nil || !commit.Success || !strings.Contains(string(commit.Output), "in the worktree") ||
		!strings.Contains(string(commit.Output), `"sandbox":"workspace-write"`) {
		t.Fatalf("a commit from a sandboxed shell in the worktree: %v %+v %s", err, commit.Error, commit.Output)
	}
	var status struct {
		IsGitRepo bool              `json:"is_git_repo"`
		Entries   []json.RawMessage `json:"entries"`
	}
	call(t, f.srv.base, "git_status", map[string]any{"project": wp}, &status)
	if !status.IsGitRepo || len(status.Entries) != 0 {
		t.Fatalf("git_status in the worktree after the commit: %+v", status)
	}
	fin, err := callTool(ctx, f.srv.base, "finish_coding_task", map[string]any{"session_id": wt.SessionID, "summary_only": false}, "")
	if err != nil || !fin.Success || !strings.Contains(string(fin.Output), "notes/todo.txt") {
		t.Fatalf("finish_coding_task in the worktree: %v %+v %s", err, fin.Error, fin.Output)
	}
	// The main checkout is as it was: same HEAD, same file, clean.
	if head := gittest.Run(t, f.dir, "rev-parse", "HEAD"); head != f.seed {
		t.Fatalf("the main checkout's HEAD moved: %s", head)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "notes/todo.txt")); string(b) != "remote line one\nneedle here\n" {
		t.Fatalf("the main checkout's file changed: %q", b)
	}
	call(t, f.srv.base, "git_status", map[string]any{"project": remoteProject}, &status)
	if len(status.Entries) != 0 {
		t.Fatalf("the main checkout is not clean: %+v", status)
	}

	// An exact resume re-observes it: base_ref must name the base commit.
	var again worktreeStart
	call(t, f.srv.base, "work_on_project", map[string]any{"project": wp, "session_id": wt.SessionID, "instruction": "go on",
		"mode": "worktree", "base_ref": f.seed}, &again)
	if again.Worktree.Project != wp || again.Worktree.BaseCommit != f.seed {
		t.Fatalf("resume: %+v", again)
	}

	// close_session remove_worktree refuses a worktree with changes, and
	// an ordinary session's; nothing changes.
	if err := os.WriteFile(filepath.Join(wt.Worktree.Path, "scratch.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	closeWT := func(session string) toolResult {
		t.Helper()
		res, err := callTool(ctx, f.srv.base, "close_session", map[string]any{"session_id": session, "remove_worktree": true}, "")
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	lifecycle := func(session string) string {
		t.Helper()
		var sum struct {
			Session struct {
				Lifecycle string `json:"lifecycle"`
			} `json:"session"`
		}
		call(t, f.srv.base, "session_summary", map[string]any{"session_id": session}, &sum)
		return sum.Session.Lifecycle
	}
	if res := closeWT(wt.SessionID); res.Success || res.Error.Kind != "operation_failed" {
		t.Fatalf("removing a dirty worktree: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(wt.Worktree.Path, "scratch.txt")); err != nil || lifecycle(wt.SessionID) != "active" {
		t.Fatalf("a refused removal changed something: %v %s", err, lifecycle(wt.SessionID))
	}
	var plain struct {
		SessionID string `json:"session_id"`
	}
	call(t, f.srv.base, "work_on_project", map[string]any{"project": wp, "instruction": "a second session here"}, &plain)
	if res := closeWT(wt.SessionID); res.Success || res.Error.Kind != "project_in_use" {
		t.Fatalf("removing a worktree another session works in: %+v", res)
	}
	if lifecycle(wt.SessionID) != "active" || len(f.made(t)) != 1 {
		t.Fatal("a refused removal changed something")
	}
	call(t, f.srv.base, "close_session", map[string]any{"session_id": plain.SessionID}, &struct{}{})
	call(t, f.srv.base, "work_on_project", map[string]any{"project": remoteProject, "instruction": "no worktree"}, &plain)
	if res := closeWT(plain.SessionID); res.Success || res.Error.Kind != "not_a_worktree" {
		t.Fatalf("remove_worktree on an ordinary session: %+v", res)
	}
	if lifecycle(plain.SessionID) != "active" {
		t.Fatal("a refused remove_worktree closed the session")
	}

	// webcodex project remove reaches no runner: it refuses, removing
	// nothing.
	if out, err := run(t, "--data-dir", f.data, "project", "remove", "--force", wp); !failure.Is(err, failure.Unavailable) {
		t.Fatalf("webcodex project remove of a runner's worktree: %v\n%s", err, out)
	}
	if len(f.made(t)) != 1 || lifecycle(wt.SessionID) != "active" {
		t.Fatal("a refused project remove changed something")
	}

	// A clean worktree is removed on the runner, then unregistered; its
	// commit stays in the repository's objects.
	if err := os.Remove(filepath.Join(wt.Worktree.Path, "scratch.txt")); err != nil {
		t.Fatal(err)
	}
	res = closeWT(wt.SessionID)
	var closed struct {
		Lifecycle       string `json:"lifecycle"`
		WorktreeRemoved string `json:"worktree_removed"`
	}
	if !res.Success || json.Unmarshal(res.Output, &closed) != nil || closed.Lifecycle != "closed" || closed.WorktreeRemoved != wp {
		t.Fatalf("close_session remove_worktree: %+v %s", res.Error, res.Output)
	}
	f.unchanged(t, "the removal")
	gone, err := callTool(ctx, f.srv.base, "read_files", map[string]any{"project": wp, "files": []any{map[string]any{"path": "main.go"}}}, "")
	if err != nil || gone.Success || gone.Error.Kind != "unknown_project" {
		t.Fatalf("the removed worktree is still served: %v %+v", err, gone)
	}

	// With the runner gone: runner_unavailable, nothing made.
	r.cmd.Process.Kill()
	<-r.done
	waitRunnerState(t, f.srv.base, false)
	if res := open(map[string]any{}); res.Success || res.Error.Kind != "runner_unavailable" {
		t.Fatalf("mode=worktree with the runner gone: %+v", res)
	}
	f.unchanged(t, "a call with the runner gone")
}

// TestRunnerWorktreeAnswerLost: the connection is cut right after
// worktree.add was sent: the call is outcome_unknown (the runner may have
// made the worktree), and no session or project claims it.
func TestRunnerWorktreeAnswerLost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server and runner processes")
	}
	overTransports(t, runnerWorktreeAnswerLost)
}

// runnerWorktreeAnswerLost: over long-poll an answer that arrived whole is
// delivered, so there the cut tears the answer carrying the request.
func runnerWorktreeAnswerLost(t *testing.T, transport string) {
	f := newRunnerWorktreeFixture(t)
	proxy := startCutProxy(t, strings.TrimPrefix(f.srv.base, "http://"), `"op":"worktree.add"`, transport == "longpoll")
	r := startRunner(t, "http://"+proxy.ln.Addr().String(), f.toml, f.token, "--transport", transport)
	res, err := callTool(context.Background(), f.srv.base, "work_on_project",
		map[string]any{"project": remoteProject, "instruction": "work in a worktree", "mode": "worktree"}, "")
	if err != nil || res.Success || res.Error.Kind != "outcome_unknown" {
		t.Fatalf("a worktree.add whose answer was lost: %v %+v", err, res)
	}
	r.waitConnected(t)
	if out := mustRun(t, "--data-dir", f.data, "project", "list", "--json"); strings.Contains(out, "-wt-") {
		t.Errorf("a lost worktree.add registered a worktree project:\n%s", out)
	}
	var list struct {
		Total int `json:"total"`
	}
	call(t, f.srv.base, "list_sessions", map[string]any{"project": remoteProject}, &list)
	if list.Total != 0 {
		t.Errorf("a lost worktree.add made %d sessions", list.Total)
	}
}
