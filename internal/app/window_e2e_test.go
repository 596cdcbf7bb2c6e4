package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/gateway"
	"github.com/webcodex/webcodex/internal/window"
	"github.com/webcodex/webcodex/internal/window/windowdb"
)

// startLogged is startAppWith with the full tool profile and the server's
// log captured (debug level) in the returned buffer.
func startLogged(t *testing.T, dataDir string, projects ...string) (*server, *bytes.Buffer) {
	t.Helper()
	cfg, err := app.LoadConfig(dataDir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = "127.0.0.1:0"
	cfg.ShutdownTimeout = app.Duration(5 * time.Second)
	cfg.ToolProfile = gateway.Full
	var logBuf bytes.Buffer
	ctx := context.Background()
	a, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.RegisterProjects(ctx, projects); err != nil {
		t.Fatal(err)
	}
	addr, err := a.Listen()
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &server{a: a, base: "http://" + addr.String(), token: a.AdminToken, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- a.Serve(sctx) }()
	return s, &logBuf
}

// connectAs is connectMCP with another bearer token.
func connectAs(t *testing.T, s *server, token string) *mcp.ClientSession {
	t.Helper()
	cp := *s
	cp.token = token
	return connectMCP(t, &cp, "", nil)
}

// windowCounts is how many activity rows and peer messages window.db holds.
func windowCounts(t *testing.T, s *server) (int64, int64) {
	t.Helper()
	a, m, err := s.a.Stores.Window.(*windowdb.Store).Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return a, m
}

func peerList(t *testing.T, cs *mcp.ClientSession, meta mcp.Meta) []string {
	t.Helper()
	r, _ := callMCP(t, cs, "list_peers", map[string]any{"project": "agent:local:p"}, meta)
	if !r.Success {
		t.Fatalf("list_peers: %+v", r.Error)
	}
	var ps []window.Peer
	decodeInto(t, r.Output["peers"], &ps)
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.PeerID)
	}
	return ids
}

func currentActivity(t *testing.T, cs *mcp.ClientSession, meta mcp.Meta) window.Current {
	t.Helper()
	r, raw := callMCP(t, cs, "current_window_activity", map[string]any{}, meta)
	if !r.Success {
		t.Fatalf("current_window_activity: %+v", r.Error)
	}
	var out struct{ Output window.Current }
	decodeInto(t, raw, &out)
	return out.Output
}

