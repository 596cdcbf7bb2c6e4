package app_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditdb"
	"github.com/webcodex/webcodex/internal/auth"
)

// auditDo sends a request with extra headers and returns the status, the
// response headers and the body.
func auditDo(t *testing.T, s *server, token, path string, body any, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	raw, _ := json.Marshal(body)
	return plainDo(t, "POST", s.base+path, token, raw, hdr)
}

type auditSessionResp struct {
	Session audit.Session     `json:"session"`
	Events  []audit.EventView `json:"events"`
}

func auditSession(t *testing.T, s *server, id string) (auditSessionResp, []byte) {
	t.Helper()
	code, _, data := auditDo(t, s, s.token, "/api/audit/session", map[string]any{"session_id": id}, nil)
	if code != 200 {
		t.Fatalf("audit session %q: HTTP %d %s", id, code, data)
	}
	var out auditSessionResp
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out, data
}

func auditSessions(t *testing.T, s *server) []audit.Session {
	t.Helper()
	code, _, data := auditDo(t, s, s.token, "/api/audit/sessions", map[string]any{}, nil)
	if code != 200 {
		t.Fatalf("audit sessions: HTTP %d %s", code, data)
	}
	var out struct{ Sessions []audit.Session }
	json.Unmarshal(data, &out)
	return out.Sessions
}

func eventsFor(evs []audit.EventView, action string) []audit.EventView {
	var out []audit.EventView
	for _, e := range evs {
		if e.ActionName == action {
			out = append(out, e)
		}
	}
	return out
}

