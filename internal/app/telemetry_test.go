package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/requestid"
)

// otlpReceiver is an in-process OTLP/HTTP trace receiver: it decodes every
// ExportTraceServiceRequest and keeps it with its raw bytes and the
// request's headers.
type otlpReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	raw     [][]byte
	reqs    []*v1.ExportTraceServiceRequest
	headers []http.Header
}

func newOTLPReceiver(t testing.TB) *otlpReceiver {
	rc := &otlpReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/traces" || err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var req v1.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, "not an ExportTraceServiceRequest", http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.raw, rc.reqs, rc.headers = append(rc.raw, body), append(rc.reqs, &req), append(rc.headers, r.Header.Clone())
		rc.mu.Unlock()
		out, _ := proto.Marshal(&v1.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// span is what the tests read of an exported span.
type span struct {
	name                    string
	kind                    string
	traceID, spanID, parent []byte
	attrs                   map[string]string
}

func (rc *otlpReceiver) spans() []*span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []*span
	for _, req := range rc.reqs {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					x := &span{name: sp.Name, kind: sp.Kind.String(), traceID: sp.TraceId, spanID: sp.SpanId, parent: sp.ParentSpanId, attrs: map[string]string{}}
					for _, kv := range sp.Attributes {
						x.attrs[kv.Key] = kv.Value.GetStringValue()
						if x.attrs[kv.Key] == "" {
							x.attrs[kv.Key] = strconv.FormatInt(kv.Value.GetIntValue(), 10)
						}
					}
					out = append(out, x)
				}
			}
		}
	}
	return out
}

func attr(s *span, key string) (string, bool) {
	v, ok := s.attrs[key]
	return v, ok
}

func spansNamed(spans []*span, name string) []*span {
	var out []*span
	for _, s := range spans {
		if s.name == name {
			out = append(out, s)
		}
	}
	return out
}

func childOf(spans []*span, parent *span, name string) *span {
	for _, s := range spans {
		if s.name == name && bytes.Equal(s.parent, parent.spanID) && bytes.Equal(s.traceID, parent.traceID) {
			return s
		}
	}
	return nil
}

