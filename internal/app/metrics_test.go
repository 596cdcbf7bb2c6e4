package app_test

import (
	"bytes"
	"context"
	"database/sql"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/sqlitedb"
	"github.com/webcodex/webcodex/internal/transport/opsapi"
)

// scrape reads /metrics with token and parses it with the Prometheus text
// parser.
func scrape(t *testing.T, s *server, token string) map[string]*io_prometheus_client.MetricFamily {
	t.Helper()
	code, body := s.do(t, token, "GET", opsapi.MetricsPath, nil)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: HTTP %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return fams
}

// sample finds the sample of family name whose labels are exactly want
// (nil when none).
func sample(fams map[string]*io_prometheus_client.MetricFamily, name string, want map[string]string) *io_prometheus_client.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(want) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			if want[l.GetName()] != l.GetValue() {
				match = false
			}
		}
		if match {
			return m
		}
	}
	return nil
}

// counterTotal is the sum of the counter family name's samples; t fails
// when the family is missing or not a counter.
func counterTotal(t *testing.T, fams map[string]*io_prometheus_client.MetricFamily, name string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil || f.GetType() != io_prometheus_client.MetricType_COUNTER {
		t.Fatalf("%s: %v", name, f)
	}
	var n float64
	for _, m := range f.GetMetric() {
		n += m.GetCounter().GetValue()
	}
	return n
}

// metricsProject is the project the metrics tests call.
const metricsProject = "agent:local:p"

// recordedReads opens a session on metricsProject and makes n recorded
// read_files calls in it (n+1 successful calls in all); it returns the
// session id.
func recordedReads(t *testing.T, s *server, n int) string {
	t.Helper()
	id := str(t, must(t, s.call(t, "work_on_project", map[string]any{"project": metricsProject, "instruction": "metrics"}, ""), "work").Output["session_id"])
	for range n {
		must(t, s.call(t, "read_files", map[string]any{"project": metricsProject, "files": []any{map[string]any{"path": "a.txt"}}}, id), "read")
	}
	return id
}

func TestMetricsScrape(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	const reads = 3
	id := recordedReads(t, s, reads)
	if r := s.call(t, "no_such_tool", map[string]any{}, ""); r.Success {
		t.Fatal("an unknown tool succeeded")
	}
	fams := scrape(t, s, s.token)

	if total := counterTotal(t, fams, "webcodex_tool_calls_total"); total != reads+2 {
		t.Errorf("tool calls counted %v, made %d", total, reads+2)
	}
	for _, c := range []struct {
		tool, outcome string
		want          float64
	}{{"read_files", "success", reads}, {"work_on_project", "success", 1}, {"unknown", "refused", 1}} {
		m := sample(fams, "webcodex_tool_calls_total", map[string]string{"tool": c.tool, "outcome": c.outcome})
		if m == nil || m.GetCounter().GetValue() != c.want {
			t.Errorf("calls{tool=%s,outcome=%s} = %v, want %v", c.tool, c.outcome, m, c.want)
		}
	}
	if m := sample(fams, "webcodex_tool_call_duration_seconds", map[string]string{"tool": "read_files"}); m == nil || m.GetHistogram().GetSampleCount() != reads {
		t.Errorf("duration{tool=read_files}: %v", m)
	}
	wf := map[string]string{"database": "workflow"}
	for _, name := range []string{"webcodex_db_commits_total", "webcodex_db_fsyncs_total", "webcodex_db_batched_writes_total"} {
		if m := sample(fams, name, wf); m == nil || m.GetCounter().GetValue() < 1 {
			t.Errorf("%s{database=workflow}: %v", name, m)
		}
	}
	// Families are read one after another while background writes
	// (evidence outbox, audit) go on: each histogram is consistent in
	// itself, not with the commit counter read before it.
	if m := sample(fams, "webcodex_db_group_commit_batch_size", wf); m == nil || m.GetHistogram().GetSampleCount() < 1 ||
		m.GetHistogram().GetSampleSum() < float64(m.GetHistogram().GetSampleCount()) {
		t.Errorf("batch sizes of workflow: %v", m)
	}
	if m := sample(fams, "webcodex_db_writer_queue_depth", wf); m == nil {
		t.Error("no writer queue depth for workflow")
	}
	if m := sample(fams, "webcodex_store_bytes", map[string]string{"store": "workflow"}); m == nil || m.GetGauge().GetValue() <= 0 {
		t.Errorf("store_bytes{store=workflow}: %v", m)
	}
	// Every recorded call has its evidence record.
	if m := sample(fams, "webcodex_evidence_journal_records", map[string]string{}); m == nil || m.GetGauge().GetValue() < reads+2 {
		t.Errorf("evidence_journal_records: %v", m)
	}
	for _, c := range []struct{ name, label, value string }{
		{"webcodex_request_slots_in_use", "pool", "authenticated"}, {"webcodex_request_slots_in_use", "pool", "waiting"},
		{"webcodex_waiters", "kind", "board"}, {"webcodex_waiters", "kind", "jobs"},
	} {
		if sample(fams, c.name, map[string]string{c.label: c.value}) == nil {
			t.Errorf("no %s{%s=%s}", c.name, c.label, c.value)
		}
	}
	// The scrape itself holds an authenticated slot.
	if m := sample(fams, "webcodex_request_slots_in_use", map[string]string{"pool": "authenticated"}); m.GetGauge().GetValue() != 1 {
		t.Errorf("authenticated slots in use during the scrape = %v, want 1", m.GetGauge().GetValue())
	}
	// ... a REST one (the scrape is no MCP request).
	for tr, want := range map[string]float64{"rest": 1, "mcp": 0} {
		if m := sample(fams, "webcodex_request_slots_in_use_by_transport", map[string]string{"transport": tr}); m == nil || m.GetGauge().GetValue() != want {
			t.Errorf("request_slots_in_use_by_transport{transport=%s} = %v, want %v", tr, m, want)
		}
	}
	if m := sample(fams, "webcodex_runner_connections", map[string]string{}); m == nil || m.GetGauge().GetValue() != 0 {
		t.Errorf("runner_connections: %v", m)
	}

	// Low cardinality: no session, project or principal anywhere.
	forbidden := []string{id, metricsProject, auth.DefaultOwner, s.a.AdminToken}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if n := l.GetName(); strings.Contains(n, "session") || strings.Contains(n, "project") || strings.Contains(n, "principal") || strings.Contains(n, "owner") {
					t.Errorf("%s has label %s", name, n)
				}
				for _, v := range forbidden {
					if strings.Contains(l.GetValue(), v) {
						t.Errorf("%s label %s=%q carries %q", name, l.GetName(), l.GetValue(), v)
					}
				}
			}
		}
	}
}

