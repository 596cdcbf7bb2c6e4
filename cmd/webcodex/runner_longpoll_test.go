package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// overTransports runs an end-to-end runner test once per transport of the
// runner's link (`webcodex runner --transport`).
func overTransports(t *testing.T, test func(t *testing.T, transport string)) {
	for _, tr := range []string{"websocket", "longpoll"} {
		t.Run(tr, func(t *testing.T) { test(t, tr) })
	}
}

// noUpgradeProxy is an HTTP reverse proxy to target that does not carry
// WebSockets: it drops the Upgrade and Connection headers, as proxies that
// only speak plain HTTP do, so the server sees a plain GET and refuses it
// as an upgrade. refused counts the upgrades it dropped.
type noUpgradeProxy struct {
	srv     *httptest.Server
	refused atomic.Int64
}

func startNoUpgradeProxy(t *testing.T, target string) *noUpgradeProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &noUpgradeProxy{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			p.refused.Add(1)
			r.Header.Del("Upgrade")
			r.Header.Del("Connection")
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// TestRunnerFallsBackToLongPollBehindAProxyThatBreaksWebSockets: behind a
// proxy that refuses the WebSocket upgrade, `webcodex runner` (transport
// auto) falls back to long-poll and serves a read, a fenced edit and a
// process through it.
func TestRunnerFallsBackToLongPollBehindAProxyThatBreaksWebSockets(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server and runner processes")
	}
	f := newRunnerFixture(t)
	proxy := startNoUpgradeProxy(t, f.srv.base)
	r := startRunner(t, proxy.srv.URL, f.toml, f.token)
	if proxy.refused.Load() == 0 || !strings.Contains(r.output(), "falling back to long-poll") || !strings.Contains(r.output(), "transport=longpoll") {
		t.Fatalf("the runner did not try a WebSocket first and fall back (%d upgrades refused):\n%s", proxy.refused.Load(), r.output())
	}
	ctx := context.Background()
	var start struct {
		SessionID string `json:"session_id"`
	}
	call(t, f.srv.base, "work_on_project", map[string]any{"project": remoteProject, "instruction": "behind a proxy"}, &start)
	var rd struct {
		Files []struct {
			Content      string `json:"content"`
			ReadRevision string `json:"read_revision"`
		} `json:"files"`
	}
	call(t, f.srv.base, "read_files", map[string]any{"project": remoteProject, "files": []any{map[string]any{"path": "notes/todo.txt"}}}, &rd)
	if len(rd.Files) != 1 || !strings.Contains(rd.Files[0].Content, "needle here") {
		t.Fatalf("read_files over long-poll: %+v", rd)
	}
	ed, err := callTool(ctx, f.srv.base, "apply_text_edits", map[string]any{"project": remoteProject, "session_id": start.SessionID,
		"changes": []any{map[string]any{"path": "notes/todo.txt", "op": "replace", "expected_read_revision": rd.Files[0].ReadRevision,
			"edits": []any{map[string]any{"old_text": "needle here", "new_text": "needle behind a proxy"}}}}}, "")
	if err != nil || !ed.Success {
		t.Fatalf("apply_text_edits over long-poll: %v %+v", err, ed.Error)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "notes/todo.txt")); string(b) != "remote line one\nneedle behind a proxy\n" {
		t.Fatalf("the runner's file after the edit: %q", b)
	}
	run, err := callTool(ctx, f.srv.base, "run_shell", map[string]any{"project": remoteProject, "command": "cat notes/todo.txt; echo on-the-runner >&2"}, start.SessionID)
	if err != nil || !run.Success || !strings.Contains(string(run.Output), "needle behind a proxy") || !strings.Contains(string(run.Output), "on-the-runner") {
		t.Fatalf("run_shell over long-poll: %v %s %+v", err, run.Output, run.Error)
	}
}
