// Package metrics is WebCodex's Prometheus registry (decision 0085): a
// private registry (never the process-global one) holding the tool-call
// counter and duration histogram, counted on the call path, and families
// read at scrape time from counters the services already keep. It serves
// them in the Prometheus text format.
//
// Cardinality is bounded by construction: every label is a tool name (the
// registry's, or UnknownTool), an outcome, a database, a pool or a store
// name — never a session, project or principal.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every family.
const Namespace = "webcodex"

// Outcomes of a tool call (the outcome label of the call counter).
const (
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
	// OutcomeRefused is a call rejected before its tool ran (unknown
	// tool, invalid arguments, scope, session authorization).
	OutcomeRefused = "refused"
)

// UnknownTool is the tool label of a call naming no registered tool: the
// name a caller sends is never a label value.
const UnknownTool = "unknown"

// DurationBuckets are the upper bounds (seconds) of the call duration
// histogram: 1 ms to about 65 s.
var DurationBuckets = prometheus.ExponentialBuckets(0.001, 4, 9)

// ScrapeReadTimeout bounds each store read a family makes at scrape time
// (the evidence journal's size, its newest checkpoint); a family that
// cannot be read in time is left out of that scrape. Several such reads
// together stay below Prometheus's default scrape_timeout (10 s).
const ScrapeReadTimeout = 2 * time.Second

// Registry holds the families.
type Registry struct {
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// New returns a Registry with the tool-call families and the Go runtime
// and process collectors.
func New() *Registry {
	r := &Registry{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "tool_calls_total",
			Help: "Tool calls dispatched by the kernel, by tool and outcome (success, failure, refused)."}, []string{"tool", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "tool_call_duration_seconds",
			Help: "Kernel time of a tool call, from admission to its decided outcome, by tool.", Buckets: DurationBuckets}, []string{"tool"}),
	}
	r.reg.MustRegister(r.calls, r.duration,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return r
}

// ObserveCall counts one call of tool (a registered name or UnknownTool)
// with outcome (one of the Outcome constants) that took d.
func (r *Registry) ObserveCall(tool, outcome string, d time.Duration) {
	r.calls.WithLabelValues(tool, outcome).Inc()
	r.duration.WithLabelValues(tool).Observe(d.Seconds())
}

// Sample is one value of a family read at scrape time, with its label
// values in the family's label order.
type Sample struct {
	Value  float64
	Labels []string
}

// Func registers a family read at scrape time: collect returns its
// samples, each with one value per label name. kind is
// prometheus.GaugeValue or prometheus.CounterValue. collect runs on the
// scraping goroutine and must be cheap and bounded.
func (r *Registry) Func(name, help string, kind prometheus.ValueType, labels []string, collect func() []Sample) {
	r.reg.MustRegister(&funcCollector{desc: prometheus.NewDesc(Namespace+"_"+name, help, labels, nil), kind: kind, collect: collect})
}

// HistogramSample is one histogram read at scrape time: Buckets maps
// each upper bound to the cumulative count of observations at most it.
type HistogramSample struct {
	Count   uint64
	Sum     float64
	Buckets map[float64]uint64
	Labels  []string
}

// Histograms registers a histogram family read at scrape time.
func (r *Registry) Histograms(name, help string, labels []string, collect func() []HistogramSample) {
	r.reg.MustRegister(&histogramCollector{desc: prometheus.NewDesc(Namespace+"_"+name, help, labels, nil), collect: collect})
}

// Handler serves the families in the Prometheus text format (or the
// format the scraper negotiates). A family that cannot be gathered is left
// out and the rest are served.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

type funcCollector struct {
	desc    *prometheus.Desc
	kind    prometheus.ValueType
	collect func() []Sample
}

func (c *funcCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *funcCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.collect() {
		m, err := prometheus.NewConstMetric(c.desc, c.kind, s.Value, s.Labels...)
		if err != nil {
			m = prometheus.NewInvalidMetric(c.desc, err)
		}
		ch <- m
	}
}

type histogramCollector struct {
	desc    *prometheus.Desc
	collect func() []HistogramSample
}

func (c *histogramCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *histogramCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.collect() {
		m, err := prometheus.NewConstHistogram(c.desc, s.Count, s.Sum, s.Buckets, s.Labels...)
		if err != nil {
			m = prometheus.NewInvalidMetric(c.desc, err)
		}
		ch <- m
	}
}
