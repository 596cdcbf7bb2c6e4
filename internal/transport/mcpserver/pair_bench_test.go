package mcpserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditdb"
	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/transport/auditmw"
	"github.com/webcodex/webcodex/internal/transport/mcpserver"
)

// BenchmarkToolsCallRecordedVsBare alternates, call by call, a recorded
// read_files through the complete WebCodex handler (its ledger events and
// evidence written behind the response) and the bare go-sdk server's read
// of the same file. The ratio is webcodex_recorded over bare_sdk in time
// per call; the goal (throughput at least 0.8× the bare server's) is a
// ratio of at most 1.25.
//
// Each audit session first gets MaxEventsPerSession events (fillAudit):
// the calls are timed as an agent's past its first 500, whose session
// stays at its retention bound. A third side, in the same turns, splits
// the gap: bare_sdk_audited is
// the bare server behind the audit middleware over its own audit.db, its
// event committed before the response's tail is written (decisions 0012
// and 0029): the floor the audit contract alone sets. audited-ratio is
// bare_sdk_audited over bare_sdk; recorded-over-audited-ratio is what
// WebCodex adds above that floor.
//
// A fourth side, webcodex_unrecorded, is the same read through a second
// complete WebCodex handler without a recording_session_id: no ledger
// events, its evidence record appended to the journal behind the response
// (decision 0043). unrecorded-ratio is webcodex_unrecorded over bare_sdk.
func BenchmarkToolsCallRecordedVsBare(b *testing.B) {
	rec, bare, audited := setupApp(true)(b, 1), setupBare(b, 1), setupBareAudited(b)
	unrec := setupApp(false)(b, 1)
	for _, env := range []*benchEnv{rec, bare, audited, unrec} {
		callOnce(b, env.sessions[0], env.call(0))
		fillAudit(b, env)
	}
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
	m := benchpair.RunSides(b,
		benchpair.Side{Name: "bare_sdk", F: one(bare)},
		benchpair.Side{Name: "bare_sdk_audited", F: one(audited)},
		benchpair.Side{Name: "webcodex_recorded", F: one(rec)},
		benchpair.Side{Name: "webcodex_unrecorded", F: one(unrec)})
	b.ReportMetric(float64(m[2])/float64(m[0]), "ratio")
	b.ReportMetric(float64(m[1])/float64(m[0]), "audited-ratio")
	b.ReportMetric(float64(m[2])/float64(m[1]), "recorded-over-audited-ratio")
	b.ReportMetric(float64(m[3])/float64(m[0]), "unrecorded-ratio")
}

// fillAudit gives the audit session the calls of env are recorded in
// (the one idle reuse picks) MaxEventsPerSession events more, so that its
// calls are timed as those of an agent past its first 500 calls: with
// the session at its retention bound, as it stays from then on.
func fillAudit(b *testing.B, env *benchEnv) {
	if env.audit == nil {
		return
	}
	ctx := context.Background()
	id, _, err := env.audit.Affinity(ctx, "", "")
	if err != nil {
		b.Fatal(err)
	}
	ev := audit.Event{EventView: audit.EventView{Endpoint: "/mcp", Operation: auditmw.OpMCP, ActionName: "read_files",
		Status: audit.EventSuccess, Summary: map[string]any{"transport": auditmw.TransportMCP, "tool": "read_files"}}}
	for range audit.MaxEventsPerSession {
		if err := env.audit.Record(ctx, id, ev, audit.Attribution{}); err != nil {
			b.Fatal(err)
		}
	}
	if again, _, err := env.audit.Affinity(ctx, "", ""); err != nil || again != id {
		b.Fatalf("the calls would be recorded in %q (%v), not the filled %q", again, err, id)
	}
}

// setupBareAudited serves the bare server's read tool behind the audit
// middleware, over an audit.db of its own with its group commit
// started, as the app wires it; the server reports the method it
// dispatched, as WebCodex's does, so each call's event names its tool.
func setupBareAudited(b *testing.B) *benchEnv {
	ctx := context.Background()
	st, err := auditdb.Open(ctx, filepath.Join(b.TempDir(), auditdb.FileName))
	if err != nil {
		b.Fatal(err)
	}
	svc := audit.NewService(st, nil)
	svc.Start(nil)
	b.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		svc.Stop(sctx)
		st.Close()
	})
	s := bareServer(b)
	s.AddReceivingMiddleware(mcpserver.Report)
	mw := &auditmw.Middleware{Audit: svc}
	h := mw.Wrap(auditmw.OpMCP, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	call := &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": benchFile}}
	env := &benchEnv{endpoint: srv.URL, hc: benchClient(b, "", 1), call: func(int) *mcp.CallToolParams { return call }, audit: svc}
	env.sessions = connectAgents(b, env.endpoint, env.hc, 1)
	b.Cleanup(func() {
		if n := mw.WriteFailures(); n != 0 {
			b.Errorf("%d audit writes failed", n)
		}
	})
	return env
}
