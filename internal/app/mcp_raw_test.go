package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
)

// Raw-HTTP tests of /mcp: every request is built by hand so the exact
// status codes, headers and JSON-RPC error shapes of the real handler stack
// (httpserver -> bearer auth -> go-sdk stateless Streamable HTTP ->
// mcpserver -> kernel) are pinned down.

const (
	rawModernVersion = "2026-07-28"
	rawLegacyVersion = "2025-11-25"
	rawProjectID     = "agent:local:p"
	rawAgentsMD      = "Always run the raw MCP tests before finishing.\n"
)

// rawHTTP bounds every request of these tests.
var rawHTTP = &http.Client{Timeout: 30 * time.Second}

// rawMsg is one JSON-RPC message.
type rawMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   *rawRPCError    `json:"error"`
}

type rawRPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// rawResp is one /mcp HTTP exchange.
type rawResp struct {
	Status int
	Header http.Header
	Body   []byte
	// Msgs are the JSON-RPC responses the body carries (notifications
	// skipped); Msg is the response when there is exactly one, else nil
	// (plain-text HTTP errors, 202, the HTTP stack's own JSON errors).
	Msgs []*rawMsg
	Msg  *rawMsg
}

func (r rawResp) String() string {
	return fmt.Sprintf("HTTP %d %s: %.400s", r.Status, r.Header.Get("Content-Type"), r.Body)
}

// rawParse returns the JSON-RPC responses in a body: application/json
// holds one message; text/event-stream holds events whose data lines carry
// messages (notifications first, then the response). Other media types
// (plain-text errors) and JSON that is not JSON-RPC hold none.
func rawParse(contentType string, body []byte) ([]*rawMsg, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "application/json":
		// The HTTP stack's own errors are JSON too, but not JSON-RPC.
		var m rawMsg
		if err := json.Unmarshal(body, &m); err != nil || m.JSONRPC != "2.0" {
			return nil, nil
		}
		return []*rawMsg{&m}, nil
	case "text/event-stream":
		var resps []*rawMsg
		var data []string
		dispatch := func() error {
			if len(data) == 0 {
				return nil
			}
			payload := strings.Join(data, "\n")
			data = nil
			var m rawMsg
			if err := json.Unmarshal([]byte(payload), &m); err != nil || m.JSONRPC != "2.0" {
				return fmt.Errorf("SSE event data is not JSON-RPC: %v: %.200s", err, payload)
			}
			if len(m.ID) > 0 && m.Method == "" {
				resps = append(resps, &m)
			}
			return nil
		}
		for line := range strings.SplitSeq(string(body), "\n") {
			line = strings.TrimSuffix(line, "\r")
			switch {
			case line == "":
				if err := dispatch(); err != nil {
					return nil, err
				}
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			}
			// event:, id:, retry: and : comments carry no message.
		}
		if err := dispatch(); err != nil {
			return nil, err
		}
		return resps, nil
	}
	return nil, nil
}

func rawTestParse(t *testing.T) {
	sse := "event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
		": keep-alive\r\n\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\r\ndata: \"result\":{\"ok\":true}}\r\n\r\n"
	ms, err := rawParse("text/event-stream", []byte(sse))
	if err != nil || len(ms) != 1 || string(ms[0].ID) != "7" || string(ms[0].Result) != `{"ok":true}` {
		t.Fatalf("SSE parse: %+v, %v", ms, err)
	}
	ms, err = rawParse("application/json; charset=utf-8", []byte(`{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"m"}}`))
	if err != nil || len(ms) != 1 || ms[0].Error == nil || ms[0].Error.Code != -32601 {
		t.Fatalf("JSON parse: %+v, %v", ms, err)
	}
	for _, tc := range []struct{ ct, body string }{
		{"text/plain; charset=utf-8", "Bad Request"},
		{"application/json", `{"success":false,"error":{"kind":"unauthenticated"}}`},
	} {
		if ms, err := rawParse(tc.ct, []byte(tc.body)); ms != nil || err != nil {
			t.Fatalf("%s parse: %+v, %v", tc.ct, ms, err)
		}
	}
}

// rawDo sends req and parses the answer.
func rawDo(t *testing.T, req *http.Request) rawResp {
	t.Helper()
	resp, err := rawHTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	r := rawResp{Status: resp.StatusCode, Header: resp.Header, Body: body}
	if r.Msgs, err = rawParse(resp.Header.Get("Content-Type"), body); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if len(r.Msgs) == 1 {
		r.Msg = r.Msgs[0]
	}
	return r
}

