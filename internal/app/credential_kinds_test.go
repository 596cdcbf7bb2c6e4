package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runnerlink"
	"github.com/webcodex/webcodex/internal/runnerwire"
)

// toolCall calls tool over REST with token and returns the HTTP status
// and the result, whatever they are.
func toolCall(t *testing.T, s *server, token, tool string, args any, recorder string) (int, result) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args, "recording_session_id": recorder})
	code, data := s.do(t, token, "POST", "/api/tools/call", body)
	var r result
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: HTTP %d %s", tool, code, data)
	}
	return code, r
}

// statusProjects is the project count GET /api/status shows token.
func statusProjects(t *testing.T, s *server, token string) int {
	t.Helper()
	code, data := s.do(t, token, "GET", "/api/status", nil)
	var st struct{ Projects int }
	if code != 200 || json.Unmarshal(data, &st) != nil {
		t.Fatalf("status: HTTP %d %s", code, data)
	}
	return st.Projects
}

// TestProjectCredentialReachesOneProject drives a project credential
// through the real server: its project works; another project, named or
// reached through a session, is refused with permission_denied before
// anything is recorded; the status counts its one project; the memory
// tools are refused although it holds the project scopes; its calls are
// attributed to its kind in /api/audit/stats only; revoked, it is refused.
func TestProjectCredentialReachesOneProject(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t), "q="+rawProjectDir(t))
	defer s.stop(t)
	ctx := context.Background()
	const p, q = "agent:local:p", "agent:local:q"
	qs := str(t, must(t, s.call(t, "work_on_project", map[string]any{"project": q, "instruction": "The other task."}, ""), "work_on_project q").Output["session_id"])
	cred, tok, err := s.a.Auth.CreateProjectCredential(ctx, "", auth.DefaultOwner, p, nil, 0)
	if err != nil {
		t.Fatal(err)
	}

	ps := str(t, must(t, s.callAs(t, cred, "work_on_project", map[string]any{"project": p, "instruction": "The shared task."}, ""), "work_on_project p").Output["session_id"])
	must(t, s.callAs(t, cred, "read_files", map[string]any{"project": p, "files": []any{map[string]any{"path": "a.txt"}}}, ps), "read_files p")

	journal, qEvents, pEvents := journalSize(t, s), rawEvents(t, s, qs), rawEvents(t, s, ps)
	for _, c := range []struct {
		name, tool string
		args       map[string]any
	}{
		{"another project named", "read_files", map[string]any{"project": q, "files": []any{map[string]any{"path": "a.txt"}}}},
		{"another project's session", "update_session_context", map[string]any{"session_id": qs, "default_shell": "bash"}},
		{"continuing another project's session", "work_on_project", map[string]any{"project": q, "session_id": qs, "instruction": "Take it over."}},
		{"an unknown project", "read_files", map[string]any{"project": "agent:local:nope", "files": []any{map[string]any{"path": "a.txt"}}}},
	} {
		_, r := toolCall(t, s, cred, c.tool, c.args, "")
		wantFail(t, r, "permission_denied")
		if r.Error.Message != `this credential reaches only project "agent:local:p"` {
			t.Errorf("%s: message %q", c.name, r.Error.Message)
		}
	}
	// The same over MCP, with the go-sdk client.
	asCred := *s
	asCred.token = cred
	cs := connectMCP(t, &asCred, "", nil)
	if r, raw := callMCP(t, cs, "read_files", map[string]any{"project": q, "files": []any{map[string]any{"path": "a.txt"}}}, nil); r.Success || r.Error == nil || r.Error.Kind != "permission_denied" {
		t.Fatalf("MCP read_files on another project: %s", raw)
	}
	journal++
	// No session's ledger moved; the evidence journal holds one record
	// of each refused attempt (records tell the truth), and nothing else.
	if j, qe, pe := journalSize(t, s), rawEvents(t, s, qs), rawEvents(t, s, ps); j != journal+4 || qe != qEvents || pe != pEvents {
		t.Fatalf("refused calls: journal %d→%d, q's session %d→%d, p's session %d→%d", journal, j, qEvents, qe, pEvents, pe)
	}
	if r := newestRecord(t, s, qs); r.ErrorKind != "permission_denied" || r.Tool != "work_on_project" {
		t.Fatalf("the refused take-over's evidence: %+v", r)
	}
	// A call on no project may not record into another project's session.
	_, r := toolCall(t, s, cred, "list_runners", map[string]any{}, qs)
	wantFail(t, r, "session_project_mismatch")
	if qe := rawEvents(t, s, qs); qe != qEvents {
		t.Fatalf("q's session moved: %d→%d", qEvents, qe)
	}

	if n := statusProjects(t, s, cred); n != 1 {
		t.Errorf("the credential's status counts %d projects, want its one", n)
	}
	// The evidence of its own session, not of another project's.
	if code, data := s.do(t, cred, "GET", "/api/evidence/sessions/"+ps, nil); code != 200 {
		t.Errorf("the credential's own session's evidence: HTTP %d %s", code, data)
	}
	if code, data := s.do(t, cred, "GET", "/api/evidence/sessions/"+qs, nil); code != 404 || !bytes.Contains(data, []byte("unknown_session_id")) {
		t.Errorf("another project's session's evidence: HTTP %d %s", code, data)
	}
	if n := statusProjects(t, s, s.token); n != 2 {
		t.Errorf("the admin's status counts %d projects, want 2", n)
	}

	// Project scopes bring no Memory scope with them.
	for _, tool := range []string{"memory_search", "memory_read"} {
		s.stepUpAs(t, cred, tool, map[string]any{"project": p, "query": "x", "memory_key": "x"})
	}

	// Its calls are attributed to its kind in the stats, never in an
	// ordinary event view.
	code, _, data := auditDo(t, s, s.token, "/api/audit/stats", map[string]any{}, nil)
	var st audit.Stats
	if code != 200 || json.Unmarshal(data, &st) != nil {
		t.Fatalf("audit stats: HTTP %d %s", code, data)
	}
	if st.Attribution.ByPrincipalKind["project-credential"] < 2 || st.Attribution.ByPrincipalKind["api_token"] < 1 {
		t.Fatalf("by_principal_kind %v", st.Attribution.ByPrincipalKind)
	}
	for _, as := range auditSessions(t, s) {
		if _, raw := auditSession(t, s, as.SessionID); bytes.Contains(raw, []byte("project-credential")) || bytes.Contains(raw, []byte("principal")) {
			t.Fatalf("audit session view shows attribution:\n%s", raw)
		}
	}

	if _, err := s.a.Auth.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if code, _ := s.do(t, cred, "GET", "/api/status", nil); code != 401 {
		t.Fatalf("revoked credential: HTTP %d", code)
	}
}

