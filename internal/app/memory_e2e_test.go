package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/memory"
)

// memoryState is every entry of project p's memory, to prove that a
// refused call changed nothing.
func memoryState(t *testing.T, s *server) string {
	t.Helper()
	ctx := context.Background()
	p, err := s.a.Projects.Get(ctx, rawProjectID)
	if err != nil {
		t.Fatal(err)
	}
	es, n, err := app.NewMemory(s.a.Stores).List(ctx, memory.ScopeFor(p.ID, p.Root), 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"n": n, "entries": es})
	return string(b)
}

func wantFail(t *testing.T, r result, kind string) {
	t.Helper()
	if r.Success || r.Error == nil || r.Error.Kind != kind {
		t.Fatalf("want %s, got success=%v %+v", kind, r.Success, r.Error)
	}
}

// TestMemoryOverRESTAndMCP drives the memory tools through REST and the
// go-sdk MCP client against the real server: CAS, racing writers, scope
// checks, bad input with state unchanged, and metadata-only evidence.
func TestMemoryOverRESTAndMCP(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	ctx := context.Background()
	set := func(key, body, rev string) result {
		return s.call(t, "memory_set", map[string]any{"project": rawProjectID, "memory_key": key, "body": body, "expected_revision": rev}, "")
	}
	r := must(t, set("conventions", "tests use real SQLite", ""), "memory_set")
	var meta struct {
		Revision string `json:"revision"`
		MemoryID string `json:"memory_id"`
	}
	json.Unmarshal(r.Output["entry"], &meta)
	rev0 := meta.Revision

	t.Run("RacingClientsOneWins", func(t *testing.T) {
		// Two go-sdk clients race memory_set on one key with the same
		// expected revision: exactly one wins, the other gets
		// revision_conflict carrying the winner's revision.
		clients := []*mcp.ClientSession{connectMCP(t, s, "", nil), connectMCP(t, s, "", nil)}
		var wg sync.WaitGroup
		out := make([]mcpResult, 2)
		errs := make([]error, 2)
		start := make(chan struct{})
		for i, cs := range clients {
			wg.Go(func() {
				<-start
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_set", Arguments: map[string]any{
					"project": rawProjectID, "memory_key": "conventions", "body": []string{"client A", "client B"}[i], "expected_revision": rev0}})
				if err != nil {
					errs[i] = err
					return
				}
				raw, _ := json.Marshal(res.StructuredContent)
				errs[i] = json.Unmarshal(raw, &out[i])
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if out[0].Success == out[1].Success {
			t.Fatalf("want exactly one winner: %+v / %+v", out[0].Error, out[1].Error)
		}
		win, lose := out[0], out[1]
		if !win.Success {
			win, lose = lose, win
		}
		json.Unmarshal(win.Output["entry"], &meta)
		if lose.Error == nil || lose.Error.Kind != "revision_conflict" || str(t, lose.Output["current_revision"]) != meta.Revision {
			t.Fatalf("loser: %+v %s, winner revision %s", lose.Error, lose.Output["current_revision"], meta.Revision)
		}
		rev0 = meta.Revision
	})

	t.Run("ErrBadInputChangesNothing", func(t *testing.T) {
		before := memoryState(t, s)
		wantFail(t, set("conventions", "stale write", "mrev_1_000000000000000000000000"), "revision_conflict")
		wantFail(t, set("conventions", "malformed", "etag-123"), "invalid_revision")
		wantFail(t, set(strings.Repeat("k", memory.MaxKeyChars+1), "b", ""), "invalid_arguments")
		wantFail(t, set("k", strings.Repeat("b", memory.MaxBodyBytes+1), ""), "invalid_arguments")
		wantFail(t, s.call(t, "memory_search", map[string]any{"project": rawProjectID, "query": `"unbalanced`}, ""), "invalid_arguments")
		wantFail(t, s.call(t, "memory_delete", map[string]any{"project": rawProjectID, "memory_key": "absent", "expected_revision": rev0}, ""), "unknown_memory")
		if after := memoryState(t, s); after != before {
			t.Fatalf("refused calls changed memory:\n%s\n%s", before, after)
		}
	})

	t.Run("ErrNoMemoryScope", func(t *testing.T) {
		// A token with every project scope but no memory scope is refused
		// both ways; one with memory:read reads but cannot write.
		projOnly, _, err := s.a.Auth.CreateToken(ctx, "proj", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite, auth.ScopeRuntimeRead})
		if err != nil {
			t.Fatal(err)
		}
		reader, _, err := s.a.Auth.CreateToken(ctx, "reader", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite, auth.ScopeMemoryRead})
		if err != nil {
			t.Fatal(err)
		}
		before := memoryState(t, s)
		setArgs := map[string]any{"project": rawProjectID, "memory_key": "new", "body": "b"}
		readArgs := map[string]any{"project": rawProjectID, "memory_key": "conventions"}
		// Each is a step-up: 403 naming every scope of the tool.
		wantFail(t, s.stepUpAs(t, projOnly, "memory_set", setArgs), "insufficient_scope")
		wantFail(t, s.stepUpAs(t, projOnly, "memory_read", readArgs), "insufficient_scope")
		wantFail(t, s.stepUpAs(t, projOnly, "memory_search", map[string]any{"project": rawProjectID, "query": "tests"}), "insufficient_scope")
		wantFail(t, s.stepUpAs(t, reader, "memory_set", setArgs), "insufficient_scope")
		wantFail(t, s.stepUpAs(t, reader, "memory_scope_list", map[string]any{}), "insufficient_scope")
		must(t, s.callAs(t, reader, "memory_read", readArgs, ""), "memory_read with memory:read")
		if after := memoryState(t, s); after != before {
			t.Fatal("refused calls changed memory")
		}
	})

	t.Run("MetadataOnlyEvidence", func(t *testing.T) {
		sess := rawStartSession(t, s, s.token, "memory evidence")
		must(t, s.call(t, "memory_read", map[string]any{"project": rawProjectID, "memory_key": "conventions"}, sess), "memory_read")
		must(t, s.call(t, "memory_search", map[string]any{"project": rawProjectID, "query": "client"}, sess), "memory_search")
		must(t, s.call(t, "memory_set", map[string]any{"project": rawProjectID, "memory_key": "recorded", "body": "client B wrote this"}, sess), "memory_set")
		rd := must(t, s.call(t, "memory_read", map[string]any{"project": rawProjectID, "memory_key": "recorded", "include_history": true}, ""), "memory_read")
		var got struct {
			WrittenBy string `json:"written_by_session"`
		}
		json.Unmarshal(rd.Output["entry"], &got)
		if got.WrittenBy != sess {
			t.Fatalf("writer is %q, want the verified recorder %s", got.WrittenBy, sess)
		}
		_, evs, err := s.a.Sessions.Summary(ctx, sess, 50)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(evs)
		if !strings.Contains(string(raw), `"memory_key":"conventions"`) || !strings.Contains(string(raw), `"memory_hits":"1"`) ||
			!strings.Contains(string(raw), `"memory_key":"recorded"`) {
			t.Fatalf("no memory metadata in the session: %s", raw)
		}
		if strings.Contains(string(raw), "client A") || strings.Contains(string(raw), "client B") || strings.Contains(string(raw), "[client]") {
			t.Fatalf("a memory body reached the session: %s", raw)
		}
	})

	t.Run("ThroughTheGateway", func(t *testing.T) {
		// The default (core) profile does not list the memory tools;
		// call_tool reaches them through the same kernel.
		res := rawCall(t, s, s.token, "call_tool", map[string]any{"tool": "memory_search",
			"arguments": map[string]any{"project": rawProjectID, "query": "client"}})
		if !res.StructuredContent.Success || string(res.StructuredContent.Output["returned"]) != "2" { // the race winner and "recorded"
			t.Fatalf("call_tool memory_search: %+v %s", res.StructuredContent.Error, res.StructuredContent.Output["returned"])
		}
	})

	t.Run("GPTActionsAndDelete", func(t *testing.T) {
		body, _ := json.Marshal(map[string]any{"project": rawProjectID, "memory_key": "conventions", "expected_revision": rev0})
		code, data := s.do(t, s.token, http.MethodPost, "/api/actions/memory_delete", body)
		var res result
		json.Unmarshal(data, &res)
		if code != http.StatusOK || !res.Success {
			t.Fatalf("/api/actions/memory_delete: %d %s", code, data)
		}
		r := must(t, set("conventions", "client A", ""), "re-create")
		json.Unmarshal(r.Output["entry"], &meta)
		if meta.Revision == rev0 {
			t.Fatal("re-create kept the deleted revision")
		}
	})
}

