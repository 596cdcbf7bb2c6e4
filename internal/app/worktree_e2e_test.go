package app_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/runner"
)

// TestMCPWorktreeSessionsAreIsolated: over MCP, two work_on_project
// mode=worktree sessions on one source each get their own detached
// worktree project; a write in one (write_project_file) and a shell in
// the other (run_shell, sandboxed, running git) touch neither the source
// checkout nor each other; resume checks base_ref; finishing removes
// nothing.
func TestMCPWorktreeSessionsAreIsolated(t *testing.T) {
	repo := gitRepo(t)
	data := t.TempDir()
	s := startApp(t, data, "calc="+repo)
	defer s.stop(t)
	cs := connectMCP(t, s, "", nil)
	type view struct {
		Project, Path, SourceProject, BaseCommit string
		SourceDirty                              bool
	}
	start := func() (string, view) {
		t.Helper()
		r, raw := callMCP(t, cs, "work_on_project", map[string]any{"project": "agent:local:calc", "mode": "worktree", "instruction": "work apart"}, nil)
		if !r.Success {
			t.Fatalf("work_on_project mode=worktree: %s", raw)
		}
		var v struct {
			Project       string `json:"project"`
			Path          string `json:"path"`
			SourceProject string `json:"source_project"`
			BaseCommit    string `json:"base_commit"`
			SourceDirty   bool   `json:"source_dirty"`
		}
		json.Unmarshal(r.Output["worktree"], &v)
		return str(t, r.Output["session_id"]), view{v.Project, v.Path, v.SourceProject, v.BaseCommit, v.SourceDirty}
	}
	id1, w1 := start()
	id2, w2 := start()
	head, _ := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	for _, w := range []view{w1, w2} {
		if w.SourceProject != "agent:local:calc" || w.BaseCommit != strings.TrimSpace(string(head)) || w.SourceDirty ||
			!strings.HasPrefix(w.Path, filepath.Join(app.WorktreesDir(s.a.Config.DataDir))) {
			t.Fatalf("worktree: %+v", w)
		}
	}
	if w1.Project == w2.Project || w1.Path == w2.Path {
		t.Fatalf("two sessions share a worktree: %+v %+v", w1, w2)
	}
	r, raw := callMCP(t, cs, "write_project_file", map[string]any{"project": w1.Project, "session_id": id1, "path": "notes.txt", "content": "one\n"}, nil)
	if !r.Success {
		t.Fatalf("write in worktree 1: %s", raw)
	}
	r, raw = callMCP(t, cs, "run_shell", map[string]any{"project": w2.Project, "session_id": id2,
		"command": "echo two > notes.txt && echo edit >> calc.go && git status --porcelain"}, nil)
	if !r.Success || !strings.Contains(string(r.Output["stdout"]), "notes.txt") || !strings.Contains(string(r.Output["stdout"]), "calc.go") {
		t.Fatalf("shell in worktree 2: %s", raw)
	}
	for path, want := range map[string]string{filepath.Join(w1.Path, "notes.txt"): "one\n", filepath.Join(w2.Path, "notes.txt"): "two\n"} {
		if b, _ := os.ReadFile(path); string(b) != want {
			t.Errorf("%s: %q, want %q", path, b, want)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, "notes.txt")); err == nil {
		t.Error("a worktree write reached the source checkout")
	}
	if st, _ := exec.Command("git", "-C", repo, "status", "--porcelain").Output(); len(st) != 0 {
		t.Errorf("the source checkout changed: %s", st)
	}
	if b, _ := os.ReadFile(filepath.Join(w1.Path, "calc.go")); strings.Contains(string(b), "edit") {
		t.Error("worktree 2's edit reached worktree 1")
	}
	// Resume: the matching base_ref continues, another is refused.
	r, raw = callMCP(t, cs, "work_on_project", map[string]any{"project": w1.Project, "session_id": id1, "mode": "worktree", "base_ref": "main", "instruction": "again"}, nil)
	if !r.Success || str(t, r.Output["continuation"]) != "continued" {
		t.Fatalf("resume with base_ref main: %s", raw)
	}
	// Once the source's main has moved on, main is no longer the base.
	if out, err := exec.Command("git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "later").CombinedOutput(); err != nil {
		t.Fatalf("commit: %v %s", err, out)
	}
	r, raw = callMCP(t, cs, "work_on_project", map[string]any{"project": w1.Project, "session_id": id1, "mode": "worktree", "base_ref": "main", "instruction": "again"}, nil)
	if r.Success || r.Error == nil || r.Error.Kind != "base_ref_mismatch" {
		t.Fatalf("resume with a base_ref that moved: %s", raw)
	}
	// Finishing removes nothing.
	if r, raw = callMCP(t, cs, "finish_coding_task", map[string]any{"project": w1.Project, "session_id": id1}, nil); !r.Success {
		t.Fatalf("finish: %s", raw)
	}
	if _, err := os.Stat(filepath.Join(w1.Path, "notes.txt")); err != nil {
		t.Fatalf("finishing removed the worktree: %v", err)
	}
	if _, err := s.a.Projects.Get(t.Context(), w1.Project); err != nil {
		t.Fatalf("finishing unregistered the worktree: %v", err)
	}
}