// TestProjectShareReachesAnotherGroupsProject: a project share made for
// bob reaches alice's runner project, which bob's own API token cannot
// see, and nothing else.
func TestProjectShareReachesAnotherGroupsProject(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	ctx := context.Background()
	rp, err := s.a.Projects.RegisterRunner(ctx, "box", "alice", "api", "/srv/api")
	if err != nil {
		t.Fatal(err)
	}
	bob, _, err := s.a.Auth.CreateToken(ctx, "bob", "bob", []auth.Scope{auth.ScopeProjectRead, auth.ScopeRuntimeRead})
	if err != nil {
		t.Fatal(err)
	}
	share, _, err := s.a.Auth.CreateProjectShare(ctx, "", "bob", rp.ID, []auth.Scope{auth.ScopeProjectRead, auth.ScopeRuntimeRead}, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := func(project string) map[string]any {
		return map[string]any{"project": project, "files": []any{map[string]any{"path": "a.txt"}}}
	}
	_, r := toolCall(t, s, bob, "read_files", read(rp.ID), "")
	wantFail(t, r, "unknown_project")
	// The share gets past visibility: what answers is the runner, which
	// is not connected.
	_, r = toolCall(t, s, share, "read_files", read(rp.ID), "")
	wantFail(t, r, "runner_unavailable")
	_, r = toolCall(t, s, share, "read_files", read("agent:local:p"), "")
	wantFail(t, r, "permission_denied")
	if n := statusProjects(t, s, share); n != 1 {
		t.Errorf("the share's status counts %d projects, want its one", n)
	}
	if n := statusProjects(t, s, bob); n != 1 { // the server's own project p
		t.Errorf("bob's status counts %d projects, want 1", n)
	}
}

// TestProjectCredentialReachesItsWorktrees: a managed worktree of the
// bound project is part of it, so a project credential works in the
// worktree it made.
func TestProjectCredentialReachesItsWorktrees(t *testing.T) {
	repo := gitRepo(t)
	s := startApp(t, t.TempDir(), "calc="+repo)
	defer s.stop(t)
	cred, _, err := s.a.Auth.CreateProjectCredential(context.Background(), "", auth.DefaultOwner, "agent:local:calc", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := must(t, s.callAs(t, cred, "work_on_project", map[string]any{"project": "agent:local:calc", "mode": "worktree", "instruction": "work apart"}, ""), "worktree")
	var v struct {
		Project string `json:"project"`
	}
	if err := json.Unmarshal(w.Output["worktree"], &v); err != nil || v.Project == "" || v.Project == "agent:local:calc" {
		t.Fatalf("worktree view %s: %v", w.Output["worktree"], err)
	}
	id := str(t, w.Output["session_id"])
	must(t, s.callAs(t, cred, "read_files", map[string]any{"project": v.Project, "files": []any{map[string]any{"path": "calc.go"}}}, id), "read in the worktree")
	if n := statusProjects(t, s, cred); n != 2 {
		t.Errorf("the credential's status counts %d projects, want its project and its worktree", n)
	}
}

// TestProjectCredentialGoals: Goals are reached by id or listed without
// a project; a project credential reaches its project's only.
func TestProjectCredentialGoals(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t), "q="+rawProjectDir(t))
	defer s.stop(t)
	cred, _, err := s.a.Auth.CreateProjectCredential(context.Background(), "", auth.DefaultOwner, "agent:local:p", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	type goalOut struct {
		ID       string `json:"goal_id"`
		Project  string `json:"project"`
		Revision string `json:"revision"`
	}
	create := func(token string, args map[string]any) goalOut {
		t.Helper()
		var g goalOut
		json.Unmarshal(must(t, s.callAs(t, token, "create_goal", args, ""), "create_goal").Output["goal"], &g)
		return g
	}
	other := create(s.token, map[string]any{"project": "agent:local:q", "title": "Theirs"})
	loose := create(s.token, map[string]any{"title": "Unbound"})
	mine := create(cred, map[string]any{"title": "Mine"})
	if mine.Project != "agent:local:p" {
		t.Fatalf("the credential's goal without a project is bound to %q, want its project", mine.Project)
	}
	before, _ := json.Marshal(must(t, s.call(t, "get_goal", map[string]any{"goal_id": other.ID}, ""), "get_goal").Output)
	for _, g := range []goalOut{other, loose} {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"get_goal", map[string]any{"goal_id": g.ID}},
			{"update_goal", map[string]any{"goal_id": g.ID, "expected_revision": g.Revision, "title": "Taken"}},
			{"checkpoint_goal", map[string]any{"goal_id": g.ID, "steps": []any{}, "recovery_summary": "taken"}},
		} {
			_, r := toolCall(t, s, cred, c.tool, c.args, "")
			wantFail(t, r, "permission_denied")
		}
	}
	if after, _ := json.Marshal(must(t, s.call(t, "get_goal", map[string]any{"goal_id": other.ID}, ""), "get_goal").Output); !bytes.Equal(before, after) {
		t.Fatalf("a refused update changed the goal:\n%s\n%s", before, after)
	}
	var list struct {
		Goals []goalOut
		Total int
	}
	r := must(t, s.callAs(t, cred, "list_goals", map[string]any{}, ""), "list_goals")
	json.Unmarshal(r.Output["goals"], &list.Goals)
	if len(list.Goals) != 1 || list.Goals[0].ID != mine.ID {
		t.Fatalf("the credential lists %+v, want its one goal", list.Goals)
	}
}