// TestMemoryScopeFollowsRoot: re-registering the project id to another
// root resolves to a distinct, empty memory scope.
func TestMemoryScopeFollowsRoot(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	ctx := context.Background()
	must(t, s.call(t, "memory_set", map[string]any{"project": rawProjectID, "memory_key": "k", "body": "old root"}, ""), "memory_set")
	if err := s.a.Projects.Unregister(ctx, rawProjectID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.a.RegisterProjects(ctx, []string{"p=" + t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	wantFail(t, s.call(t, "memory_read", map[string]any{"project": rawProjectID, "memory_key": "k"}, ""), "unknown_memory")
	r := must(t, s.call(t, "memory_search", map[string]any{"project": rawProjectID, "query": "root"}, ""), "memory_search")
	if string(r.Output["returned"]) != "0" {
		t.Fatalf("new root sees old memory: %s", r.Output["hits"])
	}
	r = must(t, s.call(t, "memory_scope_list", map[string]any{}, ""), "memory_scope_list")
	var scopes []memory.Scope
	json.Unmarshal(r.Output["scopes"], &scopes)
	if len(scopes) != 1 || scopes[0].Entries != 1 {
		t.Fatalf("scopes: %+v", scopes)
	}
	// The old root's scope is still there for an admin to purge.
	r = must(t, s.call(t, "memory_scope_purge", map[string]any{"scope_id": scopes[0].ID}, ""), "memory_scope_purge")
	if string(r.Output["entries_removed"]) != "1" {
		t.Fatalf("purge: %s", r.Output["entries_removed"])
	}
}

// TestMemoryBootstrapMaterial: memory.bootstrap is projected after the
// call, bounded, and denied as an unavailable material (never a failure)
// without memory:read; plugins.catalog is always unavailable.
func TestMemoryBootstrapMaterial(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	ctx := context.Background()
	must(t, s.call(t, "memory_set", map[string]any{"project": rawProjectID, "memory_key": "rule", "body": "always pin", "tags": []string{"pinned"}}, ""), "pinned")
	for i := range 30 {
		must(t, s.call(t, "memory_set", map[string]any{"project": rawProjectID, "memory_key": "note/" + string(rune('a'+i)), "body": strings.Repeat("n", 1500)}, ""), "note")
	}
	keys := []any{"memory.bootstrap", "skills.catalog", "plugins.catalog"}
	res := rawCall(t, s, s.token, "read_files", rawWith(rawReadArgs(), "context_request", keys))
	if !res.StructuredContent.Success {
		t.Fatalf("read_files: %+v", res.StructuredContent.Error)
	}
	m := res.StructuredContent.Context["memory.bootstrap"]
	if m.Status != "available" || len(m.Content) > memory.MaxBootstrapBytes {
		t.Fatalf("memory.bootstrap: %s, %d bytes", m.Status, len(m.Content))
	}
	var b memory.Bootstrap
	if err := json.Unmarshal(m.Content, &b); err != nil {
		t.Fatal(err)
	}
	if !b.Truncated || b.Total != 31 || b.Included >= 31 || b.Entries[0].MemoryKey != "rule" || b.Entries[1].MemoryKey != "note/"+string(rune('a'+29)) {
		t.Fatalf("bootstrap: total %d included %d truncated %v first %s", b.Total, b.Included, b.Truncated, b.Entries[0].MemoryKey)
	}
	// The project has no skill: the catalog is available and empty.
	if c := res.StructuredContent.Context["skills.catalog"]; c.Status != "available" || !strings.Contains(string(c.Content), `"skills":[]`) {
		t.Fatalf("skills.catalog: %+v", c)
	}
	// No MCP provider is configured: the plugins catalog is available
	// and empty.
	if c := res.StructuredContent.Context["plugins.catalog"]; c.Status != "available" || !strings.Contains(string(c.Content), `"plugins":[]`) {
		t.Fatalf("plugins.catalog: %+v", c)
	}
	// Without memory:read the main call still succeeds; the material is
	// unavailable with a reason and no content.
	tok, _, err := s.a.Auth.CreateToken(ctx, "proj", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatal(err)
	}
	res = rawCall(t, s, tok, "read_files", rawWith(rawReadArgs(), "context_request", keys))
	if !res.StructuredContent.Success {
		t.Fatalf("read_files without memory:read failed: %+v", res.StructuredContent.Error)
	}
	if m := res.StructuredContent.Context["memory.bootstrap"]; m.Status != "unavailable" || m.Reason != "insufficient_scope" || m.Content != nil {
		t.Fatalf("memory.bootstrap without memory:read: %+v", m)
	}
	// No explicit project: unavailable, project_required.
	res = rawCall(t, s, s.token, "list_sessions", map[string]any{"context_request": []any{"memory.bootstrap"}})
	if m := res.StructuredContent.Context["memory.bootstrap"]; m.Status != "unavailable" || m.Reason != "project_required" {
		t.Fatalf("memory.bootstrap without a project: %+v", m)
	}
}
