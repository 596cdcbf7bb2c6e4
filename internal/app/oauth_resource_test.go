package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/transport/resourcemeta"
	"github.com/webcodex/webcodex/internal/workflow"
)

// bearerChallenge returns the parameters of the one Bearer challenge of a
// response, parsed as an OAuth client parses it.
func bearerChallenge(t *testing.T, h http.Header) map[string]string {
	t.Helper()
	cs, err := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	if err != nil || len(cs) != 1 || cs[0].Scheme != "bearer" {
		t.Fatalf("WWW-Authenticate %q: %+v %v", h.Values("WWW-Authenticate"), cs, err)
	}
	return cs[0].Params
}

// plainDo sends a request with optional bearer token and headers and
// returns the status, headers and body.
func plainDo(t *testing.T, method, url, token string, body []byte, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, data
}

// serverState is what an unauthenticated or refused request must leave
// as it was: the evidence journal, the workflow sessions and the audit
// sessions.
func serverState(t *testing.T, s *server) string {
	t.Helper()
	_, sessions, err := s.a.Sessions.List(context.Background(), workflow.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("journal %d, sessions %d, audit sessions %d", journalSize(t, s), sessions, len(auditSessions(t, s)))
}

const wantDefaultScopes = "project:read project:write runtime:read"

// TestOAuthDiscoveryFrom401 walks discovery as an OAuth client does: a
// request to /mcp without a credential gets 401 with a Bearer challenge
// naming the metadata URL and the default scopes; the metadata, fetched
// and checked with the go-sdk's client (resource must equal the MCP URL),
// describes this resource. The root metadata is the same document. REST
// gets the same challenge; a refused token gets error="invalid_token".
// None of it creates a session, an evidence record or an audit row.
func TestOAuthDiscoveryFrom401(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	before := serverState(t, s)
	mcpURL := s.base + "/mcp"
	metaURL := s.base + resourcemeta.WellKnownMCP

	init := rawBody(1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "c", "version": "1"}}, "")
	code, hdr, body := plainDo(t, "POST", mcpURL, "", init, map[string]string{"Content-Type": "application/json"})
	if code != http.StatusUnauthorized || errorKind(t, body) != "unauthenticated" {
		t.Fatalf("POST /mcp without a token: HTTP %d %s", code, body)
	}
	ch := bearerChallenge(t, hdr)
	if ch["resource_metadata"] != metaURL || ch["scope"] != wantDefaultScopes || ch["error"] != "" {
		t.Fatalf("401 challenge: %v", ch)
	}
	prm, err := oauthex.GetProtectedResourceMetadata(context.Background(), ch["resource_metadata"], mcpURL, http.DefaultClient)
	if err != nil {
		t.Fatalf("a client refuses the metadata: %v", err)
	}
	if prm.ResourceName != resourcemeta.ResourceName || !slices.Equal(prm.BearerMethodsSupported, []string{"header"}) ||
		strings.Join(prm.ScopesSupported, " ") != "runtime:read project:read project:write job:run memory:read memory:manage" {
		t.Fatalf("metadata: %+v", prm)
	}
	code, _, suffixed := plainDo(t, "GET", metaURL, "", nil, nil)
	if code != 200 || bytes.Contains(suffixed, []byte("authorization_servers")) {
		t.Fatalf("metadata: HTTP %d %s (no authorization server exists yet)", code, suffixed)
	}
	code, _, root := plainDo(t, "GET", s.base+resourcemeta.WellKnown, "", nil, nil)
	if code != 200 || !bytes.Equal(root, suffixed) {
		t.Fatalf("root metadata: HTTP %d %s, path-suffixed %s", code, root, suffixed)
	}
	if _, err := oauthex.GetProtectedResourceMetadata(context.Background(), s.base+resourcemeta.WellKnown, mcpURL, http.DefaultClient); err != nil {
		t.Fatalf("root metadata: %v", err)
	}

	call := []byte(`{"tool":"read_files","arguments":{"project":"agent:local:p","files":[{"path":"a.txt"}]}}`)
	for _, tc := range []struct{ path, token, wantErr string }{
		{"/api/tools/call", "", ""},
		{"/api/actions/read_files", "", ""},
		{"/api/tools/call", "wc_pat_" + strings.Repeat("A", 43), "invalid_token"},
		{"/mcp", "wc_pat_" + strings.Repeat("A", 43), "invalid_token"},
		{"/mcp", "not-a-token", "invalid_token"},
	} {
		code, hdr, body := plainDo(t, "POST", s.base+tc.path, tc.token, call, nil)
		if code != http.StatusUnauthorized || errorKind(t, body) != "unauthenticated" {
			t.Fatalf("%s token %q: HTTP %d %s", tc.path, tc.token, code, body)
		}
		if ch := bearerChallenge(t, hdr); ch["resource_metadata"] != metaURL || ch["error"] != tc.wantErr || ch["scope"] != wantDefaultScopes {
			t.Fatalf("%s token %q: challenge %v", tc.path, tc.token, ch)
		}
	}
	if after := serverState(t, s); after != before {
		t.Fatalf("unauthenticated requests changed the server: %s -> %s", before, after)
	}
}

