package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/benchpair"
)

// BenchmarkTracedVsUntraced alternates, call by call, one recorded REST
// tools/call (read_files in a Workflow Session) on a server exporting its
// spans over OTLP/HTTP to an in-process receiver, and the same call on a
// server with tracing off. The ratio is traced over untraced; the goal is
// at most 1.05.
func BenchmarkTracedVsUntraced(b *testing.B) {
	rc := newOTLPReceiver(b)
	side := func(tune func(*app.Config)) func() {
		proj := b.TempDir()
		os.WriteFile(filepath.Join(proj, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
		s := startAppWith(b, b.TempDir(), tune, "bench="+proj)
		b.Cleanup(func() { s.stop(b) })
		post := func(body []byte) map[string]any {
			req, _ := http.NewRequest("POST", s.base+"/api/tools/call", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+s.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			var out map[string]any
			if json.Unmarshal(data, &out) != nil || out["success"] != true {
				b.Fatalf("HTTP %d %s", resp.StatusCode, data)
			}
			return out
		}
		start, _ := json.Marshal(map[string]any{"tool": "work_on_project", "arguments": map[string]any{"project": "agent:local:bench", "instruction": "bench"}})
		id := post(start)["output"].(map[string]any)["session_id"].(string)
		call, _ := json.Marshal(map[string]any{"tool": "read_files", "recording_session_id": id,
			"arguments": map[string]any{"project": "agent:local:bench", "files": []any{map[string]any{"path": "main.go"}}}})
		return func() { post(call) }
	}
	untraced := side(nil)
	traced := side(func(c *app.Config) { c.Telemetry.Endpoint = rc.srv.URL })
	benchpair.Run(b, "untraced", untraced, "traced", traced)
}
