package app_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/audit"
)

// ergonomicsOf decodes summary.model_ergonomics of an event view (nil
// when absent).
func ergonomicsOf(t *testing.T, e audit.EventView) *audit.ModelErgonomics {
	t.Helper()
	raw, ok := e.Summary[audit.SummaryErgonomics]
	if !ok {
		return nil
	}
	b, _ := json.Marshal(raw)
	var m audit.ModelErgonomics
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("model_ergonomics: %v: %s", err, b)
	}
	return &m
}

// nthEvent returns the n-th event of audit session id, which is committed
// once the response of the call it records was received.
func nthEvent(t *testing.T, s *server, id string, n int) audit.EventView {
	t.Helper()
	got, raw := auditSession(t, s, id)
	if len(got.Events) < n {
		t.Fatalf("audit session %s: %d events, want %d: %s", id, len(got.Events), n, raw)
	}
	return got.Events[n-1]
}

func TestAuditModelErgonomics(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	const planted = "ergonomics-planted-content-7781"
	bytesOf := func(n int64) *int64 { return &n }
	cases := []struct {
		name     string
		path     string
		body     any
		wantHTTP int
		want     audit.ModelErgonomics
	}{
		{
			name: "read success", path: "/api/tools/call", wantHTTP: 200,
			body: map[string]any{"tool": "read_files", "arguments": rawReadArgs()},
			want: audit.ModelErgonomics{ToolName: "read_files", ToolCategory: "files", Success: true, ExecutionState: audit.ExecCompleted},
		},
		{
			name: "edit fence conflict", path: "/api/tools/call", wantHTTP: 200,
			body: map[string]any{"tool": "apply_text_edits", "arguments": map[string]any{"project": rawProjectID, "changes": []any{
				map[string]any{"path": "a.txt", "op": "replace", "expected_sha256": strings.Repeat("0", 64),
					"edits": []any{map[string]any{"old_text": "hello", "new_text": planted}}}}}},
			want: audit.ModelErgonomics{ToolName: "apply_text_edits", ToolCategory: "edit", ErrorKind: "edit_conflict",
				FailureKind: "stale_precondition", RecoveryKind: "reread_and_retry", ExecutionState: audit.ExecNotStarted,
				EditSurface: audit.SurfaceCanonical, EditOutcome: audit.EditConflict, EditConflictKind: "sha256_mismatch"},
		},
		{
			name: "edit rejected before dispatch", path: "/api/tools/call", wantHTTP: 200,
			body: map[string]any{"tool": "apply_text_edits", "arguments": map[string]any{"project": rawProjectID, "bogus": planted}},
			want: audit.ModelErgonomics{ToolName: "apply_text_edits", ToolCategory: "edit", ErrorKind: "invalid_arguments",
				FailureKind: "invalid_arguments", RecoveryKind: "fix_input", ExecutionState: audit.ExecNotStarted,
				EditSurface: audit.SurfaceCanonical, EditOutcome: audit.EditRejected},
		},
		{
			name: "whole-file write", path: "/api/actions/write_project_file", wantHTTP: 200,
			body: map[string]any{"project": rawProjectID, "path": "new.txt", "content": planted},
			want: audit.ModelErgonomics{ToolName: "write_project_file", ToolCategory: "edit", Success: true,
				ExecutionState: audit.ExecCompleted, EditSurface: audit.SurfaceAdvanced, EditOutcome: audit.EditApplied},
		},
		{
			name: "GPT action envelope rejected", path: "/api/actions/write_project_file", wantHTTP: 400,
			body: []any{planted},
			want: audit.ModelErgonomics{ToolName: "write_project_file", ToolCategory: "edit", ErrorKind: "invalid_arguments",
				FailureKind: "invalid_arguments", RecoveryKind: "fix_input", ExecutionState: audit.ExecNotStarted,
				EditSurface: audit.SurfaceAdvanced, EditOutcome: audit.EditRejected},
		},
	}
	for i, c := range cases {
		id := "ergo-rest-" + string(rune('a'+i))
		code, _, body := auditDo(t, s, s.token, c.path, c.body, map[string]string{"x-action-session-id": id})
		if code != c.wantHTTP {
			t.Fatalf("%s: HTTP %d %s", c.name, code, body)
		}
		e := nthEvent(t, s, id, 1)
		got := ergonomicsOf(t, e)
		if got == nil {
			t.Fatalf("%s: no model_ergonomics in %+v", c.name, e.Summary)
		}
		want := c.want
		want.SchemaVersion = audit.ErgonomicsSchemaVersion
		want.DurationMS = got.DurationMS
		// The exact model-facing ToolResult bytes, null for a rejection
		// before a result existed.
		if code == 200 && !strings.Contains(c.name, "before dispatch") {
			want.SerializedResultBytes = bytesOf(int64(len(bytes.TrimSuffix(body, []byte("\n")))))
		}
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if !bytes.Equal(gb, wb) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, gb, wb)
		}
	}

	// MCP tools/call: the bytes are those of structuredContent as sent.
	r := rawPost(t, s, s.token, rawBody(7, "tools/call", map[string]any{"name": "read_files", "arguments": rawReadArgs()}, rawModernVersion),
		map[string]string{"MCP-Protocol-Version": rawModernVersion, "Mcp-Method": "tools/call", "Mcp-Name": "read_files", "x-action-session-id": "ergo-mcp-call"})
	if r.Msg == nil || r.Msg.Error != nil {
		t.Fatalf("MCP tools/call: %s", r)
	}
	var res struct{ StructuredContent json.RawMessage }
	json.Unmarshal(r.Msg.Result, &res)
	e := nthEvent(t, s, "ergo-mcp-call", 1)
	m := ergonomicsOf(t, e)
	if e.ActionName != "read_files" || m == nil || m.ToolName != "read_files" || !m.Success || m.SerializedResultBytes == nil ||
		*m.SerializedResultBytes != int64(len(res.StructuredContent)) || m.ExecutionState != audit.ExecCompleted {
		t.Fatalf("MCP tools/call row: %+v ergonomics %+v (structuredContent %d bytes)", e, m, len(res.StructuredContent))
	}

	// MCP tools/list: its own row with the surface, no tool bodies.
	for _, era := range []struct{ version, want string }{{rawModernVersion, "stateless_2026"}, {"", "legacy"}} {
		id := "ergo-list-" + era.want
		hdr := map[string]string{"x-action-session-id": id}
		if era.version != "" {
			hdr["MCP-Protocol-Version"], hdr["Mcp-Method"] = era.version, "tools/list"
		}
		r := rawPost(t, s, s.token, rawBody(8, "tools/list", nil, era.version), hdr)
		if r.Msg == nil || r.Msg.Error != nil {
			t.Fatalf("tools/list (%s): %s", era.want, r)
		}
		var members map[string]json.RawMessage
		json.Unmarshal(r.Msg.Result, &members)
		toolsRaw := members["tools"] // verbatim, as sent
		var list struct{ Tools []json.RawMessage }
		json.Unmarshal(r.Msg.Result, &list)
		e := nthEvent(t, s, id, 1)
		// The surface is measured from the ListToolsResult as the MCP
		// server returns it to the SDK; in the modern era the SDK then
		// adds resultType and _meta (serverInfo), which are not counted.
		resultBytes := len(r.Msg.Result)
		if era.version != "" {
			for _, k := range []string{"resultType", "_meta"} {
				if members[k] == nil {
					t.Fatalf("modern tools/list lacks %s", k)
				}
				resultBytes -= len(`"`+k+`":`) + len(members[k]) + len(",")
			}
		}
		want := map[string]any{"schema_version": float64(1), "protocol_era": era.want, "compact_schemas": false,
			"tool_count": float64(len(list.Tools)), "serialized_tools_bytes": float64(len(toolsRaw)),
			"serialized_result_bytes": float64(resultBytes), "gateway_tool_included": true}
		gb, _ := json.Marshal(e.Summary["tool_surface"])
		wb, _ := json.Marshal(want)
		if e.Endpoint != "/mcp" || e.ActionName != "toolsList" || e.Operation != "mcp_tools_list" || !bytes.Equal(gb, wb) ||
			e.Summary["transport"] != "mcp" || e.Summary[audit.SummaryErgonomics] != nil || len(list.Tools) < 20 {
			t.Fatalf("tools/list row (%s): %+v\n got surface %s\nwant surface %s", era.want, e, gb, wb)
		}
	}

	// The tools report aggregates per tool; nothing planted is stored.
	code, _, body := auditDo(t, s, s.token, "/api/audit/tools", map[string]any{}, nil)
	var rep audit.ToolReport
	json.Unmarshal(body, &rep)
	byTool := map[string]audit.ToolStats{}
	for _, ts := range rep.Tools {
		byTool[ts.Tool] = ts
	}
	if code != 200 || byTool["apply_text_edits"].Count != 2 || byTool["apply_text_edits"].Rejected != 1 ||
		byTool["read_files"].Count != 2 || byTool["read_files"].SuccessRate != 1 || rep.EventsScanned != 6 {
		t.Fatalf("tools report: HTTP %d %s", code, body)
	}
	code, _, body = auditDo(t, s, s.token, "/api/audit/stats", map[string]any{}, nil)
	var st audit.Stats
	json.Unmarshal(body, &st)
	if code != 200 || st.ByCategory["edit"] != 4 || st.ByCategory["files"] != 2 || st.ByCategory["mcp_tools_list"] != 2 {
		t.Fatalf("stats by category: HTTP %d %s", code, body)
	}
	for _, id := range []string{"ergo-rest-b", "ergo-rest-d", "ergo-rest-e"} {
		if _, raw := auditSession(t, s, id); bytes.Contains(raw, []byte(planted)) || bytes.Contains(raw, []byte("a.txt")) {
			t.Fatalf("audit session %s stores argument content: %s", id, raw)
		}
	}
}