// TestOAuthMetadataCORS: a browser-based client's preflight carrying
// MCP-Protocol-Version is answered from any origin, and so is its GET;
// the Origin check still guards every other route. Other methods are 405.
func TestOAuthMetadataCORS(t *testing.T) {
	s := startApp(t, t.TempDir())
	defer s.stop(t)
	for _, path := range []string{resourcemeta.WellKnownMCP, resourcemeta.WellKnown} {
		code, hdr, body := plainDo(t, "OPTIONS", s.base+path, "", nil, map[string]string{
			"Origin": "https://inspector.example", "Access-Control-Request-Method": "GET",
			"Access-Control-Request-Headers": "mcp-protocol-version",
		})
		allowed := strings.Split(hdr.Get("Access-Control-Allow-Headers"), ", ")
		if code != http.StatusNoContent || hdr.Get("Access-Control-Allow-Origin") != "*" ||
			!slices.ContainsFunc(allowed, func(h string) bool { return strings.EqualFold(h, "MCP-Protocol-Version") }) ||
			!strings.Contains(hdr.Get("Access-Control-Allow-Methods"), "GET") || len(body) != 0 {
			t.Fatalf("preflight %s: HTTP %d %v %s", path, code, hdr, body)
		}
		code, hdr, body = plainDo(t, "GET", s.base+path, "", nil, map[string]string{
			"Origin": "https://inspector.example", "MCP-Protocol-Version": "2026-07-28",
		})
		if code != 200 || hdr.Get("Access-Control-Allow-Origin") != "*" || hdr.Get("Content-Type") != "application/json" ||
			!strings.Contains(string(body), `"resource":"`+s.base+`/mcp"`) {
			t.Fatalf("cross-origin GET %s: HTTP %d %v %s", path, code, hdr, body)
		}
		code, hdr, body = plainDo(t, "POST", s.base+path, "", []byte("{}"), nil)
		if code != http.StatusMethodNotAllowed || errorKind(t, body) != "invalid_arguments" || hdr.Get("Allow") != "GET, HEAD, OPTIONS" {
			t.Fatalf("POST %s: HTTP %d %v %s", path, code, hdr, body)
		}
	}
	code, _, body := plainDo(t, "GET", s.base+"/api/status", s.token, nil, map[string]string{"Origin": "https://inspector.example"})
	if code != http.StatusForbidden || errorKind(t, body) != "permission_denied" {
		t.Fatalf("a foreign origin on /api/status: HTTP %d %s", code, body)
	}
}

// TestOAuthPublicURLWithPrefix: behind a proxy that forwards
// https://host/base/ to the server, the resource is the public MCP URL
// (scheme and host lowercased, no trailing slash) and the challenge names
// the metadata under the same prefix.
func TestOAuthPublicURLWithPrefix(t *testing.T) {
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, app.ConfigFile), []byte("public_url = \"https://WebCodex-Tunnel.example/base/\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startApp(t, data)
	defer s.stop(t)
	host := map[string]string{"Host": "webcodex-tunnel.example"}
	code, hdr, body := plainDo(t, "POST", s.base+"/mcp", "", []byte("{}"), host)
	if code != http.StatusUnauthorized {
		t.Fatalf("POST /mcp: HTTP %d %s", code, body)
	}
	if ch := bearerChallenge(t, hdr); ch["resource_metadata"] != "https://webcodex-tunnel.example/base/.well-known/oauth-protected-resource/mcp" {
		t.Fatalf("challenge: %v", ch)
	}
	code, _, body = plainDo(t, "GET", s.base+resourcemeta.WellKnownMCP, "", nil, host)
	var prm oauthex.ProtectedResourceMetadata
	if code != 200 || json.Unmarshal(body, &prm) != nil || prm.Resource != "https://webcodex-tunnel.example/base/mcp" {
		t.Fatalf("metadata: HTTP %d %s", code, body)
	}
	// The DNS-rebinding check still guards the metadata.
	code, _, body = plainDo(t, "GET", s.base+resourcemeta.WellKnownMCP, "", nil, map[string]string{"Host": "attacker.example"})
	if code != http.StatusForbidden || errorKind(t, body) != "permission_denied" {
		t.Fatalf("metadata for a foreign host: HTTP %d %s", code, body)
	}
}

