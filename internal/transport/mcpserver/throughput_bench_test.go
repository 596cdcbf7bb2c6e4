package mcpserver_test

import (
	"context"
	"testing"
)

// BenchmarkToolsCallThroughput measures the throughput the goal of
// BenchmarkToolsCallRecordedVsBare is stated in: each side is a server
// alone in its process, called in a closed loop, so ns/op is the mean
// time per call (1/throughput) and includes the process's garbage
// collection and the work written behind each response, which the
// per-call median of the alternated benchmark leaves out. In one process
// the sides would share one heap, and the larger one (WebCodex's) would
// make the bare server's collections rarer than they are when it runs
// alone.
//
// bare_sdk_audited is the bare server behind the audit middleware (see
// BenchmarkToolsCallRecordedVsBare): the floor the audit contract sets.
//
// Run one side per process, the sides alternated (scripts/bench.sh does):
//
//	go test -c -o mcp.test ./internal/transport/mcpserver
//	./mcp.test -test.run '^$' -test.bench 'ToolsCallThroughput/bare_sdk$'
//	./mcp.test -test.run '^$' -test.bench 'ToolsCallThroughput/webcodex_recorded$'
func BenchmarkToolsCallThroughput(b *testing.B) {
	for _, side := range []struct {
		name  string
		setup func(*testing.B, int) *benchEnv
	}{
		{"bare_sdk", setupBare},
		{"bare_sdk_audited", func(b *testing.B, _ int) *benchEnv { return setupBareAudited(b) }},
		{"webcodex_recorded", setupApp(true)},
	} {
		b.Run(side.name, func(b *testing.B) {
			env := side.setup(b, 1)
			cs, call := env.sessions[0], env.call(0)
			callOnce(b, cs, call)
			fillAudit(b, env)
			ctx := context.Background()
			for b.Loop() {
				res, err := cs.CallTool(ctx, call)
				if err != nil {
					b.Fatal(err)
				}
				if res.IsError {
					b.Fatalf("tool error: %s", textOf(res))
				}
			}
		})
	}
}
