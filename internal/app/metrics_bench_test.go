package app_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/kernel"
)

// BenchmarkRecordedCallMetrics prices /metrics (decision 0085): a
// recorded read_files over the real kernel (ambient projections, the
// session ledger, the evidence outbox) on a server with [metrics] enabled
// = false and one with it true, alternated call by call (the ratio is on
// over off; goal ≤ 1.02). Each server has its own data directory.
func BenchmarkRecordedCallMetrics(b *testing.B) {
	call := func(on bool) func() {
		a := benchAppWith(b, func(c *app.Config) { c.Metrics.Enabled = on })
		id := benchCall(b, a, "work_on_project", map[string]any{"project": "agent:local:bench", "instruction": "bench"}, "")["session_id"].(string)
		benchCall(b, a, "write_project_file", map[string]any{"project": "agent:local:bench", "path": "x.go", "content": "package x\n"}, id)
		raw, _ := json.Marshal(map[string]any{"project": "agent:local:bench", "files": []any{map[string]any{"path": "x.go"}}})
		return func() {
			res := a.Kernel.Dispatch(context.Background(), kernel.Call{Tool: "read_files", Arguments: raw, RecordingSessionID: id,
				Principal: auth.LocalUser(), Source: kernel.SourceMCP})
			if !res.Success {
				b.Fatalf("read_files: %+v", res.Error)
			}
		}
	}
	off, on := call(false), call(true)
	benchpair.Run(b, "metrics_off", off, "metrics_on", on)
}
