package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkRequestSpans is one traced REST tools/call's span work: the
// HTTP request span and the execute_tool span under it, started and
// ended with the attributes the server records, into a batching
// processor whose exporter discards (the export itself is measured by
// internal/app's BenchmarkTracedVsUntraced).
func BenchmarkRequestSpans(b *testing.B) {
	tp := trace.NewTracerProvider(trace.WithBatcher(tracetest.NewNoopExporter(), trace.WithMaxQueueSize(MaxQueuedSpans)), trace.WithSampler(sampler(1)))
	b.Cleanup(func() { tp.Shutdown(context.Background()) })
	tr := &Tracing{provider: tp, tracer: tp.Tracer(instrumentationName)}
	ctx := context.Background()
	call := ToolCall{Tool: "read_files", Source: "rest", InvocationID: "inv_0123456789abcdef0123456789abcdef",
		Binding: "verified", VerifiedRecorder: "wc_sess_0123456789abcdef0123456789abcdef"}
	b.ReportAllocs()
	for b.Loop() {
		hctx, hs := tr.StartHTTP(ctx, HTTPRequest{Method: "POST", Route: "/api/tools/call", RequestID: "req_0123456789abcdef0123456789abcdef"})
		_, ts := tr.StartTool(hctx, "read_files")
		ts.EndTool(call)
		hs.EndHTTP(200)
	}
}
