package auditmw_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditdb"
	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/transport/auditmw"
)

// BenchmarkMiddleware alternates, in process, a handler that reports a
// tools/call and writes a 1 KiB JSON answer, called directly and through
// the audit middleware over a real audit.db: the middleware's whole cost
// on a request (affinity, the event, its commit before the tail). ratio is
// audited over direct.
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
	mw := &auditmw.Middleware{Audit: svc}
	wrapped := mw.Wrap(auditmw.OpMCP, h)
	serve := func(h http.Handler) func() {
		return func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/mcp", nil))
			if w.Code != http.StatusOK || w.Body.Len() != len(body) {
				b.Fatalf("HTTP %d, %d bytes", w.Code, w.Body.Len())
			}
		}
	}
	m := benchpair.RunSides(b, benchpair.Side{Name: "direct", F: serve(h)}, benchpair.Side{Name: "audited", F: serve(wrapped)})
	b.ReportMetric(float64(m[1])/float64(m[0]), "ratio")
	b.ReportMetric(float64((m[1] - m[0]).Nanoseconds()), "audit-ns")
	if n := mw.WriteFailures(); n != 0 {
		b.Fatalf("%d audit writes failed", n)
	}
}
