package mcpserver_test

import (
	"context"
	"testing"

	"github.com/webcodex/webcodex/internal/benchpair"
)

// BenchmarkToolsCallRecordedVsBare alternates, call by call, a recorded
// read_files through the complete WebCodex handler (its ledger events and
// evidence written behind the response) and the bare go-sdk server's read
// of the same file. The ratio is webcodex_recorded over bare_sdk in time
// per call; the goal (throughput at least 0.8× the bare server's) is a
// ratio of at most 1.25.
func BenchmarkToolsCallRecordedVsBare(b *testing.B) {
	rec, bare := setupApp(true)(b, 1), setupBare(b, 1)
	callOnce(b, rec.sessions[0], rec.call(0))
	callOnce(b, bare.sessions[0], bare.call(0))
	ctx := context.Background()
	one := func(env *benchEnv) func() {
		cs, call := env.sessions[0], env.call(0)
		return func() {
			res, err := cs.CallTool(ctx, call)
			if err != nil {
				b.Fatal(err)
			}
			if res.IsError {
				b.Fatalf("tool error: %s", textOf(res))
			}
		}
	}
	benchpair.Run(b, "bare_sdk", one(bare), "webcodex_recorded", one(rec))
}