// TestWindowPeersThreeClients: two windows of one principal on one
// project discover each other and one posts to the other (stored, not yet
// delivered); a third principal sees nothing and cannot post; the raw host
// window values reach no database file and no log line.
func TestWindowPeersThreeClients(t *testing.T) {
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("x\n"), 0o644)
	data := t.TempDir()
	s, logBuf := startLogged(t, data, "p="+proj)
	ctx := context.Background()
	bobTok, _, err := s.a.Auth.CreateToken(ctx, "bob", "bob", []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatal(err)
	}
	const rawA, rawB, rawX = "conv-A-raw-7f3a91", "conv-B-raw-9c2d44", "conv-X-raw-1b4e08"
	metaA, metaB, metaX := mcp.Meta{"openai/session": rawA}, mcp.Meta{"openai/session": rawB}, mcp.Meta{"openai/session": rawX}
	a, b, x := connectMCP(t, s, "", nil), connectMCP(t, s, "", nil), connectAs(t, s, bobTok)
	read := map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": "a.txt"}}}

	// Discovery and status calls alone are not activity.
	if ids := peerList(t, a, metaA); len(ids) != 0 {
		t.Fatalf("peers before any activity: %v", ids)
	}
	if n, _ := windowCounts(t, s); n != 0 {
		t.Fatalf("a discovery call stored %d activity rows", n)
	}
	for _, c := range []struct {
		cs   *mcp.ClientSession
		meta mcp.Meta
	}{{a, metaA}, {b, metaB}, {x, metaX}} {
		if r, _ := callMCP(t, c.cs, "read_files", read, c.meta); !r.Success {
			t.Fatalf("read_files: %+v", r.Error)
		}
	}
	curA, curB := currentActivity(t, a, metaA), currentActivity(t, b, metaB)
	if curA.PeerID == curB.PeerID || len(curA.Activity) != 1 || curA.Activity[0].Project != "agent:local:p" || curA.Activity[0].Calls != 1 {
		t.Fatalf("current activity A %+v B %+v", curA, curB)
	}
	if ids := peerList(t, a, metaA); len(ids) != 1 || ids[0] != curB.PeerID {
		t.Fatalf("A's peers %v, want [%s]", ids, curB.PeerID)
	}
	if ids := peerList(t, b, metaB); len(ids) != 1 || ids[0] != curA.PeerID {
		t.Fatalf("B's peers %v, want [%s]", ids, curA.PeerID)
	}
	if ids := peerList(t, x, metaX); len(ids) != 0 {
		t.Fatalf("another principal sees %v", ids)
	}
	// Through the gateway too.
	r, _ := callMCP(t, a, "call_tool", map[string]any{"tool": "list_peers", "arguments": map[string]any{"project": "agent:local:p"}}, metaA)
	if !r.Success || !strings.Contains(string(r.Output["peers"]), curB.PeerID) {
		t.Fatalf("call_tool list_peers: %+v %s", r.Error, r.Output["peers"])
	}

	post := map[string]any{"peer_id": curB.PeerID, "message": "rebased main; pull before editing", "requires_ack": true, "priority": "high"}
	r, _ = callMCP(t, a, "post_peer_message", post, metaA)
	if !r.Success || str(t, r.Output["to_peer_id"]) != curB.PeerID || str(t, r.Output["from_peer_id"]) != curA.PeerID {
		t.Fatalf("post_peer_message: %+v %v", r.Error, r.Output)
	}
	if got := currentActivity(t, b, metaB).WaitingMessages; got != 1 {
		t.Fatalf("B has %d waiting, want 1", got)
	}
	_, msgs := windowCounts(t, s)

	// Bad input: each refused with its kind, nothing stored.
	bad := []struct {
		name string
		cs   *mcp.ClientSession
		args map[string]any
		meta mcp.Meta
		kind string
	}{
		{"another principal's peer", x, map[string]any{"peer_id": curB.PeerID, "message": "hi"}, metaX, "unknown_recipient"},
		{"unknown peer", a, map[string]any{"peer_id": "wc_peer_0123456789abcdef0123456789abcdef", "message": "hi"}, metaA, "unknown_recipient"},
		{"over its bound", a, map[string]any{"peer_id": curB.PeerID, "message": strings.Repeat("x", window.MaxMessageChars+1)}, metaA, "invalid_arguments"},
		{"no window", a, map[string]any{"peer_id": curB.PeerID, "message": "hi"}, nil, "client_window_unavailable"},
		{"malformed window", a, map[string]any{"peer_id": curB.PeerID, "message": "hi"}, mcp.Meta{"openai/session": "has space"}, "client_window_unavailable"},
	}
	for _, c := range bad {
		r, _ := callMCP(t, c.cs, "post_peer_message", c.args, c.meta)
		if r.Success || r.Error == nil || r.Error.Kind != c.kind {
			t.Errorf("%s: %+v, want %s", c.name, r.Error, c.kind)
		}
	}
	if _, m := windowCounts(t, s); m != msgs {
		t.Fatalf("refused posts changed the stored messages: %d, was %d", m, msgs)
	}
	if got := currentActivity(t, b, metaB).WaitingMessages; got != 1 {
		t.Fatalf("B has %d waiting after refused posts, want 1", got)
	}
	if got := currentActivity(t, x, metaX).WaitingMessages; got != 0 {
		t.Fatalf("bob has %d waiting", got)
	}

	a.Close()
	b.Close()
	x.Close()
	s.stop(t)
	for _, raw := range []string{rawA, rawB, rawX} {
		filepathWalk(t, data, func(path string, body []byte) {
			if bytes.Contains(body, []byte(raw)) {
				t.Errorf("%s holds the raw window value %q", filepath.Base(path), raw)
			}
		})
		if strings.Contains(logBuf.String(), raw) {
			t.Errorf("the log holds the raw window value %q", raw)
		}
	}
	if logBuf.Len() == 0 {
		t.Fatal("no log was captured; the log check proves nothing")
	}
}

// restCall is a REST tool call with the window header set to hdr (absent
// when nil).
func restCall(t *testing.T, s *server, tool string, args any, hdr *string) result {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args})
	req, _ := http.NewRequest("POST", s.base+"/api/tools/call", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.token)
	if hdr != nil {
		req.Header[http.CanonicalHeaderKey(window.HeaderWindow)] = []string{*hdr}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var r result
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: HTTP %d %s", tool, resp.StatusCode, data)
	}
	return r
}