// jsonLines are the JSON objects logged to b, one a line.
func jsonLines(b *syncBuffer) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.b.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// TestTracesOverOTLP runs MCP and REST calls against a server exporting to
// an in-process receiver: span names, parent/child links and attributes;
// gen_ai.conversation.id only for a verified recorder claim; no argument,
// path or result text in any span; and one request id in the response
// header, the span, the JSON log and the audit event.
func TestTracesOverOTLP(t *testing.T) {
	const (
		markerArg    = "MARKER-ARGUMENT-7f3a"
		markerPath   = "MARKER-PATH-91c2.txt"
		markerResult = "MARKER-RESULT-c0de"
		forgedClaim  = "wc_sess_00000000000000000000000000000000"
		inboundID    = "client-req-42"
	)
	rc := newOTLPReceiver(t)
	proj := t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, markerPath), []byte(markerResult+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	log := slog.New(requestid.NewHandler(slog.NewJSONHandler(&logs, nil)))
	s := startAppLogging(t, t.TempDir(), log, func(c *app.Config) { c.Telemetry.Endpoint = rc.srv.URL }, "p="+proj)

	cs := connectMCP(t, s, "", nil)
	w, _ := callMCP(t, cs, "work_on_project", map[string]any{"project": "agent:local:p", "instruction": "look at " + markerArg}, nil)
	if !w.Success {
		t.Fatalf("work_on_project: %+v", w.Error)
	}
	var wfID string
	json.Unmarshal(w.Output["session_id"], &wfID)
	read := func(recorder string) map[string]any {
		return map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": markerPath}}, "recording_session_id": recorder}
	}
	if r, raw := callMCP(t, cs, "read_files", read(wfID), nil); !r.Success || !strings.Contains(string(raw), markerResult) {
		t.Fatalf("verified read_files: %s", raw)
	}
	callMCP(t, cs, "read_files", read(forgedClaim), nil) // an invalid claim: refused or recorded as such

	restArgs := read("")
	delete(restArgs, "recording_session_id")
	body, _ := json.Marshal(map[string]any{"tool": "read_files", "arguments": restArgs, "recording_session_id": wfID})
	req, _ := http.NewRequest("POST", s.base+"/api/tools/call", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set(requestid.Header, inboundID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := resp.Header.Get(requestid.Header); got != inboundID {
		t.Fatalf("REST response %s = %q, want %q", requestid.Header, got, inboundID)
	}
	auditID := resp.Header.Get("x-action-session-id")

	// A mutating call recorded in no session is journaled before its
	// result: its span carries the record's leaf index.
	wr := s.call(t, "write_project_file", map[string]any{"project": "agent:local:p", "path": "new.txt", "content": markerResult}, "")
	if !wr.Success {
		t.Fatalf("write_project_file: %+v", wr.Error)
	}
	head, err := s.a.Evidence.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	// A malformed inbound id is replaced.
	req, _ = http.NewRequest("POST", s.base+"/api/tools/list", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set(requestid.Header, "bad id with spaces "+markerArg)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get(requestid.Header); !strings.HasPrefix(got, "req_") {
		t.Fatalf("malformed inbound id answered with %q, want a generated one", got)
	}

	got, _ := auditSession(t, s, auditID)
	var audited bool
	for _, e := range got.Events {
		audited = audited || (e.ActionName == "read_files" && e.RequestID == inboundID)
	}
	if !audited {
		t.Fatalf("no read_files audit event with request_id %q: %+v", inboundID, got.Events)
	}

	cs.Close()
	// Stopping waits for every handler, so every span has ended; Close
	// flushes them to the receiver.
	s.stop(t)
	spans := rc.spans()

	var rest []*span
	for _, sp := range spansNamed(spans, "POST /api/tools/call") {
		if v, _ := attr(sp, "webcodex.request.id"); v == inboundID {
			rest = append(rest, sp)
		}
	}
	if len(rest) != 1 {
		t.Fatalf("REST request spans with request id %q: %d, want 1", inboundID, len(rest))
	}
	if v, _ := attr(rest[0], "http.route"); v != "/api/tools/call" {
		t.Fatalf("REST span http.route %q", v)
	}
	restTool := childOf(spans, rest[0], "execute_tool read_files")
	if restTool == nil {
		t.Fatal("no execute_tool span under the REST request span")
	}
	if v, _ := attr(restTool, "gen_ai.conversation.id"); v != wfID {
		t.Fatalf("verified REST call: gen_ai.conversation.id %q, want %q", v, wfID)
	}

	mcpSpans := spansNamed(spans, "tools/call read_files")
	if len(mcpSpans) != 2 {
		t.Fatalf("MCP tools/call read_files spans: %d, want 2", len(mcpSpans))
	}
	var verified, unverified int
	for _, ms := range mcpSpans {
		if m, _ := attr(ms, "mcp.method.name"); m != "tools/call" {
			t.Fatalf("mcp.method.name %q", m)
		}
		if op, _ := attr(ms, "gen_ai.operation.name"); op != "execute_tool" {
			t.Fatalf("gen_ai.operation.name %q", op)
		}
		if _, ok := attr(ms, "jsonrpc.request.id"); !ok {
			t.Fatal("MCP span without jsonrpc.request.id")
		}
		if ms.kind != "SPAN_KIND_SERVER" {
			t.Fatalf("MCP span kind %v", ms.kind)
		}
		var httpParent *span
		for _, h := range spansNamed(spans, "POST /mcp") {
			if bytes.Equal(h.spanID, ms.parent) {
				httpParent = h
			}
		}
		if httpParent == nil {
			t.Fatal("MCP span is not a child of its HTTP request span")
		}
		rid, _ := attr(httpParent, "webcodex.request.id")
		if mrid, _ := attr(ms, "webcodex.request.id"); rid == "" || mrid != rid {
			t.Fatalf("MCP span request id %q, HTTP span %q", mrid, rid)
		}
		tool := childOf(spans, ms, "execute_tool read_files")
		if tool == nil {
			t.Fatal("no execute_tool span under the MCP span")
		}
		if v, _ := attr(tool, "gen_ai.tool.name"); v != "read_files" {
			t.Fatalf("gen_ai.tool.name %q", v)
		}
		if _, ok := attr(tool, "webcodex.invocation.id"); !ok {
			t.Fatal("execute_tool span without webcodex.invocation.id")
		}
		conv, hasConv := attr(tool, "gen_ai.conversation.id")
		binding, _ := attr(tool, "webcodex.evidence.binding")
		switch binding {
		case "verified":
			verified++
			if conv != wfID {
				t.Fatalf("verified call: gen_ai.conversation.id %q, want %q", conv, wfID)
			}
		default:
			unverified++
			if hasConv {
				t.Fatalf("%s call carries gen_ai.conversation.id %q", binding, conv)
			}
		}
	}
	if verified != 1 || unverified != 1 {
		t.Fatalf("verified %d, unverified %d MCP read_files calls; want 1 and 1", verified, unverified)
	}

	writes := spansNamed(spans, "execute_tool write_project_file")
	if len(writes) != 1 {
		t.Fatalf("write_project_file tool spans: %d", len(writes))
	}
	leaf, ok := attr(writes[0], "webcodex.evidence.leaf_index")
	if n, err := strconv.ParseUint(leaf, 10, 64); !ok || err != nil || n >= head.Size {
		t.Fatalf("write_project_file leaf index %q (journal size %d)", leaf, head.Size)
	}
	for _, sp := range spansNamed(spans, "execute_tool read_files") {
		if _, ok := attr(sp, "webcodex.evidence.leaf_index"); ok {
			t.Fatal("a read's record, queued behind its response, has a leaf index on its span")
		}
	}

	rc.mu.Lock()
	for _, raw := range rc.raw {
		for _, m := range []string{markerArg, markerPath, markerResult, forgedClaim, proj, "MARKER"} {
			if bytes.Contains(raw, []byte(m)) {
				t.Fatalf("exported spans contain %q", m)
			}
		}
	}
	rc.mu.Unlock()

	var logged bool
	for _, l := range jsonLines(&logs) {
		logged = logged || (l["msg"] == "http request" && l[requestid.LogKey] == inboundID && l["route"] == "/api/tools/call")
	}
	if !logged {
		t.Fatalf("no JSON log line of the REST request with request_id %q", inboundID)
	}
}