func TestMetricsCredentials(t *testing.T) {
	s := startApp(t, t.TempDir())
	defer s.stop(t)
	ctx := context.Background()
	reader, _, err := s.a.Auth.CreateToken(ctx, "reader", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead, auth.ScopeRuntimeRead})
	if err != nil {
		t.Fatal(err)
	}
	scraper, _, err := s.a.Auth.CreateToken(ctx, "prometheus", auth.DefaultOwner, []auth.Scope{auth.ScopeMetricsRead})
	if err != nil {
		t.Fatal(err)
	}
	operator, _, err := s.a.Auth.CreateToken(ctx, "operator", auth.DefaultOwner, []auth.Scope{auth.ScopeAccountManage})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, token, kind string
		code              int
	}{
		{"no token", "", "unauthenticated", http.StatusUnauthorized},
		{"invalid token", "wc_pat_nope", "unauthenticated", http.StatusUnauthorized},
		{"without the scope", reader, "insufficient_scope", http.StatusForbidden},
		{"metrics:read", scraper, "", http.StatusOK},
		{"account:manage", operator, "", http.StatusOK},
	} {
		code, body := s.do(t, c.token, "GET", opsapi.MetricsPath, nil)
		if code != c.code || (c.kind != "" && !strings.Contains(string(body), `"kind":"`+c.kind+`"`)) {
			t.Errorf("%s: HTTP %d %s, want %d %s", c.name, code, body, c.code, c.kind)
		}
		if c.code != http.StatusOK && strings.Contains(string(body), "webcodex_tool_calls_total") {
			t.Errorf("%s: refused, yet the body has metrics", c.name)
		}
	}
	// A refused scrape is not a call: nothing was counted.
	fams := scrape(t, s, scraper)
	if f := fams["webcodex_tool_calls_total"]; f != nil && len(f.GetMetric()) != 0 {
		t.Errorf("refused scrapes counted as calls: %v", f)
	}
}

func TestMetricsDisabled(t *testing.T) {
	s := startAppWith(t, t.TempDir(), func(c *app.Config) { c.Metrics.Enabled = false })
	defer s.stop(t)
	if code, body := s.do(t, s.token, "GET", opsapi.MetricsPath, nil); code != http.StatusNotFound {
		t.Errorf("GET /metrics with [metrics] enabled = false: HTTP %d %s, want 404", code, body)
	}
	if code, body := s.do(t, "", "GET", opsapi.ReadyPath, nil); code != http.StatusOK || string(body) != opsapi.ReadyBody {
		t.Errorf("/readyz with metrics off: HTTP %d %q", code, body)
	}
}

