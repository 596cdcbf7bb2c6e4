package app_test

import (
	"encoding/hex"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/requestid"
)

// TestTraceHeadersAndTraceparent exports with the headers of
// OTEL_EXPORTER_OTLP_HEADERS and [telemetry] headers (the receiver sees
// them and only them; no log line shows a value) and checks inbound
// traceparent: a
// well-formed one (even unsampled) is the parent of the request's span,
// a malformed one is ignored and the span is a new root.
func TestTraceHeadersAndTraceparent(t *testing.T) {
	const (
		apiKey      = "hc-SECRET-key-5e1f"
		fileKey     = "dd-SECRET-key-77aa"
		inTrace     = "4bf92f3577b34da6a3ce929d0e0e4736"
		inParent    = "00f067aa0ba902b7"
		traceparent = "00-" + inTrace + "-" + inParent + "-00"
	)
	// The exporter would read the process's variables itself; the loaded
	// configuration replaces them (one source), so this one is not sent.
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-stray=from-the-process")
	rc := newOTLPReceiver(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, app.ConfigFile), []byte("[telemetry.headers]\ndd-api-key = \""+fileKey+"\"\n"), 0o600)
	cfg, err := app.LoadConfig(dir, env(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-honeycomb-team=" + strings.Replace(apiKey, "-", "%2D", 1)}))
	if err != nil {
		t.Fatal(err)
	}
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("a\n"), 0o644)
	var logs syncBuffer
	log := slog.New(requestid.NewHandler(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	s := startAppLogging(t, dir, log, func(c *app.Config) {
		c.Telemetry.Endpoint = rc.srv.URL
		c.Telemetry.Headers = cfg.Telemetry.Headers
	}, "p="+proj)

	call := func(id, tp string) {
		body := strings.NewReader(`{"tool":"read_files","arguments":{"project":"agent:local:p","files":[{"path":"a.txt"}]}}`)
		req, _ := http.NewRequest("POST", s.base+"/api/tools/call", body)
		req.Header.Set("Authorization", "Bearer "+s.token)
		req.Header.Set(requestid.Header, id)
		req.Header.Set("traceparent", tp)
		req.Header.Set("tracestate", "vendor=caller-text")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("HTTP %d", resp.StatusCode)
		}
	}
	call("with-parent", traceparent)
	call("malformed", "00-"+inTrace+"-"+inParent+"-zz")
	s.stop(t)

	spans := rc.spans()
	byID := map[string]*span{}
	for _, sp := range spansNamed(spans, "POST /api/tools/call") {
		id, _ := attr(sp, "webcodex.request.id")
		byID[id] = sp
	}
	in, bad := byID["with-parent"], byID["malformed"]
	if in == nil || bad == nil {
		t.Fatalf("request spans: %v", byID)
	}
	if hex.EncodeToString(in.traceID) != inTrace || hex.EncodeToString(in.parent) != inParent {
		t.Fatalf("span of a traceparent request: trace %x parent %x; want %s %s", in.traceID, in.parent, inTrace, inParent)
	}
	if childOf(spans, in, "execute_tool read_files") == nil {
		t.Fatal("the tool span is not in the continued trace")
	}
	if len(bad.parent) != 0 || hex.EncodeToString(bad.traceID) == inTrace {
		t.Fatalf("span of a malformed traceparent: trace %x parent %x; want a new root", bad.traceID, bad.parent)
	}

	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.headers) == 0 {
		t.Fatal("nothing exported")
	}
	for _, h := range rc.headers {
		if h.Get("X-Honeycomb-Team") != apiKey || h.Get("Dd-Api-Key") != fileKey || h.Get("X-Stray") != "" {
			t.Fatalf("export request headers: team %q, dd %q, stray %q", h.Get("X-Honeycomb-Team"), h.Get("Dd-Api-Key"), h.Get("X-Stray"))
		}
	}
	for _, raw := range rc.raw {
		if strings.Contains(string(raw), "caller-text") {
			t.Fatal("an inbound tracestate was exported")
		}
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if out := logs.b.String(); strings.Contains(out, "SECRET") {
		t.Fatal("a header value reached the log")
	}
}
