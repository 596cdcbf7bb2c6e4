package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/audit"
)

// refusedAuditIDs are the id shapes that must never become audit
// sessions, each with a distinctive part that must never reach a file,
// and what the refusal must say.
var refusedAuditIDs = []struct{ id, why string }{
	{"wc_sess_7f3c9a1e5b2d4c6a8e0f1a2b3c4d5e6f", "is a Workflow Session id"},
	{"wc_pat_RefusedAuditIdPat7f3c9a1e5b2d", "looks like a credential"},
	{"ghp_RefusedAuditIdGhp7f3c9a1e5b2d4c6a8e", "looks like a credential"},
	{"github_pat_11RefusedAuditIdGithubPat_7f3c9a1e", "looks like a credential"},
	{"sk-RefusedAuditIdSk7f3c9a1e5b2d4c", "looks like a credential"},
	{"xoxb-7f3c9a1e5b-RefusedAuditIdXoxb", "looks like a credential"},
	{"AKIAREFUSEDAUDI7F3C9", "looks like a credential"},
}

// TestAuditRefusesWorkflowAndCredentialIDs: every refused shape, through
// both headers and the query (REST) and the header (MCP), is answered 400
// invalid_arguments before the handler runs, with a message that says why
// and never echoes the id; afterwards no audit session exists for it and
// no byte of it is in any file of the data directory.
func TestAuditRefusesWorkflowAndCredentialIDs(t *testing.T) {
	data := t.TempDir()
	s := startApp(t, data, "p="+rawProjectDir(t))
	defer func() {
		if s != nil {
			s.stop(t)
		}
	}()
	// One accepted call, so that audit.db holds a session and an event.
	if code, _, body := auditDo(t, s, s.token, "/api/tools/call", map[string]any{"tool": "read_files", "arguments": rawReadArgs()},
		map[string]string{"x-action-session-id": "accepted"}); code != 200 {
		t.Fatalf("accepted id: HTTP %d %s", code, body)
	}
	call := map[string]any{"tool": "read_files", "arguments": rawReadArgs()}
	mcpCall := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_files","arguments":{"project":"agent:local:p","files":[{"path":"a.txt"}]}}}`)
	for _, c := range refusedAuditIDs {
		for _, via := range []string{"x-action-session-id", "x-webcodex-session-id", "query", "mcp"} {
			var (
				code int
				hdr  http.Header
				body []byte
			)
			switch via {
			case "query":
				code, hdr, body = auditDo(t, s, s.token, "/api/tools/call?action_session_id="+url.QueryEscape(c.id), call, nil)
			case "mcp":
				r := rawPost(t, s, s.token, mcpCall, map[string]string{"x-action-session-id": c.id})
				code, hdr, body = r.Status, r.Header, r.Body
			default:
				code, hdr, body = auditDo(t, s, s.token, "/api/tools/call", call, map[string]string{via: c.id})
			}
			var e struct {
				Success *bool
				Error   struct{ Kind, Message string }
			}
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("%s via %s: HTTP %d, body %q: %v", c.id, via, code, body, err)
			}
			if code != 400 || e.Success == nil || *e.Success || e.Error.Kind != "invalid_arguments" || !strings.Contains(e.Error.Message, c.why) {
				t.Errorf("%s via %s: HTTP %d %s, want 400 invalid_arguments saying %q", c.id, via, code, body, c.why)
			}
			if bytes.Contains(body, []byte(c.id)) || hdr.Get("x-action-session-id") != "" {
				t.Errorf("%s via %s: the refusal echoes the id: header %q, body %s", c.id, via, hdr.Get("x-action-session-id"), body)
			}
		}
	}
	ss := auditSessions(t, s)
	if len(ss) != 1 || ss[0].SessionID != "accepted" || ss[0].TotalActions != 1 {
		t.Fatalf("after the refused calls: %+v, want only the accepted session with its 1 event", ss)
	}
	s.stop(t)
	s = nil
	files, err := filepath.Glob(filepath.Join(data, "*"))
	if err != nil {
		t.Fatal(err)
	}
	sawAudit := false
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.IsDir() {
			continue
		}
		sawAudit = sawAudit || filepath.Base(f) == app.AuditDB
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range refusedAuditIDs {
			for _, part := range []string{c.id, c.id[len(c.id)-12:]} {
				if bytes.Contains(b, []byte(part)) {
					t.Errorf("%s holds %q of refused id %s", filepath.Base(f), part, c.id)
				}
			}
		}
	}
	if !sawAudit {
		t.Fatalf("no %s among %v", app.AuditDB, files)
	}
}

