package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/gateway"
	"github.com/webcodex/webcodex/internal/transport/mcpserver"
)

// bearerTransport adds a bearer credential to every request.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connectMCP opens a go-sdk client session to the server's /mcp endpoint.
// version "" lets the client negotiate (the latest); "2025-11-25" forces the
// legacy era.
func connectMCP(t *testing.T, s *server, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "webcodex-test", Version: "1"}, opts)
	tr := &mcp.StreamableClientTransport{
		Endpoint:             s.base + "/mcp",
		HTTPClient:           &http.Client{Transport: bearerTransport{token: s.token, base: http.DefaultTransport}},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}
	cs, err := client.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect (%q): %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// mcpResult is a tools/call structuredContent.
type mcpResult struct {
	Success bool                       `json:"success"`
	Output  map[string]json.RawMessage `json:"output"`
	Error   *struct{ Kind, Message string }
	Context map[string]json.RawMessage `json:"context"`
	// Attention is the session_attention block (sidecar).
	Attention json.RawMessage `json:"session_attention"`
}

func callMCP(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, meta mcp.Meta) (mcpResult, []byte) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var r mcpResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: structuredContent %s: %v", tool, raw, err)
	}
	if res.IsError == r.Success {
		t.Fatalf("%s: isError=%v but success=%v", tool, res.IsError, r.Success)
	}
	// structuredContent is the first text block plus the sidecar's members.
	var fromText, fromStructured, side map[string]any
	json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &fromText)
	json.Unmarshal(raw, &fromStructured)
	if len(res.Content) > 1 {
		json.Unmarshal([]byte(res.Content[1].(*mcp.TextContent).Text), &side)
	}
	for k, v := range side {
		if diff := cmp.Diff(fromStructured[k], v); diff != "" {
			t.Fatalf("%s: sidecar %s differs from structuredContent:\n%s", tool, k, diff)
		}
		delete(fromStructured, k)
	}
	if diff := cmp.Diff(fromStructured, fromText); diff != "" {
		t.Fatalf("%s: text block differs from structuredContent:\n%s", tool, diff)
	}
	return r, raw
}

var volatile = []*regexp.Regexp{
	regexp.MustCompile(`wc_sess_[0-9a-f]{32}`),
	regexp.MustCompile(`(inv|call)_[0-9a-f]{24}`),
	regexp.MustCompile(`"(at|created_at|updated_at|closed_at)":"[^"]*"`),
}

// durationRE matches a duration member; it is removed, not replaced, since a
// zero duration is omitted from events altogether.
var durationRE = regexp.MustCompile(`"duration_ms":\d+,?`)

func normalize(b []byte) string {
	s := durationRE.ReplaceAllString(string(b), "")
	for _, re := range volatile {
		s = re.ReplaceAllStringFunc(s, func(m string) string {
			if i := strings.Index(m, ":"); i > 0 && strings.HasPrefix(m, `"`) {
				return m[:i] + `:"X"`
			}
			return "X"
		})
	}
	return s
}