// rawRequest builds a request to /mcp with the headers every Streamable
// HTTP POST carries; hdr then sets (or, with "", removes) headers.
func rawRequest(t *testing.T, s *server, method, token string, body []byte, hdr map[string]string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, s.base+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return req
}

func rawPost(t *testing.T, s *server, token string, body []byte, hdr map[string]string) rawResp {
	t.Helper()
	return rawDo(t, rawRequest(t, s, http.MethodPost, token, body, hdr))
}

// rawMeta is the modern request _meta envelope.
func rawMeta(version string) map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    version,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "rawtest", "version": "1.0"},
	}
}

// rawBody encodes one JSON-RPC request. A modern request gets the _meta
// envelope of version unless params already hold _meta; version "" adds
// none (legacy).
func rawBody(id int, method string, params map[string]any, version string) []byte {
	p := maps.Clone(params)
	if p == nil {
		p = map[string]any{}
	}
	if _, ok := p["_meta"]; !ok && version != "" {
		p["_meta"] = rawMeta(version)
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
	if err != nil {
		panic(err)
	}
	return b
}

// rawHeaders are the SEP-2243 headers of a modern request.
func rawHeaders(method, name string) map[string]string {
	h := map[string]string{"MCP-Protocol-Version": rawModernVersion, "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// rawModern sends a well-formed modern request.
func rawModern(t *testing.T, s *server, token string, id int, method string, params map[string]any) rawResp {
	t.Helper()
	name, _ := params["name"].(string)
	return rawPost(t, s, token, rawBody(id, method, params, rawModernVersion), rawHeaders(method, name))
}

// rawToolResult is the structuredContent of a tools/call.
type rawToolResult struct {
	Success bool                       `json:"success"`
	Output  map[string]json.RawMessage `json:"output"`
	Error   *struct{ Kind, Message string }
	Context map[string]rawMaterial `json:"context"`
	// Attention is the session_attention block (sidecar).
	Attention json.RawMessage `json:"session_attention"`
}

type rawMaterial struct {
	Status  string          `json:"status"`
	Reason  string          `json:"reason"`
	Content json.RawMessage `json:"content"`
}

type rawCallResult struct {
	IsError           bool `json:"isError"`
	Content           []struct{ Type, Text string }
	StructuredContent rawToolResult `json:"structuredContent"`
	ResultType        string        `json:"resultType"`
}

// rawCall sends a modern tools/call that must reach the tool layer (HTTP
// 200, a result, no JSON-RPC error) and returns the result.
func rawCall(t *testing.T, s *server, token, tool string, args any) rawCallResult {
	t.Helper()
	r := rawModern(t, s, token, 1, "tools/call", map[string]any{"name": tool, "arguments": args})
	if r.Status != http.StatusOK || r.Msg == nil || r.Msg.Error != nil || len(r.Msg.Result) == 0 {
		t.Fatalf("tools/call %s: %s", tool, r)
	}
	var res rawCallResult
	if err := json.Unmarshal(r.Msg.Result, &res); err != nil {
		t.Fatalf("tools/call %s result: %v: %s", tool, err, r.Msg.Result)
	}
	// The first text block is the {success, output, error} envelope for
	// clients that only read content (the digested bytes); a second one,
	// only with warnings or context, is the sidecar; isError mirrors
	// success.
	if len(res.Content) < 1 || len(res.Content) > 2 || res.Content[0].Type != "text" {
		t.Fatalf("tools/call %s content: %+v", tool, res.Content)
	}
	if hasSidecar := res.StructuredContent.Context != nil || res.StructuredContent.Attention != nil; hasSidecar != (len(res.Content) == 2) {
		t.Fatalf("tools/call %s: context %v but %d content blocks", tool, res.StructuredContent.Context, len(res.Content))
	}
	var text rawToolResult
	if err := json.Unmarshal([]byte(res.Content[0].Text), &text); err != nil || text.Success != res.StructuredContent.Success {
		t.Fatalf("tools/call %s text block does not mirror structuredContent: %v %.200s", tool, err, res.Content[0].Text)
	}
	if res.IsError == res.StructuredContent.Success || res.ResultType != "complete" {
		t.Fatalf("tools/call %s: isError=%v success=%v resultType=%q", tool, res.IsError, res.StructuredContent.Success, res.ResultType)
	}
	return res
}

func rawWantToolError(t *testing.T, res rawCallResult, kind string) {
	t.Helper()
	sc := res.StructuredContent
	if !res.IsError || sc.Success || sc.Error == nil || sc.Error.Kind != kind {
		t.Fatalf("want a tool error %s, got isError=%v %+v", kind, res.IsError, sc.Error)
	}
}

func rawString(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("not a string: %s", raw)
	}
	return v
}

// rawProjectDir is a project root with a file and an AGENTS.md.
func rawProjectDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte(rawAgentsMD), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func rawReadArgs() map[string]any {
	return map[string]any{"project": rawProjectID, "files": []any{map[string]any{"path": "a.txt"}}}
}

func rawWith(base map[string]any, k string, v any) map[string]any {
	m := maps.Clone(base)
	m[k] = v
	return m
}

// rawStartSession starts a Workflow Session over MCP as token.
func rawStartSession(t *testing.T, s *server, token, instruction string) string {
	t.Helper()
	res := rawCall(t, s, token, "work_on_project", map[string]any{"project": rawProjectID, "instruction": instruction})
	if !res.StructuredContent.Success {
		t.Fatalf("work_on_project: %+v", res.StructuredContent.Error)
	}
	return rawString(t, res.StructuredContent.Output["session_id"])
}

func rawEvents(t *testing.T, s *server, id string) int64 {
	t.Helper()
	sess, err := s.a.Sessions.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return sess.EventsObserved
}

// TestMCPRawProtocol covers what the transcripts of testdata/mcp
// (TestMCPTranscripts) cannot show: the raw-response parser they rely on,
// that two tools/list answers are byte-identical (the list a client may
// cache), and a body over the HTTP stack's limit, which never reaches the
// kernel.
func TestMCPRawProtocol(t *testing.T) {
	t.Run("OKParser", rawTestParse)

	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)

	t.Run("OKToolsListStable", func(t *testing.T) {
		var first json.RawMessage
		for i := range 2 {
			r := rawModern(t, s, s.token, 1, "tools/list", nil)
			if r.Status != http.StatusOK || r.Msg == nil || r.Msg.Error != nil || len(r.Msg.Result) == 0 {
				t.Fatalf("tools/list: %s", r)
			}
			if i == 0 {
				first = r.Msg.Result
			} else if !bytes.Equal(first, r.Msg.Result) {
				t.Fatalf("tools/list differs between two calls:\n%.300s\n%.300s", first, r.Msg.Result)
			}
		}
	})
	t.Run("ErrOversized", func(t *testing.T) {
		args := rawWith(rawReadArgs(), "pad", strings.Repeat("x", 5<<20))
		body := rawBody(1, "tools/call", map[string]any{"name": "read_files", "arguments": args}, rawModernVersion)
		calls := s.a.Kernel.Stats().Calls
		r := rawPost(t, s, s.token, body, rawHeaders("tools/call", "read_files"))
		if r.Status != http.StatusRequestEntityTooLarge {
			t.Fatalf("oversized: %s", r)
		}
		if got := s.a.Kernel.Stats().Calls; got != calls {
			t.Fatalf("an oversized request reached the kernel")
		}
	})
}

// TestMCPRawToolErrors covers failures that are tool results (HTTP 200,
// isError true), not protocol errors: bad arguments, bad wrapper metadata
// and refused recorder claims, and checks that none of them records
// anything.
func TestMCPRawToolErrors(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	ctx := context.Background()

	sess := rawStartSession(t, s, s.token, "raw MCP recorder target")
	otherTok, _, err := s.a.Auth.CreateToken(ctx, "other", "someone-else", []auth.Scope{auth.ScopeAdmin})
	if err != nil {
		t.Fatal(err)
	}
	foreign := rawStartSession(t, s, otherTok, "another group's task")

	t.Run("OKRecordedCall", func(t *testing.T) {
		// Positive control: a good recorder claim does record, so the
		// unchanged counts below mean something.
		before := rawEvents(t, s, sess)
		res := rawCall(t, s, s.token, "read_files", rawWith(rawReadArgs(), "recording_session_id", sess))
		if !res.StructuredContent.Success {
			t.Fatalf("recorded read: %+v", res.StructuredContent.Error)
		}
		if after := rawEvents(t, s, sess); after <= before {
			t.Fatalf("recorded call added no event (%d -> %d)", before, after)
		}
	})

	// Arguments the kernel's strict decoding refuses.
	for _, tc := range []struct {
		name string
		args any
	}{
		{"ErrUnknownArgument", rawWith(rawWith(rawReadArgs(), "bogus", 1), "recording_session_id", sess)},
		{"ErrWrongArgumentType", rawWith(rawWith(rawReadArgs(), "files", "a.txt"), "recording_session_id", sess)},
		{"ErrMissingArgument", map[string]any{"project": rawProjectID, "recording_session_id": sess}},
		{"ErrArgumentsNotObject", []any{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := rawEvents(t, s, sess)
			res := rawCall(t, s, s.token, "read_files", tc.args)
			rawWantToolError(t, res, "invalid_arguments")
			if fk := res.StructuredContent.Output["failure_kind"]; rawString(t, fk) != "invalid_arguments" {
				t.Fatalf("failure_kind %s", fk)
			}
			if after := rawEvents(t, s, sess); after != before {
				t.Fatalf("refused call recorded %d events", after-before)
			}
		})
	}

	// Wrapper metadata of the wrong type or over its bounds: refused by the
	// transport before the kernel sees the call.
	ack := func(i int) string { return fmt.Sprintf("wc_msg_%032x", i) }
	var nineAcks, nineKeys []any
	for i := range 9 {
		nineAcks = append(nineAcks, ack(i))
		nineKeys = append(nineKeys, fmt.Sprintf("k%d", i))
	}
	for _, tc := range []struct {
		name string
		args map[string]any
	}{
		{"ErrRecorderNotString", rawWith(rawReadArgs(), "recording_session_id", 42)},
		{"ErrRecorderTooLong", rawWith(rawReadArgs(), "recording_session_id", sess+strings.Repeat("0", 129-len(sess)))},
		// Too many or malformed ACK ids do not refuse the call: they are
		// judged in session_attention (attention_e2e_test.go).
		{"ErrAcksNotArray", rawWith(rawWith(rawReadArgs(), "recording_session_id", sess), "ack_session_message_ids", ack(1))},
		{"ErrContextNotArray", rawWith(rawWith(rawReadArgs(), "recording_session_id", sess), "context_request", "webcodex.workflow")},
		{"ErrContextTooMany", rawWith(rawWith(rawReadArgs(), "recording_session_id", sess), "context_request", nineKeys)},
		{"ErrContextEmptyKey", rawWith(rawWith(rawReadArgs(), "recording_session_id", sess), "context_request", []any{""})},
		{"ErrContextKeyTooLong", rawWith(rawWith(rawReadArgs(), "recording_session_id", sess), "context_request", []any{strings.Repeat("k", 65)})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, calls := rawEvents(t, s, sess), s.a.Kernel.Stats().Calls
			res := rawCall(t, s, s.token, "read_files", tc.args)
			rawWantToolError(t, res, "invalid_arguments")
			if fk := res.StructuredContent.Output["failure_kind"]; rawString(t, fk) != "invalid_arguments" {
				t.Fatalf("failure_kind %s", fk)
			}
			if res.StructuredContent.Context != nil {
				t.Fatalf("refused call carries context: %v", res.StructuredContent.Context)
			}
			refusedOnce(t, s, calls)
			if after := rawEvents(t, s, sess); after != before {
				t.Fatalf("refused call recorded %d events", after-before)
			}
		})
	}
	t.Run("OKWrapperAtBounds", func(t *testing.T) {
		// Exactly at the bounds is accepted.
		args := rawWith(rawReadArgs(), "ack_session_message_ids", nineAcks[:8])
		args["context_request"] = nineKeys[:8]
		res := rawCall(t, s, s.token, "read_files", args)
		if !res.StructuredContent.Success || len(res.StructuredContent.Context) != 8 {
			t.Fatalf("at bounds: %+v context %v", res.StructuredContent.Error, res.StructuredContent.Context)
		}
	})

	t.Run("ErrForgedRecorder", func(t *testing.T) {
		forged := "wc_sess_" + strings.Repeat("ab", 16)
		claims := s.a.Kernel.Stats().InvalidClaims
		res := rawCall(t, s, s.token, "read_files", rawWith(rawReadArgs(), "recording_session_id", forged))
		rawWantToolError(t, res, "unknown_session_id")
		if b := res.StructuredContent.Output["session_binding"]; rawString(t, b) != "invalid_claim" {
			t.Fatalf("session_binding %s", b)
		}
		if got := s.a.Kernel.Stats().InvalidClaims; got != claims+1 {
			t.Fatalf("invalid claims %d -> %d", claims, got)
		}
		if _, err := s.a.Sessions.Get(ctx, forged); err == nil {
			t.Fatal("a forged recorder claim created a session")
		}
	})
	t.Run("ErrForeignRecorder", func(t *testing.T) {
		before := rawEvents(t, s, foreign)
		res := rawCall(t, s, s.token, "read_files", rawWith(rawReadArgs(), "recording_session_id", foreign))
		rawWantToolError(t, res, "session_authority_denied")
		if b := res.StructuredContent.Output["session_binding"]; rawString(t, b) != "invalid_claim" {
			t.Fatalf("session_binding %s", b)
		}
		if after := rawEvents(t, s, foreign); after != before {
			t.Fatalf("the foreign session gained %d events", after-before)
		}
	})
	t.Run("ErrForeignBusinessSession", func(t *testing.T) {
		before := rawEvents(t, s, foreign)
		res := rawCall(t, s, s.token, "session_summary", map[string]any{"session_id": foreign})
		rawWantToolError(t, res, "session_authority_denied")
		if after := rawEvents(t, s, foreign); after != before {
			t.Fatalf("the foreign session gained %d events", after-before)
		}
	})
}