// wantStepUp checks a 403 step-up answer: a Bearer challenge with
// error="insufficient_scope", every scope the tool needs and the metadata
// URL.
func wantStepUp(t *testing.T, s *server, code int, hdr http.Header, scopes string) {
	t.Helper()
	if code != http.StatusForbidden {
		t.Fatalf("want 403, got HTTP %d", code)
	}
	ch := bearerChallenge(t, hdr)
	if ch["error"] != "insufficient_scope" || ch["scope"] != scopes || ch["resource_metadata"] != s.base+resourcemeta.WellKnownMCP {
		t.Fatalf("step-up challenge: %v, want scope %q", ch, scopes)
	}
}

// toolScopes is the scope hint of a step-up for tool: all its scopes.
func toolScopes(t *testing.T, s *server, tool string) string {
	t.Helper()
	tl, ok := s.a.Kernel.Registry().Lookup(tool)
	if !ok {
		t.Fatalf("no tool %s", tool)
	}
	names := make([]string, len(tl.Scopes))
	for i, sc := range tl.Scopes {
		names[i] = string(sc)
	}
	return strings.Join(names, " ")
}

// stepUpAs calls tool over REST with token, which lacks one of its
// scopes: the answer must be a step-up whose body is the refused
// ToolResult.
func (s *server) stepUpAs(t *testing.T, token, tool string, args any) result {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args})
	code, hdr, data := plainDo(t, "POST", s.base+"/api/tools/call", token, body, nil)
	wantStepUp(t, s, code, hdr, toolScopes(t, s, tool))
	var r result
	if err := json.Unmarshal(data, &r); err != nil || r.Success || r.Error == nil || r.Error.Kind != "insufficient_scope" {
		t.Fatalf("%s step-up body: %s", tool, data)
	}
	return r
}

// rawStepUp calls tool over MCP (raw JSON-RPC) with token, which lacks
// one of its scopes: a step-up whose body is a JSON-RPC error response to
// the call, with the refused ToolResult as data. It returns that error
// and the audit session the request was recorded in.
func rawStepUp(t *testing.T, s *server, token, tool, scopes string, args any) (rawRPCError, string) {
	t.Helper()
	r := rawModern(t, s, token, 7, "tools/call", map[string]any{"name": tool, "arguments": args})
	wantStepUp(t, s, r.Status, r.Header, scopes)
	if r.Msg == nil || r.Msg.Error == nil || string(r.Msg.ID) != "7" || r.Msg.Result != nil {
		t.Fatalf("step-up body: %s", r)
	}
	var data rawToolResult
	if err := json.Unmarshal(r.Msg.Error.Data, &data); err != nil || data.Success || data.Error == nil || data.Error.Kind != "insufficient_scope" ||
		data.Error.Message != r.Msg.Error.Message {
		t.Fatalf("step-up error data: %s", r)
	}
	return *r.Msg.Error, r.Header.Get("x-action-session-id")
}

// scopeRecorder is the go-sdk client's OAuth handler at the edge where an
// authorization server would be: it presents a fixed token and records
// the challenge of the response that asked for authorization.
type scopeRecorder struct {
	token      string
	challenges []map[string]string
}

func (h *scopeRecorder) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: h.token}), nil
}

func (h *scopeRecorder) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil || len(cs) != 1 {
		return errors.Join(errors.New("no challenge"), err)
	}
	h.challenges = append(h.challenges, cs[0].Params)
	return errors.New("no authorization server in this test")
}