// runMCPTask runs the same task over MCP and returns the normalized
// ToolResults and the tools/list.
func runMCPTask(t *testing.T, version string) (results []string, tools string, negotiated string) {
	repo := gitRepo(t)
	s := startApp(t, t.TempDir(), "calc="+repo)
	defer s.stop(t)
	cs := connectMCP(t, s, version, nil)
	negotiated = cs.InitializeResult().ProtocolVersion
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each era's tool list; the legacy one, and only it, lacks the
	// context_request wrapper member (and the context output member).
	for _, tl := range lt.Tools {
		if slices.Contains(gateway.Names, tl.Name) {
			continue // the gateway tools take no wrapper members
		}
		in, _ := json.Marshal(tl.InputSchema)
		out, _ := json.Marshal(tl.OutputSchema)
		hasContext := strings.Contains(string(in), `"context_request"`) || strings.Contains(string(out), `"context"`)
		if modern := version == ""; hasContext != modern {
			t.Fatalf("%s (version %q) lists context_request/context: %v", tl.Name, version, hasContext)
		}
		delete(tl.InputSchema.(map[string]any)["properties"].(map[string]any), "context_request")
		delete(tl.OutputSchema.(map[string]any)["properties"].(map[string]any), "context")
	}
	tb, _ := json.Marshal(lt.Tools)
	const proj = "agent:local:calc"
	w, raw := callMCP(t, cs, "work_on_project", map[string]any{"project": proj, "instruction": "Fix Add"}, nil)
	results = append(results, normalize(raw))
	var id string
	json.Unmarshal(w.Output["session_id"], &id)
	steps := []struct {
		tool string
		args map[string]any
	}{
		{"search_project_texts", map[string]any{"project": proj, "queries": []any{map[string]any{"query": "a - b"}}, "recording_session_id": id}},
		{"read_files", map[string]any{"project": proj, "files": []any{map[string]any{"path": "calc.go"}}, "recording_session_id": id}},
	}
	var rev string
	for _, st := range steps {
		r, raw := callMCP(t, cs, st.tool, st.args, nil)
		if !r.Success {
			t.Fatalf("%s: %+v", st.tool, r.Error)
		}
		results = append(results, normalize(raw))
		if st.tool == "read_files" {
			var files []struct {
				ReadRevision string `json:"read_revision"`
			}
			json.Unmarshal(r.Output["files"], &files)
			rev = files[0].ReadRevision
		}
	}
	for _, st := range []struct {
		tool string
		args map[string]any
	}{
		{"apply_text_edits", map[string]any{"project": proj, "recording_session_id": id, "changes": []any{map[string]any{
			"path": "calc.go", "op": "replace", "expected_read_revision": rev,
			"edits": []any{map[string]any{"old_text": "a - b", "new_text": "a + b"}}}}}},
		{"git_diff", map[string]any{"project": proj, "recording_session_id": id}},
		{"apply_text_edits", map[string]any{"project": proj, "recording_session_id": id, "changes": []any{map[string]any{
			"path": "calc.go", "op": "replace", "expected_read_revision": rev,
			"edits": []any{map[string]any{"old_text": "a + b", "new_text": "a * b"}}}}}},
		{"read_files", map[string]any{"project": proj, "files": []any{map[string]any{"path": "missing.go"}}}},
		{"read_files", map[string]any{"project": proj, "files": []any{map[string]any{"path": "calc.go"}}, "bogus": 1}},
		{"session_summary", map[string]any{"session_id": id, "limit": 200}},
	} {
		_, raw := callMCP(t, cs, st.tool, st.args, nil)
		results = append(results, normalize(raw))
	}
	return results, string(tb), negotiated
}

// TestMCPBothEras runs one task through the go-sdk client in the modern and
// the legacy era and requires identical ToolResults and tool lists (apart
// from context_request, which exists only in the modern era).
func TestMCPBothEras(t *testing.T) {
	modern, modernTools, v1 := runMCPTask(t, "")
	legacy, legacyTools, v2 := runMCPTask(t, "2025-11-25")
	if v1 != "2026-07-28" || v2 != "2025-11-25" {
		t.Fatalf("negotiated %q and %q", v1, v2)
	}
	if modernTools != legacyTools {
		t.Fatal("tools/list differs between eras")
	}
	if diff := cmp.Diff(modern, legacy); diff != "" {
		t.Fatalf("ToolResults differ between eras (-modern +legacy):\n%s", diff)
	}
	// The task really did what it says, in order.
	for i, want := range []string{`"continuation":"created"`, `calc.go`, `"read_revision"`, `"changed_paths":["calc.go"]`,
		`+\treturn a + b`, `"conflict_kind":"sha256_mismatch"`, `"kind":"not_found"`, `"kind":"invalid_arguments"`, `"tool_call_finished"`} {
		if !strings.Contains(modern[i], want) {
			t.Errorf("step %d does not contain %s:\n%.400s", i, want, modern[i])
		}
	}
}