// TestMCPRawContextAndREST covers the context_request sidecar for a caller
// without project:read (the materials of an admin caller are in the
// testdata/mcp context_request transcripts) and checks that MCP wrapper
// members never reach REST.
func TestMCPRawContextAndREST(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	ctx := context.Background()
	sess := rawStartSession(t, s, s.token, "context sidecar")

	t.Run("ErrInstructionsNeedScope", func(t *testing.T) {
		// A caller without project:read fails the tool and gets no
		// instructions; the public workflow guide is still attached.
		tok, _, err := s.a.Auth.CreateToken(ctx, "runtime", auth.DefaultOwner, []auth.Scope{auth.ScopeRuntimeRead})
		if err != nil {
			t.Fatal(err)
		}
		// read_files itself is a step-up (403) that reaches no tool and
		// attaches nothing; list_runners (runtime:read) runs, and its
		// project.instructions are refused for lack of project:read.
		rawStepUp(t, s, tok, "read_files", toolScopes(t, s, "read_files"), rawWith(rawReadArgs(), "context_request", []any{"project.instructions", "webcodex.workflow"}))
		res := rawCall(t, s, tok, "list_runners", rawWith(map[string]any{}, "context_request", []any{"project.instructions", "webcodex.workflow"}))
		if !res.StructuredContent.Success {
			t.Fatalf("list_runners: %+v", res.StructuredContent.Error)
		}
		if ins := res.StructuredContent.Context["project.instructions"]; ins.Status != "unavailable" || ins.Reason != "insufficient_scope" || ins.Content != nil {
			t.Fatalf("project.instructions without project:read: %+v", ins)
		}
		if res.StructuredContent.Context["webcodex.workflow"].Status != "available" {
			t.Fatalf("webcodex.workflow: %+v", res.StructuredContent.Context)
		}
	})
	// Wrapper members exist only on MCP: REST passes arguments to the
	// kernel unchanged, whose strict decoding refuses them.
	for _, tc := range []struct {
		name  string
		field string
		value any
	}{
		// ack_session_message_ids is a REST envelope member (and a GPT
		// Actions wrapper member): attention_e2e_test.go.
		{"ErrRESTContext", "context_request", []any{"webcodex.workflow"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := rawEvents(t, s, sess)
			r := s.call(t, "read_files", rawWith(rawReadArgs(), tc.field, tc.value), sess)
			if r.Success || r.Error == nil || r.Error.Kind != "invalid_arguments" || !strings.Contains(r.Error.Message, tc.field) {
				t.Fatalf("/api/tools/call with %s: %+v", tc.field, r.Error)
			}
			body, _ := json.Marshal(rawWith(rawReadArgs(), tc.field, tc.value))
			code, data := s.do(t, s.token, http.MethodPost, "/api/actions/read_files", body)
			var res result
			json.Unmarshal(data, &res)
			if code != http.StatusOK || res.Success || res.Error == nil || res.Error.Kind != "invalid_arguments" {
				t.Fatalf("/api/actions/read_files with %s: %d %s", tc.field, code, data)
			}
			if strings.Contains(string(data), `"context"`) {
				t.Fatalf("REST answered a context_request: %s", data)
			}
			if after := rawEvents(t, s, sess); after != before {
				t.Fatalf("refused REST call recorded %d events", after-before)
			}
		})
	}
}
