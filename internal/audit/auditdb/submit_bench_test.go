package auditdb_test

import (
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditdb"
	"github.com/webcodex/webcodex/internal/benchpair"
)

// BenchmarkSubmit alternates one sequential Submit through the background
// writer (what the audit middleware waits for before a response's tail)
// with the store's AppendEvents of one event called directly: the
// writer's own cost over the commit it waits for. ratio is submit over
// append.
func BenchmarkSubmit(b *testing.B) {
	st, submit, ev := benchSubmitter(b)
	n := 0
	direct := func() {
		n++
		e := ev
		e.SessionID, e.EventID, e.EndedAt = "bench", audit.NewID(), time.Now().Unix()
		if err := st.AppendEvents(ctx, []audit.Event{audit.Sanitize(e)}, audit.MaxEventsPerSession, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	submit()
	m := benchpair.RunSides(b, benchpair.Side{Name: "append", F: direct}, benchpair.Side{Name: "submit", F: submit})
	b.ReportMetric(float64(m[1])/float64(m[0]), "ratio")
}

// evictSink keeps BenchmarkSubmitAfterEviction's reads from being
// optimized away.
var evictSink byte

// BenchmarkSubmitAfterEviction alternates a Submit that follows another
// (its code and pages still in the CPU's caches, as in BenchmarkSubmit)
// with one that follows a walk over 16 MiB, four times this machine's L2
// caches: what a request's own work (a go-sdk call allocates about
// 0.75 MiB) leaves between two audit commits. ratio is evicted over warm.
func BenchmarkSubmitAfterEviction(b *testing.B) {
	_, submit, _ := benchSubmitter(b)
	for range audit.MaxEventsPerSession {
		submit() // the session at its retention bound, as it stays
	}
	junk := make([]byte, 16<<20)
	var evicted []time.Duration
	m := benchpair.RunSides(b, benchpair.Side{Name: "warm", F: submit}, benchpair.Side{Name: "evict_and_submit", F: func() {
		for i := 0; i < len(junk); i += 64 {
			junk[i]++
		}
		evictSink += junk[len(junk)/2]
		start := time.Now()
		submit()
		evicted = append(evicted, time.Since(start))
	}})
	e := benchpair.Median(evicted)
	b.ReportMetric(float64(e.Nanoseconds()), "evicted-median-ns")
	b.ReportMetric(float64(e)/float64(m[0]), "ratio")
}

// benchSubmitter opens a store with its audit service started and returns
// the store, a sequential Submit of one MCP read's event into session
// "bench", and that event.
func benchSubmitter(b *testing.B) (*auditdb.Store, func(), audit.Event) {
	st, _ := open(b)
	svc := audit.NewService(st, nil)
	svc.Start(nil)
	b.Cleanup(func() { svc.Stop(ctx) })
	ev := okEvent()
	ev.Summary = map[string]any{"transport": "mcp", "tool": "read_files"}
	ev.Endpoint, ev.Operation, ev.ActionName = "/mcp", "mcp", "read_files"
	return st, func() {
		if err := svc.Submit(ctx, time.Minute, "bench", ev, audit.Attribution{}); err != nil {
			b.Fatal(err)
		}
	}, ev
}