func TestMCPToolsListSizeAndShape(t *testing.T) {
	s := startApp(t, t.TempDir())
	defer s.stop(t)
	cs := connectMCP(t, s, "", nil)
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(lt.Tools)
	t.Logf("tools/list: %d tools, %d bytes", len(lt.Tools), len(b))
	// Budgets: the first wave of tools (foundation, issue 2) within 40 KB,
	// and no single tool over MaxToolBytes, so the list grows linearly.
	const MaxToolBytes = 4 << 10
	wave := map[string]bool{"work_on_project": true, "list_sessions": true, "session_summary": true, "update_session_context": true,
		"close_session": true, "read_files": true, "list_project_files": true, "project_overview": true, "search_project_texts": true,
		"apply_text_edits": true, "write_project_file": true, "git_status": true, "git_diff": true}
	waveBytes := 0
	for _, tl := range lt.Tools {
		tb, _ := json.Marshal(tl)
		if len(tb) > MaxToolBytes {
			t.Errorf("%s is %d bytes in tools/list, over %d", tl.Name, len(tb), MaxToolBytes)
		}
		if wave[tl.Name] {
			waveBytes += len(tb)
		}
	}
	if waveBytes > 40<<10 {
		t.Errorf("the foundation tools take %d bytes of tools/list, over the 40 KB budget", waveBytes)
	}
	for _, tl := range lt.Tools {
		if tl.Annotations == nil || tl.Annotations.OpenWorldHint == nil || *tl.Annotations.OpenWorldHint || tl.OutputSchema == nil {
			t.Errorf("%s: annotations %+v", tl.Name, tl.Annotations)
		}
		in, _ := json.Marshal(tl.InputSchema)
		if slices.Contains(gateway.Names, tl.Name) {
			continue // the gateway tools take no wrapper members
		}
		for _, w := range []string{"recording_session_id", "ack_session_message_ids", "context_request"} {
			if !strings.Contains(string(in), `"`+w+`"`) {
				t.Errorf("%s: input schema lacks wrapper member %s", tl.Name, w)
			}
		}
	}
}

// TestMCPClientWindowNeverStored sends a host window id and checks that its
// raw value reaches no file of the data directory.
func TestMCPClientWindowNeverStored(t *testing.T) {
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("x\n"), 0o644)
	data := t.TempDir()
	s := startApp(t, data, "p="+proj)
	cs := connectMCP(t, s, "", nil)
	const window = "v1/raw-window-value-7f3a9c"
	w, _ := callMCP(t, cs, "work_on_project", map[string]any{"project": "agent:local:p", "instruction": "go"}, mcp.Meta{"openai/session": window})
	var id string
	json.Unmarshal(w.Output["session_id"], &id)
	for i := 0; i < 3; i++ {
		callMCP(t, cs, "read_files", map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": "a.txt"}}, "recording_session_id": id}, mcp.Meta{"openai/session": window})
	}
	cs.Close()
	s.stop(t)
	filepathWalk(t, data, func(path string, b []byte) {
		if strings.Contains(string(b), window) || strings.Contains(string(b), "raw-window-value") {
			t.Errorf("%s holds the raw window value", filepath.Base(path))
		}
	})
}

func TestMCPProgress(t *testing.T) {
	proj := t.TempDir()
	for i := 0; i < 450; i++ {
		os.WriteFile(filepath.Join(proj, fmt.Sprintf("f%03d.txt", i)), []byte("needle\n"), 0o644)
	}
	s := startApp(t, t.TempDir(), "p="+proj)
	defer s.stop(t)
	got := make(chan float64, 16)
	cs := connectMCP(t, s, "", &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		got <- r.Params.Progress
	}})
	params := &mcp.CallToolParams{Name: "search_project_texts", Arguments: map[string]any{"project": "agent:local:p", "queries": []any{map[string]any{"query": "needle"}}, "max_matches": 1}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("search: %v %+v", err, res)
	}
	// Notifications are handled on the client's own goroutine and may
	// arrive just after the result: wait for the first two.
	if first, second := <-got, <-got; first != 200 || second != 400 {
		t.Fatalf("progress notifications %v, %v, want 200, 400", first, second)
	}
}