// TestOAuthStepUp: a token lacking a scope of a tool gets 403
// insufficient_scope naming every scope the tool needs, over REST (both
// routes) and over MCP, directly and through call_tool; the go-sdk client
// sees a JSON-RPC error and keeps its connection, and with an OAuth
// handler it is asked to authorize with those scopes. Nothing changes:
// no memory, no session, no evidence record; the audit event says failed.
func TestOAuthStepUp(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	ctx := context.Background()
	writer, _, err := s.a.Auth.CreateToken(ctx, "writer", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite})
	if err != nil {
		t.Fatal(err)
	}
	setArgs := map[string]any{"project": rawProjectID, "memory_key": "k", "body": "b"}
	const memoryScopes = "project:write memory:manage"
	if got := toolScopes(t, s, "memory_set"); got != memoryScopes {
		t.Fatalf("memory_set needs %q", got)
	}
	journal, mem := journalSize(t, s), memoryState(t, s)

	r := s.stepUpAs(t, writer, "memory_set", setArgs)
	if r.Error.Message != "tool memory_set requires scope memory:manage" {
		t.Fatalf("message: %q", r.Error.Message)
	}
	actionBody, _ := json.Marshal(setArgs)
	code, hdr, body := plainDo(t, "POST", s.base+"/api/actions/memory_set", writer, actionBody, nil)
	wantStepUp(t, s, code, hdr, memoryScopes)
	if errorKind(t, body) != "insufficient_scope" {
		t.Fatalf("action body: %s", body)
	}
	events, _ := auditSession(t, s, hdr.Get("x-action-session-id"))
	ev := eventsFor(events.Events, "memory_set")
	if len(ev) != 2 || slices.ContainsFunc(ev, func(e audit.EventView) bool { return e.Status != "failed" || e.HTTPStatus != http.StatusForbidden }) {
		t.Fatalf("audit events of the two REST step-ups: %+v", events.Events)
	}

	direct, auditID := rawStepUp(t, s, writer, "memory_set", memoryScopes, setArgs)
	via, _ := rawStepUp(t, s, writer, "call_tool", memoryScopes, map[string]any{"tool": "memory_set", "arguments": setArgs})
	if direct.Code != -32003 || direct.Message != via.Message || !bytes.Equal(direct.Data, via.Data) {
		t.Fatalf("denied differently:\ndirect    %+v\ncall_tool %+v", direct, via)
	}
	// The audit trail names the tool called, as for dispatched calls:
	// memory_set directly, call_tool through the gateway.
	events, _ = auditSession(t, s, auditID)
	for _, name := range []string{"memory_set", "call_tool"} {
		ev := eventsFor(events.Events, name)
		if len(ev) == 0 || ev[len(ev)-1].Endpoint != "/mcp" || ev[len(ev)-1].Status != "failed" || ev[len(ev)-1].HTTPStatus != http.StatusForbidden {
			t.Fatalf("audit event of the MCP step-up of %s: %+v", name, events.Events)
		}
	}

	cs := connectAs(t, s, writer)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_set", Arguments: setArgs})
	// The go-sdk client reports the JSON-RPC error's message (its
	// jsonrpc2 layer keeps no code) and keeps the connection.
	if err == nil || !strings.Contains(err.Error(), "tool memory_set requires scope memory:manage") {
		t.Fatalf("go-sdk client: %v", err)
	}
	if j := journalSize(t, s); j != journal {
		t.Fatalf("%d evidence records for refused calls", j-journal)
	}
	if ok, _ := callMCP(t, cs, "read_files", rawReadArgs(), nil); !ok.Success {
		t.Fatalf("the connection did not survive the step-up: %+v", ok.Error)
	}
	journal = journalSize(t, s)

	rec := &scopeRecorder{token: writer}
	client := mcp.NewClient(&mcp.Implementation{Name: "oauth-test", Version: "1"}, nil)
	ocs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp", OAuthHandler: rec, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ocs.Close()
	if _, err := ocs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_set", Arguments: setArgs}); err == nil {
		t.Fatal("the step-up call succeeded")
	}
	if len(rec.challenges) != 1 || rec.challenges[0]["error"] != "insufficient_scope" || rec.challenges[0]["scope"] != memoryScopes {
		t.Fatalf("the OAuth handler was asked: %v", rec.challenges)
	}

	if j := journalSize(t, s); j != journal {
		t.Fatalf("%d evidence records for refused calls", j-journal)
	}
	if after := memoryState(t, s); after != mem {
		t.Fatal("refused calls changed memory")
	}
	if _, sessions, _ := s.a.Sessions.List(ctx, workflow.ListFilter{}); sessions != 0 {
		t.Fatalf("refused calls made sessions: %d", sessions)
	}
}

// TestOAuthRouteStepUp: the routes that check a scope themselves answer
// its lack with the same step-up challenge, naming the scope they need.
func TestOAuthRouteStepUp(t *testing.T) {
	s := startApp(t, t.TempDir())
	defer s.stop(t)
	runner, _, err := s.a.Auth.CreateToken(context.Background(), "jobs", auth.DefaultOwner, []auth.Scope{auth.ScopeJobRun})
	if err != nil {
		t.Fatal(err)
	}
	before := serverState(t, s)
	for _, tc := range []struct{ method, path, body, scope string }{
		{"GET", "/api/status", "", "runtime:read"},
		{"GET", "/api/evidence/sessions/" + workflow.NewSessionID(), "", "project:read"},
		{"POST", "/api/audit/stats", "{}", "account:manage"},
	} {
		code, hdr, body := plainDo(t, tc.method, s.base+tc.path, runner, []byte(tc.body), nil)
		wantStepUp(t, s, code, hdr, tc.scope)
		if errorKind(t, body) != "insufficient_scope" {
			t.Fatalf("%s: %s", tc.path, body)
		}
	}
	if after := serverState(t, s); after != before {
		t.Fatalf("refused route calls changed the server: %s -> %s", before, after)
	}
}