func TestReadiness(t *testing.T) {
	s := startApp(t, t.TempDir())
	defer s.stop(t)
	code, body := s.do(t, "", "GET", opsapi.ReadyPath, nil)
	if code != http.StatusOK || string(body) != opsapi.ReadyBody {
		t.Fatalf("/readyz: HTTP %d %q, want 200 %q", code, body, opsapi.ReadyBody)
	}
	if code, _ := s.do(t, "", "GET", "/healthz", nil); code != http.StatusOK {
		t.Fatalf("/healthz: HTTP %d", code)
	}
	// A store that cannot answer a read: the goals database's read pool
	// is closed under the running server.
	goals := s.a.Stores.Goals.(interface{ DB() *sqlitedb.DB }).DB()
	if err := goals.Read.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.a.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "goals") {
		t.Errorf("Ready with the goals store closed = %v, want an error naming goals", err)
	}
	code, body = s.do(t, "", "GET", opsapi.ReadyPath, nil)
	if code != http.StatusServiceUnavailable || string(body) != opsapi.NotReadyBody {
		t.Errorf("/readyz with a store closed: HTTP %d %q, want 503 %q (no detail)", code, body, opsapi.NotReadyBody)
	}
	// Liveness is not readiness: the process still serves.
	if code, _ := s.do(t, "", "GET", "/healthz", nil); code != http.StatusOK {
		t.Errorf("/healthz with a store closed: HTTP %d", code)
	}
}

// TestMetricsPostgres scrapes a server on PostgreSQL: the ledger writer's
// commits are labelled postgresql, no data-directory store is sized (the
// stores are the database's), and the server is ready.
func TestMetricsPostgres(t *testing.T) {
	url := pgtest.URL(t)
	s := startAppWith(t, t.TempDir(), func(c *app.Config) { c.DatabaseURL = url }, "p="+rawProjectDir(t))
	defer s.stop(t)
	const reads = 2
	recordedReads(t, s, reads)
	fams := scrape(t, s, s.token)
	if m := sample(fams, "webcodex_tool_calls_total", map[string]string{"tool": "read_files", "outcome": "success"}); m == nil || m.GetCounter().GetValue() != reads {
		t.Errorf("read_files calls: %v, want %d", m, reads)
	}
	pg := map[string]string{"database": app.PostgresDatabase}
	if m := sample(fams, "webcodex_db_commits_total", pg); m == nil || m.GetCounter().GetValue() < 1 {
		t.Errorf("db_commits_total{database=postgresql}: %v", m)
	}
	if m := sample(fams, "webcodex_db_writer_queue_depth", pg); m == nil {
		t.Error("no writer queue depth for postgresql")
	}
	if m := sample(fams, "webcodex_db_commits_total", map[string]string{"database": app.PostgresBoardDatabase}); m == nil {
		t.Error("no commits of the postgresql board writer")
	}
	if f := fams["webcodex_store_bytes"]; f != nil {
		t.Errorf("store_bytes on a database deployment: %v", f)
	}
	if m := sample(fams, "webcodex_evidence_journal_records", map[string]string{}); m == nil || m.GetGauge().GetValue() < reads+1 {
		t.Errorf("evidence_journal_records: %v", m)
	}
	if code, body := s.do(t, "", "GET", opsapi.ReadyPath, nil); code != http.StatusOK || string(body) != opsapi.ReadyBody {
		t.Errorf("/readyz on PostgreSQL: HTTP %d %q", code, body)
	}
}

// TestReadinessWriterQueue: a writer whose queue is at its bound
// (sqlitedb.MaxBatch writes queued or running) makes the server not
// ready, and ready again once the queue drains. The goals database's
// writer is held by a real write that waits, with MaxBatch-1 real writes
// queued behind it.
func TestReadinessWriterQueue(t *testing.T) {
	s := startApp(t, t.TempDir())
	defer s.stop(t)
	ctx := context.Background()
	w := s.a.Stores.Goals.(interface{ DB() *sqlitedb.DB }).DB().Writer
	entered, release := make(chan struct{}), make(chan struct{})
	if _, err := w.Go(ctx, func(context.Context, *sql.Tx) error { close(entered); <-release; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	<-entered
	var last uint64
	for range sqlitedb.MaxBatch - 1 {
		var err error
		if last, err = w.Go(ctx, func(context.Context, *sql.Tx) error { return nil }, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.a.Ready(ctx); err == nil || !strings.Contains(err.Error(), "goals") {
		t.Errorf("Ready with the goals writer's queue full = %v, want an error naming goals", err)
	}
	if code, body := s.do(t, "", "GET", opsapi.ReadyPath, nil); code != http.StatusServiceUnavailable || string(body) != opsapi.NotReadyBody {
		t.Errorf("/readyz with a full writer queue: HTTP %d %q", code, body)
	}
	close(release)
	if err := w.Wait(ctx, last); err != nil {
		t.Fatal(err)
	}
	if code, body := s.do(t, "", "GET", opsapi.ReadyPath, nil); code != http.StatusOK || string(body) != opsapi.ReadyBody {
		t.Errorf("/readyz once the queue drained: HTTP %d %q", code, body)
	}
}
