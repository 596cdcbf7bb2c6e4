package auditmw_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditdb"
	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/transport/auditmw"
)

// BenchmarkMiddleware alternates, in process, a handler that reports a
// tools/call and writes a 1 KiB JSON answer, called directly and through
// the audit middleware over a real audit.db: the middleware's whole cost
// on a request (affinity, the event, its commit before the tail). ratio is
// audited over direct; audited_tool also reports what the MCP transport
// reports for a recorded read (its model_ergonomics and a meaningful
// window fact), whose event is the one a WebCodex read writes.
func BenchmarkMiddleware(b *testing.B) {
	ctx := context.Background()
	st, err := auditdb.Open(ctx, filepath.Join(b.TempDir(), auditdb.FileName))
	if err != nil {
		b.Fatal(err)
	}
	svc := audit.NewService(st, nil)
	svc.Start(nil)
	b.Cleanup(func() {
		svc.Stop(ctx)
		st.Close()
	})
	body := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 1000) + `"}]}}` + "\n")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auditmw.ReportMethod(r.Context(), "tools/call", "read_files", false)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	// tool reports as the MCP transport does for a recorded read_files:
	// the kernel's Result (model_ergonomics) and the window facts (a
	// meaningful call).
	readFiles := &kernel.Tool{Name: "read_files", Category: "files"}
	tool := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auditmw.ReportTool(r.Context(), readFiles, kernel.Result{Success: true, Tool: "read_files", Project: "agent:local:bench",
			Body: body[:900], Duration: time.Millisecond})
		auditmw.ReportWindow(r.Context(), audit.WindowFacts{Meaningful: true})
		h.ServeHTTP(w, r)
	})
	mw := &auditmw.Middleware{Audit: svc}
	wrapped, wrappedTool := mw.Wrap(auditmw.OpMCP, h), mw.Wrap(auditmw.OpMCP, tool)
	serve := func(h http.Handler) func() {
		return func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/mcp", nil))
			if w.Code != http.StatusOK || w.Body.Len() != len(body) {
				b.Fatalf("HTTP %d, %d bytes", w.Code, w.Body.Len())
			}
		}
	}
	m := benchpair.RunSides(b, benchpair.Side{Name: "direct", F: serve(h)}, benchpair.Side{Name: "audited", F: serve(wrapped)},
		benchpair.Side{Name: "audited_tool", F: serve(wrappedTool)})
	b.ReportMetric(float64(m[1])/float64(m[0]), "ratio")
	b.ReportMetric(float64((m[1] - m[0]).Nanoseconds()), "audit-ns")
	b.ReportMetric(float64((m[2] - m[0]).Nanoseconds()), "audit-tool-ns")
	if n := mw.WriteFailures(); n != 0 {
		b.Fatalf("%d audit writes failed", n)
	}
}