func TestAuditTrail(t *testing.T) {
	data := t.TempDir()
	s := startApp(t, data, "p="+t.TempDir())
	stopped := false
	defer func() {
		if !stopped {
			s.stop(t)
		}
	}()
	ctx := context.Background()
	reader, _, err := s.a.Auth.CreateToken(ctx, "reader", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "hunter2-audit-planted-secret"

	// MCP first: without an explicit id every POST of the client (initialize,
	// notifications, tools/call) lands in one idle-reuse session.
	cs := connectMCP(t, s, "", nil)
	w, _ := callMCP(t, cs, "work_on_project", map[string]any{"project": "agent:local:p",
		"instruction": "Fix it; password=" + secret + " token " + reader}, nil)
	if !w.Success {
		t.Fatalf("work_on_project over MCP: %+v", w.Error)
	}
	var wfID string
	json.Unmarshal(w.Output["session_id"], &wfID)
	sessions := auditSessions(t, s)
	if len(sessions) != 1 {
		t.Fatalf("after the MCP calls: %d audit sessions, want 1 (idle reuse)", len(sessions))
	}
	idle := sessions[0].SessionID
	if strings.HasPrefix(idle, "wc_sess_") {
		t.Fatalf("audit session id %q looks like a workflow session", idle)
	}
	got, raw := auditSession(t, s, idle)
	mcpCalls := eventsFor(got.Events, "work_on_project")
	if len(mcpCalls) != 1 {
		t.Fatalf("MCP tools/call rows: %d, want 1: %s", len(mcpCalls), raw)
	}
	if e := mcpCalls[0]; e.Endpoint != "/mcp" || e.Operation != "mcp" || e.Status != audit.EventSuccess ||
		e.HTTPStatus != 200 || e.Project != "agent:local:p" || e.Summary["transport"] != "mcp" || e.Summary["tool"] != "work_on_project" {
		t.Fatalf("MCP row: %+v", e)
	}
	if len(got.Events) < 2 || got.Session.TotalActions != int64(len(got.Events)) {
		t.Fatalf("idle reuse: %d events, total_actions %d", len(got.Events), got.Session.TotalActions)
	}
	for _, bad := range []string{"principal", "owner", "oauth_client"} {
		if bytes.Contains(raw, []byte(bad)) {
			t.Fatalf("event view carries %q: %s", bad, raw)
		}
	}

	// A REST call without an id reuses the same session and echoes it.
	code, hdr, body := auditDo(t, s, s.token, "/api/tools/call", map[string]any{"tool": "read_files",
		"arguments": map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": "missing.go"}}}}, nil)
	if code != 200 || hdr.Get("x-action-session-id") != idle {
		t.Fatalf("REST call: HTTP %d, session header %q (want %q): %s", code, hdr.Get("x-action-session-id"), idle, body)
	}
	got, _ = auditSession(t, s, idle)
	rest := eventsFor(got.Events, "read_files")
	if len(rest) != 1 {
		t.Fatalf("REST rows: %d, want 1", len(rest))
	}
	if e := rest[0]; e.Endpoint != "/api/tools/call" || e.Operation != "tools_call" || e.Status != audit.EventFailed ||
		e.HTTPStatus != 200 || e.Summary["transport"] != "rest" || e.RequestBytes == 0 || e.ResponseBytes == 0 {
		t.Fatalf("REST row (a failed tool result): %+v", e)
	}

	// Explicit ids select or create other sessions: header, second header,
	// query; each call writes exactly one row.
	for _, c := range []struct {
		id, path string
		hdr      map[string]string
	}{
		{"explicit-a", "/api/tools/call", map[string]string{"x-action-session-id": "explicit-a"}},
		{"explicit-b", "/api/tools/call", map[string]string{"x-webcodex-session-id": "explicit-b"}},
		{"explicit-c", "/api/tools/call?action_session_id=explicit-c", nil},
	} {
		code, hdr, body := auditDo(t, s, s.token, c.path, map[string]any{"tool": "work_on_project",
			"arguments": map[string]any{"project": "agent:local:p", "session_id": wfID, "instruction": "password=" + secret}}, c.hdr)
		if code != 200 || hdr.Get("x-action-session-id") != c.id {
			t.Fatalf("%s: HTTP %d, header %q: %s", c.id, code, hdr.Get("x-action-session-id"), body)
		}
		got, _ := auditSession(t, s, c.id)
		if len(got.Events) != 1 || got.Events[0].ActionName != "work_on_project" || got.Events[0].Status != audit.EventSuccess {
			t.Fatalf("%s: events %+v", c.id, got.Events)
		}
	}
	// GPT Actions route: the tool name comes from the path.
	code, _, body = auditDo(t, s, s.token, "/api/actions/list_sessions", map[string]any{}, map[string]string{"x-action-session-id": "explicit-a"})
	if code != 200 {
		t.Fatalf("action: HTTP %d %s", code, body)
	}
	got, _ = auditSession(t, s, "explicit-a")
	if len(got.Events) != 2 || got.Events[1].ActionName != "list_sessions" || got.Events[1].Endpoint != "/api/actions/list_sessions" ||
		got.Events[1].Operation != "action" || got.Events[1].Summary["tool"] != "list_sessions" {
		t.Fatalf("action row: %+v", got.Events)
	}

	// An invalid explicit id is rejected and records nothing.
	before := len(auditSessions(t, s))
	code, _, body = auditDo(t, s, s.token, "/api/tools/list", map[string]any{}, map[string]string{"x-action-session-id": strings.Repeat("x", 121)})
	if code != 400 || !strings.Contains(string(body), `"invalid_arguments"`) {
		t.Fatalf("invalid id: HTTP %d %s", code, body)
	}
	if n := len(auditSessions(t, s)); n != before {
		t.Fatalf("invalid id created a session: %d -> %d", before, n)
	}

	// Separation: an audit id is not a workflow session id ...
	// (Its own audit session, so that idle reuse, which follows the most
	// recent activity, leaves the explicit sessions' counts alone.)
	_, _, sepBody := auditDo(t, s, s.token, "/api/tools/call", map[string]any{"tool": "work_on_project",
		"arguments": map[string]any{"project": "agent:local:p", "session_id": idle, "instruction": "x"}},
		map[string]string{"x-action-session-id": "separation"})
	var r result
	json.Unmarshal(sepBody, &r)
	if r.Success || r.Error == nil || (r.Error.Kind != "unknown_session_id" && r.Error.Kind != "invalid_session_id") {
		t.Fatalf("audit id as a workflow session: %s", sepBody)
	}
	// ... and a workflow id in the audit header is refused: it names no
	// audit session and changes no workflow state.
	wfBefore, _ := s.a.Sessions.Store().Status(ctx)
	ledgerBefore := exportLedger(t, s.a, wfID)
	auditBefore := len(auditSessions(t, s))
	code, hdr, body = auditDo(t, s, s.token, "/api/tools/list", map[string]any{}, map[string]string{"x-action-session-id": wfID})
	if code != 400 || hdr.Get("x-action-session-id") != "" || !strings.Contains(string(body), `"invalid_arguments"`) {
		t.Fatalf("wc_sess_ header: HTTP %d %s", code, body)
	}
	wfAfter, _ := s.a.Sessions.Store().Status(ctx)
	if wfBefore != wfAfter || !bytes.Equal(ledgerBefore, exportLedger(t, s.a, wfID)) {
		t.Fatalf("workflow changed by an audit header: %+v -> %+v", wfBefore, wfAfter)
	}
	if n := len(auditSessions(t, s)); n != auditBefore {
		t.Fatalf("a wc_sess_ audit header created an audit session: %d -> %d", auditBefore, n)
	}

	// Operator API: scope, limits, not found, stats.
	for _, p := range []string{"/api/audit/sessions", "/api/audit/session", "/api/audit/stats"} {
		code, _, body := auditDo(t, s, reader, p, map[string]any{"session_id": idle}, nil)
		if code != 403 || !strings.Contains(string(body), "insufficient_scope") {
			t.Fatalf("%s as a reader: HTTP %d %s", p, code, body)
		}
	}
	if code, _, body := auditDo(t, s, s.token, "/api/audit/sessions", map[string]any{"limit": -1}, nil); code != 400 || !strings.Contains(string(body), "invalid_arguments") {
		t.Fatalf("negative limit: HTTP %d %s", code, body)
	}
	if code, _, body := auditDo(t, s, s.token, "/api/audit/sessions", map[string]any{"limit": 1000, "status": "open"}, nil); code != 200 {
		t.Fatalf("limit above max: HTTP %d %s", code, body)
	}
	if code, _, body := auditDo(t, s, s.token, "/api/audit/session", map[string]any{"session_id": "no-such"}, nil); code != 404 || !strings.Contains(string(body), "not_found") {
		t.Fatalf("unknown session: HTTP %d %s", code, body)
	}
	code, _, body = auditDo(t, s, s.token, "/api/audit/stats", map[string]any{}, nil)
	var st audit.Stats
	json.Unmarshal(body, &st)
	if code != 200 || st.ByEndpoint["/mcp"] == 0 || st.ByEndpoint["/api/tools/call"] != 5 || st.ByStatus["failed"] == 0 ||
		st.Attribution.AttributedCount != st.EventsScanned || st.EventsScanned == 0 {
		t.Fatalf("stats: HTTP %d %s", code, body)
	}
	code, _, body = auditDo(t, s, s.token, "/api/audit/stats", map[string]any{"session_id": "explicit-a"}, nil)
	json.Unmarshal(body, &st)
	if code != 200 || st.EventsScanned != 2 || st.SessionsScanned != 1 {
		t.Fatalf("stats of one session: HTTP %d %s", code, body)
	}
	if code, _, body := auditDo(t, s, s.token, "/api/audit/stats", map[string]any{"limit": -5}, nil); code != 400 {
		t.Fatalf("stats negative limit: HTTP %d %s", code, body)
	}

	// Never published; failures counter exposed.
	code, oa := s.do(t, "", "GET", "/openapi.json", nil)
	if code != 200 || bytes.Contains(oa, []byte("/api/audit")) {
		t.Fatalf("openapi: HTTP %d, mentions /api/audit: %v", code, bytes.Contains(oa, []byte("/api/audit")))
	}
	code, stBody := s.do(t, s.token, "GET", "/api/status", nil)
	if code != 200 || !strings.Contains(string(stBody), `"audit_write_failures":0`) {
		t.Fatalf("status: HTTP %d %s", code, stBody)
	}

	// Nothing planted in the arguments reaches audit.db.
	s.stop(t)
	stopped = true
	n := 0
	matches, _ := filepath.Glob(filepath.Join(data, app.AuditDB+"*"))
	for _, p := range matches {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		n++
		for _, sec := range []string{secret, reader, "wc_pat_", "Fix it"} {
			if bytes.Contains(b, []byte(sec)) {
				t.Errorf("%s contains %q", filepath.Base(p), sec)
			}
		}
	}
	if n == 0 {
		t.Fatal("no audit.db written")
	}
}

// TestAuditUnwritableServesRequests: with audit.db refusing writes, REST
// and MCP calls are answered exactly as before and every lost row is
// counted in /api/status.
func TestAuditUnwritableServesRequests(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	if r := s.call(t, "read_files", rawReadArgs(), ""); !r.Success {
		t.Fatalf("read_files: %+v", r.Error)
	}
	// The answered call's row is committed.
	if ss := auditSessions(t, s); len(ss) != 1 || ss[0].TotalActions != 1 {
		t.Fatalf("the first audit row was not written before its response: %+v", ss)
	}
	err := s.a.Stores.Audit.(*auditdb.Store).DB().Writer.Do(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "PRAGMA query_only = 1")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Idle reuse (no write needed), then an explicit id whose session
	// cannot be created: both answered.
	for _, hdr := range []map[string]string{nil, {"x-action-session-id": "cannot-create"}} {
		code, _, body := auditDo(t, s, s.token, "/api/tools/call", map[string]any{"tool": "read_files", "arguments": rawReadArgs()}, hdr)
		if code != 200 || !bytes.Contains(body, []byte(`"success":true`)) || !bytes.Contains(body, []byte("hello")) {
			t.Fatalf("REST call with audit.db read-only (%v): HTTP %d %s", hdr, code, body)
		}
	}
	if res := rawCall(t, s, s.token, "read_files", rawReadArgs()); !res.StructuredContent.Success {
		t.Fatalf("MCP call with audit.db read-only: %+v", res.StructuredContent)
	}
	var st struct {
		AuditWriteFailures int64 `json:"audit_write_failures"`
	}
	_, stBody := s.do(t, s.token, "GET", "/api/status", nil)
	if err := json.Unmarshal(stBody, &st); err != nil {
		t.Fatal(err)
	}
	// The idle-reuse REST row and the MCP row lost, and the explicit
	// session not created (that call is served unaudited).
	if st.AuditWriteFailures != 3 {
		t.Fatalf("audit_write_failures = %d, want 3", st.AuditWriteFailures)
	}
}

// TestAuditStoresNoSecrets plants a token, a password and a private key
// in arguments and in tool outputs (file contents, command output), over
// REST and MCP, and scans every byte of audit.db afterwards.
func TestAuditStoresNoSecrets(t *testing.T) {
	data, proj := t.TempDir(), rawProjectDir(t)
	const (
		token    = "wc_pat_PlantedAuditToken0123456789"
		password = "planted-audit-password-4471"
		keyBody  = "MIIEplantedAuditPrivateKeyBody77"
	)
	pem := "-----BEGIN RSA PRIVATE KEY-----\n" + keyBody + "\n-----END RSA PRIVATE KEY-----\n"
	if err := os.WriteFile(filepath.Join(proj, "secrets.txt"), []byte(pem+"password="+password+"\n"+token+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startApp(t, data, "p="+proj)
	read := map[string]any{"project": rawProjectID, "files": []any{map[string]any{"path": "secrets.txt"}}}
	if r := s.call(t, "read_files", read, ""); !r.Success {
		t.Fatalf("read_files: %+v", r.Error)
	}
	rawCall(t, s, s.token, "read_files", read)
	s.call(t, "run_process", map[string]any{"project": rawProjectID, "argv": []string{"echo", token, "password=" + password}}, "")
	s.call(t, "write_project_file", map[string]any{"project": rawProjectID, "path": "out.txt", "content": pem}, "")
	auditDo(t, s, s.token, "/api/actions/run_process?action_session_id=secrets", map[string]any{"project": rawProjectID,
		"argv": []string{"sh", "-c", "echo " + password}}, map[string]string{"Authorization": "Bearer " + token})
	if ss := auditSessions(t, s); len(ss) == 0 || ss[0].TotalActions < 4 {
		t.Fatalf("the calls were not audited: %+v", ss)
	}
	s.stop(t)
	files, _ := filepath.Glob(filepath.Join(data, app.AuditDB+"*"))
	if len(files) == 0 {
		t.Fatal("no audit.db")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, sec := range []string{token, password, keyBody, "PRIVATE KEY", s.token} {
			if bytes.Contains(b, []byte(sec)) {
				t.Errorf("%s contains %q", filepath.Base(f), sec)
			}
		}
	}
}

// TestAuditAffinityInput: malformed and racing affinity requests.
func TestAuditAffinityInput(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	// Sixteen first requests at once share one new idle session.
	var wg sync.WaitGroup
	ids := make([]string, 16)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, hdr, _ := auditDo(t, s, s.token, "/api/tools/list", map[string]any{}, nil)
			ids[i] = hdr.Get("x-action-session-id")
		}()
	}
	wg.Wait()
	if ss := auditSessions(t, s); len(ss) != 1 {
		t.Fatalf("%d audit sessions after 16 racing first requests, want 1", len(ss))
	}
	for _, id := range ids {
		if id != ids[0] || id == "" {
			t.Fatalf("racing requests got different sessions: %v", ids)
		}
	}
	// Malformed ids are rejected before the handler and create nothing.
	for _, path := range []string{"/api/tools/list?action_session_id=bad%01id", "/api/tools/list?action_session_id=" + strings.Repeat("é", 121)} {
		code, _, body := auditDo(t, s, s.token, path, map[string]any{}, nil)
		if code != 400 || !strings.Contains(string(body), "invalid_arguments") {
			t.Fatalf("%s: HTTP %d %s", path, code, body)
		}
	}
	// Surrounding spaces are trimmed; 120 characters is allowed.
	long := strings.Repeat("é", 120)
	for _, raw := range []string{"  spaced  ", long} {
		_, hdr, _ := auditDo(t, s, s.token, "/api/tools/list?action_session_id="+url.QueryEscape(raw), map[string]any{}, nil)
		if want := strings.TrimSpace(raw); hdr.Get("x-action-session-id") != want {
			t.Fatalf("id %q: header %q", raw, hdr.Get("x-action-session-id"))
		}
	}
	if ss := auditSessions(t, s); len(ss) != 3 {
		t.Fatalf("%d audit sessions, want 3 (idle, spaced, long)", len(ss))
	}
}

// TestAuditAffinityPerPrincipal reproduces issue 24 over HTTP: two owners'
// requests without an explicit audit id shared one audit session. Each
// owner now gets its own idle session, and an owner naming the other's
// explicit id gets a session of its own for it (the response header says
// which), while the named session keeps only its owner's events.
func TestAuditAffinityPerPrincipal(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	bob, _, err := s.a.Auth.CreateToken(context.Background(), "bob", "bob", []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatal(err)
	}
	session := func(token string, hdr map[string]string) string {
		t.Helper()
		code, h, body := auditDo(t, s, token, "/api/tools/list", map[string]any{}, hdr)
		if code != 200 {
			t.Fatalf("tools/list: HTTP %d %s", code, body)
		}
		return h.Get("x-action-session-id")
	}
	mine, theirs := session(s.token, nil), session(bob, nil)
	if mine == "" || theirs == "" || mine == theirs {
		t.Fatalf("idle reuse: the admin's session %q, bob's %q", mine, theirs)
	}
	if again := session(s.token, nil); again != mine {
		t.Fatalf("the admin's idle session moved: %q, then %q", mine, again)
	}
	if again := session(bob, nil); again != theirs {
		t.Fatalf("bob's idle session moved: %q, then %q", theirs, again)
	}

	named := map[string]string{"x-action-session-id": "shared-task"}
	if id := session(s.token, named); id != "shared-task" {
		t.Fatalf("the admin's explicit id: %q", id)
	}
	bobs := session(bob, named)
	if bobs == "shared-task" || bobs == theirs || len(bobs) != 36 {
		t.Fatalf("bob naming the admin's session got %q, want a fresh session of his own", bobs)
	}
	if again := session(bob, named); again != bobs {
		t.Fatalf("bob's session for the id moved: %q, then %q", bobs, again)
	}
	if got, _ := auditSession(t, s, "shared-task"); got.Session.TotalActions != 1 || len(got.Events) != 1 {
		t.Fatalf("the admin's named session holds %d actions, want its owner's 1", got.Session.TotalActions)
	}
	if got, _ := auditSession(t, s, bobs); got.Session.TotalActions != 2 {
		t.Fatalf("bob's session holds %d actions, want 2", got.Session.TotalActions)
	}
}
