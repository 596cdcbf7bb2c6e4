package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/webcodex/webcodex/internal/metrics"
)

// TestBounds pins the named bounds: the duration buckets span 1 ms to
// beyond a minute, and the scrape-time reads fit a default scrape.
func TestBounds(t *testing.T) {
	b := metrics.DurationBuckets
	if len(b) != 9 || b[0] != 0.001 || b[len(b)-1] < 60 {
		t.Errorf("DurationBuckets = %v, want 9 buckets from 1 ms past 60 s", b)
	}
	if metrics.ScrapeReadTimeout <= 0 || 2*metrics.ScrapeReadTimeout >= 10*time.Second {
		t.Errorf("ScrapeReadTimeout = %s: the journal's two reads must fit Prometheus's default 10 s scrape_timeout", metrics.ScrapeReadTimeout)
	}
}

// TestFamilies registers each kind of family and reads them back through
// the handler with the Prometheus text parser.
func TestFamilies(t *testing.T) {
	r := metrics.New()
	r.ObserveCall("read_files", metrics.OutcomeSuccess, 3*time.Millisecond)
	r.ObserveCall("read_files", metrics.OutcomeSuccess, time.Millisecond)
	r.ObserveCall(metrics.UnknownTool, metrics.OutcomeRefused, 0)
	r.Func("things", "Things.", prometheus.GaugeValue, []string{"kind"}, func() []metrics.Sample {
		return []metrics.Sample{{Value: 2, Labels: []string{"a"}}, {Value: 5, Labels: []string{"b"}}}
	})
	r.Histograms("sizes", "Sizes.", nil, func() []metrics.HistogramSample {
		return []metrics.HistogramSample{{Count: 3, Sum: 7, Buckets: map[float64]uint64{1: 1, 4: 3}}}
	})
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	calls := fams["webcodex_tool_calls_total"].GetMetric()
	if len(calls) != 2 {
		t.Fatalf("tool_calls_total has %d series, want 2", len(calls))
	}
	if h := fams["webcodex_tool_call_duration_seconds"].GetMetric()[0].GetHistogram(); h.GetSampleCount() != 2 {
		t.Errorf("duration of read_files: %v", h)
	}
	var sum float64
	for _, m := range fams["webcodex_things"].GetMetric() {
		sum += m.GetGauge().GetValue()
	}
	if sum != 7 {
		t.Errorf("things sum to %v, want 7", sum)
	}
	if h := fams["webcodex_sizes"].GetMetric()[0].GetHistogram(); h.GetSampleCount() != 3 || h.GetSampleSum() != 7 {
		t.Errorf("sizes: %v", h)
	}
	if fams["go_goroutines"] == nil || fams["process_start_time_seconds"] == nil {
		t.Error("runtime and process families missing")
	}
}