// headerTransport adds an audit id header to every request.
type headerTransport struct {
	id   string
	base http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("x-action-session-id", h.id)
	return h.base.RoundTrip(r)
}

// TestAuditReadSeesSentResponses is the reproduction: four calls,
// then an immediate read, returns four events, through /api/audit/* and
// through the code path of the webcodex audit command (a second handle on
// audit.db, as another process has), over REST and over MCP; a response
// larger than the server's write buffers (streamed before its handler
// returns) included.
func TestAuditReadSeesSentResponses(t *testing.T) {
	data, proj := t.TempDir(), rawProjectDir(t)
	if err := os.WriteFile(filepath.Join(proj, "big.txt"), bytes.Repeat([]byte("0123456789abcdef\n"), 6000), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startApp(t, data, "p="+proj)
	defer s.stop(t)
	ctx := context.Background()
	st, closeStore, err := app.OpenAudit(ctx, app.Config{DataDir: data}) // what webcodex audit opens
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	cli := audit.NewService(st, nil)

	// checks reads session id both ways and wants n events of tool.
	check := func(id, tool string, n int) {
		t.Helper()
		got, raw := auditSession(t, s, id)
		if len(eventsFor(got.Events, tool)) != n || got.Session.TotalActions != int64(len(got.Events)) {
			t.Fatalf("/api/audit/session %s: %d %s events of %d, want %d: %s", id, len(eventsFor(got.Events, tool)), tool, len(got.Events), n, raw)
		}
		sess, evs, err := cli.SessionWithEvents(ctx, id, 0)
		if err != nil || len(eventsFor(evs, tool)) != n || sess.TotalActions != int64(len(evs)) {
			t.Fatalf("audit.db (webcodex audit show) %s: %d events, total %d, err %v; want %d %s events", id, len(evs), sess.TotalActions, err, n, tool)
		}
	}

	// REST: four calls without an audit id, then an immediate read.
	big := map[string]any{"project": rawProjectID, "files": []any{map[string]any{"path": "big.txt"}}}
	var idle string
	for i, args := range []map[string]any{rawReadArgs(), rawReadArgs(), rawReadArgs(), big} {
		code, hdr, body := auditDo(t, s, s.token, "/api/tools/call", map[string]any{"tool": "read_files", "arguments": args}, nil)
		if code != 200 || !bytes.Contains(body, []byte(`"success":true`)) {
			t.Fatalf("call %d: HTTP %d %.200s", i, code, body)
		}
		idle = hdr.Get("x-action-session-id")
	}
	if i := len(idle); i == 0 {
		t.Fatal("no audit session header")
	}
	if ss := auditSessions(t, s); len(ss) != 1 || ss[0].TotalActions != 4 {
		t.Fatalf("/api/audit/sessions after four calls: %+v", ss)
	}
	if ss, err := cli.ListSessions(ctx, "", 0); err != nil || len(ss) != 1 || ss[0].TotalActions != 4 {
		t.Fatalf("audit.db (webcodex audit sessions) after four calls: %+v %v", ss, err)
	}
	check(idle, "read_files", 4)

	// MCP (a go-sdk client, which returns a result as soon as its event
	// arrives on the stream): four calls, then an immediate read.
	client := mcp.NewClient(&mcp.Implementation{Name: "webcodex-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: s.base + "/mcp",
		HTTPClient: &http.Client{Transport: headerTransport{id: "mcp-four",
			base: bearerTransport{token: s.token, base: http.DefaultTransport}}},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for i, args := range []map[string]any{rawReadArgs(), big, rawReadArgs(), big} {
		if r, _ := callMCP(t, cs, "read_files", args, nil); !r.Success {
			t.Fatalf("MCP call %d: %+v", i, r.Error)
		}
	}
	check("mcp-four", "read_files", 4)
}