// TestMCPWorktreeWorkersCoordinateOnTheBoard runs the pattern of
// docs/collaboration.md "Several agents on one repository": the
// coordinator's session C is on the source project; a worker's session W
// is on its own worktree project, so W cannot be the recorder of calls on
// C (session_project_mismatch, nothing changes); the worker reads and
// completes C's todo naming C alone.
func TestMCPWorktreeWorkersCoordinateOnTheBoard(t *testing.T) {
	repo := gitRepo(t)
	s := startApp(t, t.TempDir(), "calc="+repo)
	defer s.stop(t)
	coord := connectMCP(t, s, "", nil)
	worker := connectMCP(t, s, "", nil)
	defer coord.Close()
	defer worker.Close()
	var c, w string
	decodeInto(t, mcpOK(t, coord, "work_on_project", map[string]any{"project": "agent:local:calc",
		"instruction": "Coordinate."}).Output["session_id"], &c)
	var todo boardMsg
	decodeInto(t, mcpOK(t, coord, "post_session_message", map[string]any{"session_id": c, "kind": "todo",
		"message": "Make Add add.", "recording_session_id": c}).Output["message"], &todo)
	r := mcpOK(t, worker, "work_on_project", map[string]any{"project": "agent:local:calc", "mode": "worktree",
		"instruction": "Work on the coordinator's todo."})
	decodeInto(t, r.Output["session_id"], &w)
	var wt struct {
		Project string `json:"project"`
	}
	decodeInto(t, r.Output["worktree"], &wt)

	var fence string
	decodeInto(t, mcpOK(t, worker, "get_session_assignment", map[string]any{"session_id": c, "message_id": todo.ID}).Output["assignment_fence"], &fence)
	mcpOK(t, worker, "write_project_file", map[string]any{"session_id": w, "project": wt.Project, "path": "calc.go",
		"content": "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n", "expected_sha256": sha256Hex(t, repo, "calc.go")})

	complete := map[string]any{"session_id": c, "message_id": todo.ID, "answer": "Fixed in " + wt.Project + ".",
		"completion_key": "wt-add-1", "expected_assignment_fence": fence, "recording_session_id": w}
	before := boardList(t, s, c)
	res, raw := callMCP(t, worker, "complete_session_message", complete, nil)
	if res.Success || res.Error == nil || res.Error.Kind != "session_project_mismatch" || boardList(t, s, c) != before {
		t.Fatalf("completion recorded in the worktree session: %s", raw)
	}
	delete(complete, "recording_session_id")
	var answer boardMsg
	decodeInto(t, mcpOK(t, worker, "complete_session_message", complete).Output["answer"], &answer)
	if answer.ReplyTo != todo.ID || answer.AuthorSessionID != nil {
		t.Fatalf("completion without a recorder: %+v", answer)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "calc.go")); strings.Contains(string(b), "a + b") {
		t.Fatal("the worker's fix reached the source checkout")
	}
}