// TestAttentionOfABoundPrincipal: `webcodex attention --session` run with
// a project credential shows only its project's sessions.
func TestAttentionOfABoundPrincipal(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t), "q="+rawProjectDir(t))
	defer s.stop(t)
	ctx := context.Background()
	qs := str(t, must(t, s.call(t, "work_on_project", map[string]any{"project": "agent:local:q", "instruction": "Theirs."}, ""), "work_on_project").Output["session_id"])
	raw, _, err := s.a.Auth.CreateProjectCredential(ctx, "", auth.DefaultOwner, "agent:local:p", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := app.AttentionPrincipal(ctx, s.a.Stores, s.a.Config, raw)
	if err != nil || p.Project != "agent:local:p" {
		t.Fatalf("attention principal %+v, %v", p, err)
	}
	if _, err := app.CheckAttention(ctx, s.a.Stores, p, qs, ""); failure.KindOf(err) != failure.SessionProjectMismatch {
		t.Fatalf("another project's session: %v", err)
	}
	if _, err := app.CheckAttention(ctx, s.a.Stores, auth.LocalUser(), qs, ""); err != nil {
		t.Fatalf("the local user on the same session: %v", err)
	}
}

// TestBoundPrincipalListsOnlyItsRunner: list_runners shows a principal
// bound to one project only the runner serving it, with that project.
func TestBoundPrincipalListsOnlyItsRunner(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	hello := helloFor("box", t.TempDir())
	hello.Projects = append(hello.Projects, runnerwire.Project{Name: "other", Root: t.TempDir()})
	link, f, err := dialRunner(t, s, runnerlink.WebSocket, runnerToken(t, s, "box"), hello)
	if err != nil || f.Kind != runnerwire.KindWelcome {
		t.Fatalf("hello: %v %+v %s", err, f, f.Body)
	}
	defer link.Close("test done")
	ctx := context.Background()
	type runnerView struct {
		ClientID string   `json:"client_id"`
		Projects []string `json:"projects"`
	}
	runners := func(token string) []runnerView {
		t.Helper()
		var list []runnerView
		json.Unmarshal(must(t, s.callAs(t, token, "list_runners", map[string]any{}, ""), "list_runners").Output["runners"], &list)
		return list
	}
	if all := runners(s.token); len(all) != 1 || len(all[0].Projects) != 2 {
		t.Fatalf("the admin lists %+v", all)
	}
	onRunner, _, err := s.a.Auth.CreateProjectCredential(ctx, "", auth.DefaultOwner, "agent:box:demo", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := runners(onRunner); len(got) != 1 || got[0].ClientID != "box" || len(got[0].Projects) != 1 || got[0].Projects[0] != "agent:box:demo" {
		t.Fatalf("a credential of agent:box:demo lists %+v", got)
	}
	onLocal, _, err := s.a.Auth.CreateProjectCredential(ctx, "", auth.DefaultOwner, "agent:local:p", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := runners(onLocal); len(got) != 0 {
		t.Fatalf("a credential of a local project lists %+v", got)
	}
}