// TestWindowRESTHeader: the REST window header is hashed like the MCP
// one; an empty, oversized, control-character or non-UTF-8 value is
// ignored as absent (the call itself still runs) and never stored raw.
func TestWindowRESTHeader(t *testing.T) {
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("x\n"), 0o644)
	data := t.TempDir()
	s, logBuf := startLogged(t, data, "p="+proj)
	read := map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": "a.txt"}}}
	oversized := "big-" + strings.Repeat("q", window.MaxRawBytes)
	for _, v := range []string{"", oversized, "tab\there", "nonutf8-\xff\xfe"} {
		if r := restCall(t, s, "read_files", read, &v); !r.Success {
			t.Fatalf("read_files with header %q: %+v", v, r.Error)
		}
		if r := restCall(t, s, "current_window_activity", map[string]any{}, &v); r.Success || r.Error.Kind != "client_window_unavailable" {
			t.Fatalf("header %q was not ignored as absent: %+v", v, r)
		}
	}
	if n, m := windowCounts(t, s); n != 0 || m != 0 {
		t.Fatalf("bad window headers stored %d activity rows, %d messages", n, m)
	}
	good := "rest-host-window-55aa"
	must(t, restCall(t, s, "read_files", read, &good), "read_files")
	r := must(t, restCall(t, s, "current_window_activity", map[string]any{}, &good), "current_window_activity")
	var act []window.ProjectActivity
	decodeInto(t, r.Output["activity"], &act)
	if len(act) != 1 || act[0].Project != "agent:local:p" {
		t.Fatalf("REST window activity %+v", act)
	}
	// The same host value over MCP is the same window of the same
	// principal: hashed the same way.
	cs := connectMCP(t, s, "", nil)
	cur := currentActivity(t, cs, mcp.Meta{"openai/session": good})
	if cur.PeerID != str(t, r.Output["peer_id"]) {
		t.Fatalf("MCP peer id %s, REST %s", cur.PeerID, r.Output["peer_id"])
	}
	cs.Close()
	s.stop(t)
	for _, raw := range []string{good, oversized[:40], "tab\there", "nonutf8-"} {
		filepathWalk(t, data, func(path string, body []byte) {
			if bytes.Contains(body, []byte(raw)) {
				t.Errorf("%s holds the raw header value %q", filepath.Base(path), raw)
			}
		})
		if strings.Contains(logBuf.String(), raw) {
			t.Errorf("the log holds the raw header value %q", raw)
		}
	}
}

// doWindow is s.do (POST with the server's token) with the REST window
// header set to win when it is not "".
func (s *server) doWindow(t *testing.T, win, path string, body []byte) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.base+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.token)
	if win != "" {
		req.Header.Set(window.HeaderWindow, win)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// TestAuditWindowRelationsAndLoopGaps: MCP audit events keep the hashed
// window; a recorder and a work_on_project yield relations; the operator
// API and `webcodex audit tools` pair only adjacent meaningful calls of
// the same window and principal, and calls without window metadata have
// no loop timing.
func TestAuditWindowRelationsAndLoopGaps(t *testing.T) {
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("x\n"), 0o644)
	s, _ := startLogged(t, t.TempDir(), "p="+proj)
	defer s.stop(t)
	ctx := context.Background()
	cs := connectMCP(t, s, "", nil)
	metaA, metaB := mcp.Meta{"openai/session": "loop-window-A"}, mcp.Meta{"openai/session": "loop-window-B"}
	read := func(meta mcp.Meta, recorder string) {
		t.Helper()
		args := map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": "a.txt"}}}
		if recorder != "" {
			args["recording_session_id"] = recorder
		}
		if r, _ := callMCP(t, cs, "read_files", args, meta); !r.Success {
			t.Fatalf("read_files: %+v", r.Error)
		}
	}
	w, _ := callMCP(t, cs, "work_on_project", map[string]any{"project": "agent:local:p", "instruction": "go"}, metaA)
	sess := str(t, w.Output["session_id"])
	read(metaA, sess)
	callMCP(t, cs, "list_sessions", map[string]any{"project": "agent:local:p"}, metaA) // status: not meaningful
	read(metaA, "")
	read(metaB, "")
	read(metaB, "")
	read(nil, "")
	read(nil, "")
	cs.Close()

	p, err := s.a.Auth.Authenticate(ctx, s.token)
	if err != nil {
		t.Fatal(err)
	}
	rels, err := s.a.Audit.WindowRelations(ctx, window.PrincipalOf(p), window.Hash("loop-window-A", p))
	if err != nil {
		t.Fatal(err)
	}
	has := func(kind string) bool {
		for _, r := range rels {
			if r.Kind == kind && r.SessionID == sess {
				return true
			}
		}
		return false
	}
	if len(rels) != 2 || !has("recording") || !has("work_on_project") {
		t.Fatalf("window A relations %+v, want recording and work_on_project of %s", rels, sess)
	}
	if rels, _ := s.a.Audit.WindowRelations(ctx, window.PrincipalOf(p), window.Hash("loop-window-B", p)); len(rels) != 0 {
		t.Fatalf("window B has relations %+v", rels)
	}

	code, body := s.do(t, s.token, "POST", "/api/audit/tools", []byte(`{}`))
	if code != 200 {
		t.Fatalf("audit tools: HTTP %d %s", code, body)
	}
	var rep struct {
		LoopTiming map[string]int64 `json:"loop_timing"`
	}
	decodeInto(t, body, &rep)
	lt := rep.LoopTiming
	// A: work_on_project, read, read (the list_sessions between is not
	// meaningful) → 2 pairs; B: 1 pair; the two windowless reads: none.
	if lt["pairs"] != 3 || lt["calls_without_window"] != 2 || lt["calls_scanned"] != 7 || lt["overlapping_pairs"] != 0 {
		t.Fatalf("loop timing %v", lt)
	}
	if lt["p50_gap_ms"] > lt["p95_gap_ms"] || lt["p95_gap_ms"] > lt["max_gap_ms"] || lt["p50_gap_ms"] < 0 {
		t.Fatalf("loop gap percentiles out of order: %v", lt)
	}
}
