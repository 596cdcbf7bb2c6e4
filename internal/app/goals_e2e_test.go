package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/goal/goaldb"
)

const goalProject = "agent:local:goal"

// goalView is a Goal as the tools return it.
type goalView struct {
	ID                string `json:"goal_id"`
	Project           string `json:"project"`
	Title             string `json:"title"`
	Status            string `json:"status"`
	Revision          string `json:"revision"`
	RecoverySummary   string `json:"recovery_summary"`
	Checkpoints       int    `json:"checkpoints"`
	CheckpointSession string `json:"checkpoint_session_id"`
	Progress          struct{ Done, Total int }
	Steps             []struct{ Title, Status string }
}

type correlated struct {
	Items []struct {
		ID    string `json:"goal_id"`
		Title string `json:"title"`
	}
	Total, Returned int
	Truncated       bool
}

// goalBytes is get_goal's whole output over REST: the Goal, its
// correlations, byte for byte.
func goalBytes(t *testing.T, s *server, id string) string {
	t.Helper()
	r := must(t, s.call(t, "get_goal", map[string]any{"goal_id": id}, ""), "get_goal")
	b, _ := json.Marshal(r.Output)
	return string(b)
}

// TestGoalsEndToEnd drives the Goal tools over MCP (go-sdk client) and
// REST on the real server: create, get, list, update under CAS (a stale
// and a malformed revision change nothing), checkpoint, associate (a
// session of another project or another authority group is refused with
// its exact kind and changes nothing), the goal named in session_summary
// and both handoff briefs, and finish_coding_task leaving the correlated
// Goal byte for byte untouched.
func TestGoalsEndToEnd(t *testing.T) {
	s := startApp(t, t.TempDir(), "goal="+rawProjectDir(t), "other="+rawProjectDir(t))
	defer s.stop(t)
	cs := connectMCP(t, s, "", nil)
	defer cs.Close()

	var sess string
	decodeInto(t, mcpOK(t, cs, "work_on_project", map[string]any{"project": goalProject, "instruction": "Work towards the goal."}).Output["session_id"], &sess)

	// Create (MCP), get and list (REST and MCP).
	var g goalView
	decodeInto(t, mcpOK(t, cs, "create_goal", map[string]any{"project": goalProject, "title": "Parser rewrite",
		"objective": "All parser tests pass."}).Output["goal"], &g)
	if !strings.HasPrefix(g.ID, "wc_goal_") || len(g.ID) != 40 || g.Status != "active" || g.Project != goalProject || g.Revision == "" {
		t.Fatalf("created %+v", g)
	}
	var got goalView
	decodeInto(t, must(t, s.call(t, "get_goal", map[string]any{"goal_id": g.ID}, ""), "get_goal").Output["goal"], &got)
	if got.Revision != g.Revision || got.Title != "Parser rewrite" {
		t.Fatalf("get %+v", got)
	}
	var list struct {
		Goals []goalView
		Total int
	}
	decodeInto(t, outputJSON(t, mcpOK(t, cs, "list_goals", map[string]any{"project": goalProject, "status": "active"}).Output), &list)
	if list.Total != 1 || list.Goals[0].ID != g.ID {
		t.Fatalf("list %+v", list)
	}
	// Outside the core profile (the default here), through the gateway.
	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range lt.Tools {
		if strings.Contains(tl.Name, "goal") {
			t.Fatalf("the core profile lists %s", tl.Name)
		}
	}
	var viaGateway struct{ Total int }
	decodeInto(t, outputJSON(t, mcpOK(t, cs, "call_tool", map[string]any{"tool": "list_goals", "arguments": map[string]any{}}).Output), &viaGateway)
	if viaGateway.Total != 1 {
		t.Fatalf("list_goals through call_tool: %d goals", viaGateway.Total)
	}
	if r, raw := callMCP(t, cs, "create_goal", map[string]any{"project": "agent:local:nope", "title": "x"}, nil); r.Success || r.Error.Kind != "unknown_project" {
		t.Fatalf("create on an unregistered project: %s", raw)
	}

	// Update under CAS.
	var up struct {
		Goal    goalView
		Changed bool
	}
	decodeInto(t, outputJSON(t, mcpOK(t, cs, "update_goal", map[string]any{"goal_id": g.ID, "expected_revision": g.Revision,
		"status": "blocked"}).Output), &up)
	if !up.Changed || up.Goal.Status != "blocked" || up.Goal.Revision == g.Revision {
		t.Fatalf("update %+v", up)
	}
	before := goalBytes(t, s, g.ID)
	r, raw := callMCP(t, cs, "update_goal", map[string]any{"goal_id": g.ID, "expected_revision": g.Revision, "title": "Stale"}, nil)
	if r.Success || r.Error.Kind != "revision_conflict" || str(t, r.Output["current_revision"]) != up.Goal.Revision {
		t.Fatalf("stale update: %s", raw)
	}
	if rr := s.call(t, "update_goal", map[string]any{"goal_id": g.ID, "expected_revision": "not-a-revision", "title": "Bad"}, ""); rr.Success || rr.Error.Kind != "invalid_revision" {
		t.Fatalf("malformed revision over REST: %+v", rr)
	}
	if goalBytes(t, s, g.ID) != before {
		t.Fatal("a stale or malformed update changed the goal")
	}

	// Checkpoint, recorded in the session.
	var cp goalView
	decodeInto(t, mcpOK(t, cs, "checkpoint_goal", map[string]any{"goal_id": g.ID, "expected_revision": up.Goal.Revision,
		"steps":            []any{map[string]any{"title": "lexer", "status": "done"}, map[string]any{"title": "parser", "status": "in_progress"}},
		"recovery_summary": "Lexer done; parser half way.", "recording_session_id": sess}).Output["goal"], &cp)
	if cp.Checkpoints != 1 || cp.CheckpointSession != sess || cp.Progress.Done != 1 || cp.Progress.Total != 2 || cp.Status != "blocked" {
		t.Fatalf("checkpoint %+v", cp)
	}

	// Associate with the session; repeating changes nothing.
	var as struct{ Changed bool }
	decodeInto(t, outputJSON(t, mcpOK(t, cs, "associate_goal_workflow_session", map[string]any{"goal_id": g.ID, "session_id": sess}).Output), &as)
	if !as.Changed {
		t.Fatal("first association not recorded")
	}
	decodeInto(t, outputJSON(t, mcpOK(t, cs, "associate_goal_workflow_session", map[string]any{"goal_id": g.ID, "session_id": sess}).Output), &as)
	if as.Changed {
		t.Fatal("repeated association changed something")
	}

	// A session of another project, and one of another authority group.
	before = goalBytes(t, s, g.ID)
	var otherProject string
	decodeInto(t, mcpOK(t, cs, "work_on_project", map[string]any{"project": "agent:local:other", "instruction": "Elsewhere."}).Output["session_id"], &otherProject)
	if r, raw := callMCP(t, cs, "associate_goal_workflow_session", map[string]any{"goal_id": g.ID, "session_id": otherProject}, nil); r.Success || r.Error.Kind != "session_project_mismatch" {
		t.Fatalf("association with a session of another project: %s", raw)
	}
	bob, _, err := s.a.Auth.CreateToken(context.Background(), "bob", "bob", []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite})
	if err != nil {
		t.Fatal(err)
	}
	bobSess := str(t, must(t, s.callAs(t, bob, "work_on_project", map[string]any{"project": goalProject, "instruction": "Bob's work."}, ""), "bob work").Output["session_id"])
	if r, raw := callMCP(t, cs, "associate_goal_workflow_session", map[string]any{"goal_id": g.ID, "session_id": bobSess}, nil); r.Success || r.Error.Kind != "session_authority_denied" {
		t.Fatalf("association with another group's session: %s", raw)
	}
	// Bob cannot see, change or correlate the goal either.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_goal", map[string]any{"goal_id": g.ID}},
		{"update_goal", map[string]any{"goal_id": g.ID, "expected_revision": cp.Revision, "status": "abandoned"}},
		{"associate_goal_workflow_session", map[string]any{"goal_id": g.ID, "session_id": bobSess}},
	} {
		if rr := s.callAs(t, bob, c.tool, c.args, ""); rr.Success || rr.Error.Kind != "unknown_goal_id" {
			t.Fatalf("bob's %s: %+v", c.tool, rr)
		}
	}
	if goalBytes(t, s, g.ID) != before {
		t.Fatal("a refused association changed the goal")
	}
	var bobList struct{ Total int }
	decodeInto(t, outputJSON(t, must(t, s.callAs(t, bob, "list_goals", map[string]any{}, ""), "bob list").Output), &bobList)
	if bobList.Total != 0 {
		t.Fatalf("bob lists %d goals", bobList.Total)
	}

	// session_summary and the handoff briefs name the goal (id, title).
	named := func(what string, raw json.RawMessage) {
		t.Helper()
		var c correlated
		decodeInto(t, raw, &c)
		if c.Total != 1 || len(c.Items) != 1 || c.Items[0].ID != g.ID || c.Items[0].Title != "Parser rewrite" {
			t.Fatalf("%s names %s", what, raw)
		}
		var keys map[string]json.RawMessage
		decodeInto(t, c2raw(t, raw), &keys)
		if len(keys) != 2 {
			t.Fatalf("%s says more than id and title: %s", what, raw)
		}
	}
	named("session_summary", mcpOK(t, cs, "session_summary", map[string]any{"session_id": sess}).Output["goals"])
	var brief struct{ Goals json.RawMessage }
	decodeInto(t, mcpOK(t, cs, "session_handoff_summary", map[string]any{"session_id": sess}).Output["handoff_brief"], &brief)
	named("handoff brief", brief.Goals)

	// finish_coding_task names the goal and never transitions it.
	before = goalBytes(t, s, g.ID)
	rowBefore, err := s.a.Stores.Goals.(*goaldb.Store).Raw(context.Background(), g.ID)
	if err != nil {
		t.Fatal(err)
	}
	fin := mcpOK(t, cs, "finish_coding_task", map[string]any{"session_id": sess, "project": goalProject})
	decodeInto(t, fin.Output["handoff_brief"], &brief)
	named("finish brief", brief.Goals)
	mcpOK(t, cs, "close_session", map[string]any{"session_id": sess})
	rowAfter, err := s.a.Stores.Goals.(*goaldb.Store).Raw(context.Background(), g.ID)
	if err != nil {
		t.Fatal(err)
	}
	if goalBytes(t, s, g.ID) != before || rowAfter != rowBefore {
		t.Fatalf("finishing and closing the session changed the goal:\n%s\n%s", rowBefore, rowAfter)
	}
	// The goal changes only by its own explicit call.
	decodeInto(t, outputJSON(t, must(t, s.call(t, "update_goal", map[string]any{"goal_id": g.ID, "expected_revision": cp.Revision,
		"status": "completed"}, ""), "complete").Output), &up)
	if up.Goal.Status != "completed" {
		t.Fatalf("completion %+v", up.Goal)
	}
}

// TestGoalsScopes: reads need project:read, changes project:write.
func TestGoalsScopes(t *testing.T) {
	s := startApp(t, t.TempDir(), "goal="+rawProjectDir(t))
	defer s.stop(t)
	reader, _, err := s.a.Auth.CreateToken(context.Background(), "reader", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatal(err)
	}
	s.stepUpAs(t, reader, "create_goal", map[string]any{"title": "x"}) // 403 insufficient_scope
	var list struct{ Total int }
	decodeInto(t, outputJSON(t, must(t, s.callAs(t, reader, "list_goals", map[string]any{}, ""), "list").Output), &list)
	if list.Total != 0 {
		t.Fatalf("a refused create stored a goal: %d", list.Total)
	}
}

func outputJSON(t *testing.T, m map[string]json.RawMessage) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// c2raw is the first item of a correlated list, as raw JSON.
func c2raw(t *testing.T, raw json.RawMessage) json.RawMessage {
	t.Helper()
	var c struct{ Items []json.RawMessage }
	decodeInto(t, raw, &c)
	if len(c.Items) == 0 {
		t.Fatalf("no items in %s", raw)
	}
	return c.Items[0]
}
