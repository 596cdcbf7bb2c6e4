package app_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/intent"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

const intentProject = "agent:local:intent"

// intentProjectDir is a project with the directories the flow writes in.
func intentProjectDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"internal/a", "docs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// callOverlap is a tool call as the REST transport answers it, with its
// overlap block.
func callOverlap(t *testing.T, s *server, token, tool string, args any, recorder string) (result, *intent.Notice) {
	t.Helper()
	data := s.callBody(t, token, tool, args, recorder)
	var r result
	var blocks struct {
		Overlap *intent.Notice `json:"overlap"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &blocks); err != nil {
		t.Fatal(err)
	}
	return r, blocks.Overlap
}

// names are the sessions a notice names, in order.
func names(n *intent.Notice) string {
	if n == nil {
		return ""
	}
	var ids []string
	for _, o := range n.Overlaps {
		ids = append(ids, o.Kind+":"+o.SessionID+":"+strings.Join(o.Paths, ","))
	}
	return strings.Join(ids, " ")
}

// TestIntentsSQLite drives the intent tools and the overlap projection
// through the real kernel and server on SQLite files (intents.db).
func TestIntentsSQLite(t *testing.T) {
	s := startApp(t, t.TempDir(), "intent="+intentProjectDir(t))
	defer s.stop(t)
	if _, err := os.Stat(filepath.Join(s.a.Config.DataDir, app.IntentsDB)); err != nil {
		t.Fatalf("intents.db: %v", err)
	}
	intentFlow(t, s)
}

// TestIntentsPostgres is the same flow on PostgreSQL (schema intents).
func TestIntentsPostgres(t *testing.T) {
	url := pgtest.URL(t)
	s := startAppWith(t, t.TempDir(), func(c *app.Config) { c.DatabaseURL = url }, "intent="+intentProjectDir(t))
	defer s.stop(t)
	if s.a.Stores.Backend == app.BackendSQLite {
		t.Fatal("the app is not on PostgreSQL")
	}
	intentFlow(t, s)
}

// intentFlow: A declares internal/a/**, B declares internal/a/x.go: B's
// declare output and result name A, A's next call (any tool) names B, once;
// a write by C (no intent) to internal/a/x.go names A and B on C's result;
// finish_coding_task reports B's untouched globs and undeclared changes;
// every bad input is refused with its exact kind and stores nothing.
func intentFlow(t *testing.T, s *server) {
	session := func(token, what string) string {
		return str(t, must(t, s.callAs(t, token, "work_on_project", map[string]any{"project": intentProject, "instruction": what}, ""),
			what).Output["session_id"])
	}
	a, b, c := session(s.token, "A"), session(s.token, "B"), session(s.token, "C")

	r, n := callOverlap(t, s, s.token, "declare_intent", map[string]any{"session_id": a, "paths": []string{"internal/a/**"},
		"note": "refactor a"}, "")
	must(t, r, "A declares")
	if n != nil {
		t.Fatalf("A's first declaration has an overlap: %+v", n)
	}
	r, n = callOverlap(t, s, s.token, "declare_intent", map[string]any{"session_id": b, "paths": []string{"internal/a/x.go"},
		"ttl_seconds": 600}, "")
	var overlaps []intent.Overlap
	outField(t, must(t, r, "B declares"), "overlaps", &overlaps)
	if len(overlaps) != 1 || overlaps[0].SessionID != a || overlaps[0].Globs[0] != "internal/a/**" {
		t.Fatalf("B's declare output: %+v", overlaps)
	}
	if names(n) != "intent:"+a+":internal/a/x.go" {
		t.Fatalf("B's declare result overlap: %q", names(n))
	}
	if raw, _ := json.Marshal(n); strings.Contains(string(raw), "refactor a") {
		t.Fatalf("A's note reached B: %s", raw)
	}

	// A's next call of any tool (here a read recorded in A) names B, once.
	r, n = callOverlap(t, s, s.token, "list_intents", map[string]any{"project": intentProject}, a)
	if names(n) != "intent:"+b+":internal/a/**" {
		t.Fatalf("A's next result overlap: %q", names(n))
	}
	var listed []intent.Listed
	outField(t, must(t, r, "list_intents"), "intents", &listed)
	if len(listed) != 2 || listed[0].SessionID != a || listed[0].Overlaps[0] != b || listed[1].Overlaps[0] != a {
		t.Fatalf("listed: %+v", listed)
	}
	if _, n = callOverlap(t, s, s.token, "list_intents", map[string]any{"project": intentProject}, a); n != nil {
		t.Fatalf("the notice was delivered twice: %+v", n)
	}
	if _, n = callOverlap(t, s, s.token, "session_summary", map[string]any{"session_id": b}, ""); n != nil {
		t.Fatalf("B's notice was delivered twice: %+v", n)
	}

	// C, with no intent, writes a path A and B declared: the write lands
	// and its result names both.
	r, n = callOverlap(t, s, s.token, "write_project_file", map[string]any{"project": intentProject, "path": "internal/a/x.go",
		"content": "package a\n"}, c)
	must(t, r, "C writes")
	if names(n) != "write:"+a+":internal/a/x.go write:"+b+":internal/a/x.go" {
		t.Fatalf("C's write overlap: %q", names(n))
	}

	// B changes a path it never declared and never touches its glob.
	must(t, s.call(t, "write_project_file", map[string]any{"project": intentProject, "path": "docs/z.md", "content": "z\n"}, b), "B writes")
	var adv []string
	fin := must(t, s.call(t, "finish_coding_task", map[string]any{"session_id": b, "include_workspace": false}, ""), "finish")
	outField(t, fin, "advisories", &adv)
	if !contains(adv, "intent_globs_untouched") || !contains(adv, "changes_not_declared") {
		t.Fatalf("finish advisories: %v", adv)
	}
	var cover intent.Coverage
	outField(t, fin, "intents", &cover)
	if strings.Join(cover.Untouched, ",") != "internal/a/x.go" || strings.Join(cover.Undeclared, ",") != "docs/z.md" {
		t.Fatalf("finish intents: %+v", cover)
	}
	// C declared nothing: no intent advisories.
	outField(t, must(t, s.call(t, "finish_coding_task", map[string]any{"session_id": c, "include_workspace": false}, ""), "finish C"),
		"advisories", &adv)
	if contains(adv, "intent_globs_untouched") || contains(adv, "changes_not_declared") {
		t.Fatalf("C's finish advisories: %v", adv)
	}

	intentBadInputs(t, s, b)

	// A closed session's intent expires with it.
	must(t, s.call(t, "close_session", map[string]any{"session_id": a}, ""), "close A")
	outField(t, must(t, s.call(t, "list_intents", map[string]any{"project": intentProject}, ""), "list"), "intents", &listed)
	if len(listed) != 1 || listed[0].SessionID != b || len(listed[0].Overlaps) != 0 {
		t.Fatalf("after A closed: %+v", listed)
	}
	before := string(must(t, s.call(t, "list_intents", map[string]any{"project": intentProject}, ""), "list").Output["intents"])
	refusedAs(t, s.call(t, "declare_intent", map[string]any{"session_id": a, "paths": []string{"x"}}, ""), "session_closed", "closed session")
	if after := string(must(t, s.call(t, "list_intents", map[string]any{"project": intentProject}, ""), "list").Output["intents"]); after != before {
		t.Fatalf("a closed session's declaration changed the intents:\n%s\nwant\n%s", after, before)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// intentBadInputs: each refusal has its exact kind and leaves the
// project's intents as they were.
func intentBadInputs(t *testing.T, s *server, sess string) {
	list := func() string {
		r := must(t, s.call(t, "list_intents", map[string]any{"project": intentProject}, ""), "list")
		return string(r.Output["intents"])
	}
	before := list()
	many := make([]string, 10000)
	for i := range many {
		many[i] = "internal/a/x.go"
	}
	for _, c := range []struct {
		what string
		args map[string]any
	}{
		{"10000 globs", map[string]any{"paths": many}},
		{"escaping glob", map[string]any{"paths": []string{"internal/../../etc/passwd"}}},
		{"absolute glob", map[string]any{"paths": []string{"/etc/passwd"}}},
		{"bad pattern", map[string]any{"paths": []string{"internal/[a"}}},
		{"note too long", map[string]any{"paths": []string{"x"}, "note": strings.Repeat("n", intent.NoteMaxChars+1)}},
		{"ttl too long", map[string]any{"paths": []string{"x"}, "ttl_seconds": 86401}},
	} {
		c.args["session_id"] = sess
		refusedAs(t, s.call(t, "declare_intent", c.args, ""), "invalid_arguments", c.what)
		if after := list(); after != before {
			t.Fatalf("%s changed the intents:\n%s\nwant\n%s", c.what, after, before)
		}
	}
	bob, _, err := s.a.Auth.CreateToken(context.Background(), "bob", "bob", []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite})
	if err != nil {
		t.Fatal(err)
	}
	refusedAs(t, s.callAs(t, bob, "declare_intent", map[string]any{"session_id": sess, "paths": []string{"x"}}, ""),
		"session_authority_denied", "another principal's session")
	if after := list(); after != before {
		t.Fatal("another principal's declaration changed the intents")
	}
	// Bob's own intents are apart: he sees none of ours.
	var theirs []intent.Listed
	outField(t, must(t, s.callAs(t, bob, "list_intents", map[string]any{"project": intentProject}, ""), "bob lists"), "intents", &theirs)
	if len(theirs) != 0 {
		t.Fatalf("bob sees %+v", theirs)
	}
}

// TestIntentOverlapOverMCP: the overlap block reaches MCP clients in
// structuredContent (and the sidecar), to both sessions, once.
func TestIntentOverlapOverMCP(t *testing.T) {
	s := startApp(t, t.TempDir(), "intent="+intentProjectDir(t))
	defer s.stop(t)
	cs := connectMCP(t, s, "", nil)
	session := func(what string) string {
		r, _ := callMCP(t, cs, "work_on_project", map[string]any{"project": intentProject, "instruction": what}, nil)
		return str(t, r.Output["session_id"])
	}
	a, b := session("A"), session("B")
	overlapOf := func(tool string, args map[string]any) *intent.Notice {
		t.Helper()
		r, raw := callMCP(t, cs, tool, args, nil)
		if !r.Success {
			t.Fatalf("%s: %+v", tool, r.Error)
		}
		var blocks struct {
			Overlap *intent.Notice `json:"overlap"`
		}
		json.Unmarshal(raw, &blocks)
		return blocks.Overlap
	}
	if n := overlapOf("declare_intent", map[string]any{"session_id": a, "paths": []string{"internal/a/**"}}); n != nil {
		t.Fatalf("A's declaration: %+v", n)
	}
	if n := overlapOf("declare_intent", map[string]any{"session_id": b, "paths": []string{"internal/a/x.go"}}); names(n) != "intent:"+a+":internal/a/x.go" {
		t.Fatalf("B's declaration: %q", names(n))
	}
	if n := overlapOf("session_summary", map[string]any{"session_id": a}); names(n) != "intent:"+b+":internal/a/**" {
		t.Fatalf("A's next call: %q", names(n))
	}
	if n := overlapOf("session_summary", map[string]any{"session_id": a}); n != nil {
		t.Fatalf("A's notice shown twice: %+v", n)
	}
}