// TestToolSurfacesAgree is the contract between MCP tools/list, the REST
// tool list and OpenAPI: the same tools, with the same input schemas (MCP
// adds only its wrapper members and publishes them without type arrays
// (mcpserver.Portable); OpenAPI adds only recording_session_id).
func TestToolSurfacesAgree(t *testing.T) {
	s := startAppWith(t, t.TempDir(), func(c *app.Config) { c.ToolProfile = gateway.Full })
	defer s.stop(t)
	cs := connectMCP(t, s, "", nil)
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The full profile lists every kernel tool, and the gateway tools,
	// which are MCP's own.
	lt.Tools = slices.DeleteFunc(lt.Tools, func(mt *mcp.Tool) bool { return slices.Contains(gateway.Names, mt.Name) })
	_, body := s.do(t, s.token, "POST", "/api/tools/list", nil)
	var rest struct {
		Tools []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
	}
	json.Unmarshal(body, &rest)
	_, body = s.do(t, "", "GET", "/openapi.json?tools=all", nil)
	var doc struct {
		Paths map[string]struct {
			Post struct {
				Description string `json:"description"`
				RequestBody struct {
					Content map[string]struct {
						Schema map[string]any `json:"schema"`
					} `json:"content"`
				} `json:"requestBody"`
			} `json:"post"`
		} `json:"paths"`
	}
	json.Unmarshal(body, &doc)
	if len(lt.Tools) != len(rest.Tools) || len(doc.Paths) != len(rest.Tools) {
		t.Fatalf("MCP %d tools, REST %d, OpenAPI %d", len(lt.Tools), len(rest.Tools), len(doc.Paths))
	}
	mcpIn := func(mt *mcp.Tool) map[string]any {
		b, _ := json.Marshal(mt.InputSchema)
		var m map[string]any
		json.Unmarshal(b, &m)
		for _, k := range []string{"recording_session_id", "ack_session_message_ids", "context_request"} {
			delete(m["properties"].(map[string]any), k)
		}
		return m
	}
	without := func(schema map[string]any, members ...string) string {
		b, _ := json.Marshal(schema)
		var m map[string]any
		json.Unmarshal(b, &m)
		props, _ := m["properties"].(map[string]any)
		if props == nil { // a tool without input: no properties is empty properties
			props = map[string]any{}
			m["properties"] = props
		}
		for _, k := range members {
			delete(props, k)
		}
		out, _ := json.Marshal(m)
		return string(out)
	}
	for i, rt := range rest.Tools {
		mt := lt.Tools[i]
		if mt.Name != rt.Name || mt.Description != rt.Description {
			t.Fatalf("tool %d: MCP %s / REST %s", i, mt.Name, rt.Name)
		}
		// MCP publishes REST's schema made portable (no type arrays).
		restPortable := without(rt.InputSchema)
		var rp map[string]any
		json.Unmarshal([]byte(restPortable), &rp)
		mcpserver.Portable(rp)
		if b, _ := json.Marshal(rp); without(mcpIn(mt)) != string(b) {
			t.Errorf("%s: MCP input schema is not REST's made portable\nREST %s\nMCP  %s", rt.Name, b, without(mcpIn(mt)))
		}
		restIn := without(rt.InputSchema)
		op := doc.Paths["/api/actions/"+rt.Name].Post
		apiIn := without(op.RequestBody.Content["application/json"].Schema, "recording_session_id", "ack_session_message_ids")
		if restIn != apiIn || op.Description != rt.Description {
			t.Errorf("%s: schemas differ\nREST    %s\nOpenAPI %s", rt.Name, restIn, apiIn)
		}
	}
}