func sha256Hex(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestMCPWorktreeCommits: an agent commits in its managed worktree
// through run_shell (real git, the real sandbox): on the detached HEAD and
// on a new branch, both visible from the source checkout's git log --all.
// The same child still cannot write the rest of the source's git
// directory: its config, hooks, info, HEAD, a new packed-refs, or another
// worktree's administrative directory; each attempt fails as the
// command's own failure and changes nothing.
func TestMCPWorktreeCommits(t *testing.T) {
	if runner.LandlockABI() < 1 {
		t.Skip("Landlock is unavailable on this kernel")
	}
	repo := gitRepo(t)
	s := startApp(t, t.TempDir(), "calc="+repo)
	defer s.stop(t)
	cs := connectMCP(t, s, "", nil)
	defer cs.Close()
	start := func() (session, project, path string) {
		t.Helper()
		r := mcpOK(t, cs, "work_on_project", map[string]any{"project": "agent:local:calc", "mode": "worktree", "instruction": "commit"})
		var wt struct {
			Project string `json:"project"`
			Path    string `json:"path"`
		}
		decodeInto(t, r.Output["worktree"], &wt)
		return str(t, r.Output["session_id"]), wt.Project, wt.Path
	}
	sess, proj, _ := start()
	_, _, otherPath := start()
	shell := func(command string) (mcpResult, []byte) {
		t.Helper()
		return callMCP(t, cs, "run_shell", map[string]any{"project": proj, "session_id": sess, "command": command}, nil)
	}
	const git = "git -c user.name=t -c user.email=t@example.com -c commit.gpgsign=false "
	r, raw := shell("echo '// edited' >> calc.go && " + git + "commit -q -am 'in the worktree' && git rev-parse HEAD && " +
		git + "switch -q -c feature && " + git + "commit -q --allow-empty -m 'on a branch' && git rev-parse HEAD")
	if !r.Success {
		t.Fatalf("git commit in the worktree: %s", raw)
	}
	var stdout struct {
		Text string `json:"text"`
	}
	decodeInto(t, r.Output["stdout"], &stdout)
	commits := strings.Fields(stdout.Text)
	if len(commits) != 2 {
		t.Fatalf("commits: %q", stdout.Text)
	}
	all, err := exec.Command("git", "-C", repo, "log", "--all", "--format=%H").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range commits {
		if !strings.Contains(string(all), c) {
			t.Errorf("commit %s is not in the source's git log --all:\n%s", c, all)
		}
	}
	if b, _ := exec.Command("git", "-C", repo, "rev-parse", "feature").Output(); strings.TrimSpace(string(b)) != commits[1] {
		t.Errorf("the source's branch feature is %q, want %s", b, commits[1])
	}
	if st, _ := exec.Command("git", "-C", repo, "status", "--porcelain").Output(); len(st) != 0 {
		t.Errorf("the source checkout changed: %s", st)
	}

	gitDir := filepath.Join(repo, ".git")
	otherAdmin := filepath.Join(gitDir, "worktrees", filepath.Base(otherPath))
	for _, target := range []string{
		filepath.Join(gitDir, "config"), filepath.Join(gitDir, "hooks", "pre-commit"), filepath.Join(gitDir, "info", "exclude"),
		filepath.Join(gitDir, "HEAD"), filepath.Join(gitDir, "packed-refs"), filepath.Join(otherAdmin, "HEAD"),
	} {
		before, beforeErr := os.ReadFile(target)
		r, raw := shell("echo planted >> " + target)
		if r.Success || r.Error == nil || r.Error.Kind != "command_failed" || !strings.Contains(string(raw), "Permission denied") {
			t.Errorf("writing %s from the worktree: %s", target, raw)
		}
		after, afterErr := os.ReadFile(target)
		if string(after) != string(before) || (beforeErr == nil) != (afterErr == nil) {
			t.Errorf("%s changed: %q -> %q", target, before, after)
		}
	}
}

// TestMCPWorktreeCreationStaysInItsProject reproduces the two findings
// through the tools. A child of project evil (run_shell) sets a smudge
// filter in evil's repository, applied to every file by a committed
// .gitattributes, that plants AGENTS.md in an existing worktree of calc;
// work_on_project mode=worktree on evil then succeeds without running it.
// The child then replaces evil's .git with a file naming calc's
// repository; work_on_project mode=worktree on evil is refused with
// git_dir_outside_project and calc's repository gains no worktree.
func TestMCPWorktreeCreationStaysInItsProject(t *testing.T) {
	if runner.LandlockABI() < 1 {
		t.Skip("Landlock is unavailable on this kernel")
	}
	calc, evil := gitRepo(t), gitRepo(t)
	s := startApp(t, t.TempDir(), "calc="+calc, "evil="+evil)
	defer s.stop(t)
	cs := connectMCP(t, s, "", nil)
	defer cs.Close()
	var victim struct {
		Path string `json:"path"`
	}
	decodeInto(t, mcpOK(t, cs, "work_on_project", map[string]any{"project": "agent:local:calc", "mode": "worktree",
		"instruction": "the victim's worktree"}).Output["worktree"], &victim)
	sess := str(t, mcpOK(t, cs, "work_on_project", map[string]any{"project": "agent:local:evil", "instruction": "attack"}).Output["session_id"])
	planted := filepath.Join(victim.Path, "AGENTS.md")
	before, _ := os.ReadFile(planted)
	mcpOK(t, cs, "run_shell", map[string]any{"project": "agent:local:evil", "session_id": sess, "command": "echo '* filter=evil' > .gitattributes && git add .gitattributes && " +
		"git -c user.name=t -c user.email=t@example.com commit -q -m attributes && " +
		`git config filter.evil.smudge "sh -c 'echo pwned > ` + planted + `; cat'"`})
	r := mcpOK(t, cs, "work_on_project", map[string]any{"project": "agent:local:evil", "mode": "worktree", "instruction": "trigger"})
	var made struct {
		Path string `json:"path"`
	}
	decodeInto(t, r.Output["worktree"], &made)
	if after, _ := os.ReadFile(planted); string(after) != string(before) {
		t.Fatalf("the smudge filter rewrote the victim's AGENTS.md: %q", after)
	}
	if b, _ := os.ReadFile(filepath.Join(made.Path, "calc.go")); !strings.Contains(string(b), "package calc") {
		t.Fatalf("the new worktree's calc.go: %q", b)
	}

	mcpOK(t, cs, "run_shell", map[string]any{"project": "agent:local:evil", "session_id": sess,
		"command": "rm -rf .git && echo 'gitdir: " + filepath.Join(calc, ".git") + "' > .git"})
	worktreesBefore, _ := exec.Command("git", "-C", calc, "worktree", "list", "--porcelain").Output()
	entries, _ := os.ReadDir(app.WorktreesDir(s.a.Config.DataDir))
	projects, _ := s.a.Projects.List(t.Context())
	r, raw := callMCP(t, cs, "work_on_project", map[string]any{"project": "agent:local:evil", "mode": "worktree", "instruction": "redirect"}, nil)
	if r.Success || r.Error == nil || r.Error.Kind != "git_dir_outside_project" {
		t.Fatalf("work_on_project on a redirected source: %s", raw)
	}
	if after, _ := exec.Command("git", "-C", calc, "worktree", "list", "--porcelain").Output(); string(after) != string(worktreesBefore) {
		t.Fatalf("calc's worktrees changed:\n%s\n->\n%s", worktreesBefore, after)
	}
	if after, _ := os.ReadDir(app.WorktreesDir(s.a.Config.DataDir)); len(after) != len(entries) {
		t.Fatalf("the worktrees directory holds %d entries, had %d", len(after), len(entries))
	}
	if after, _ := s.a.Projects.List(t.Context()); len(after) != len(projects) {
		t.Fatalf("%d projects registered, had %d", len(after), len(projects))
	}
}
