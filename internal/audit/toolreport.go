package audit

import (
	"cmp"
	"slices"
)

// Tool report bounds.
const (
	// DefaultToolReportEvents and MaxToolReportEvents bound how many of
	// the newest model_ergonomics events a tool report scans.
	DefaultToolReportEvents = 10000
	MaxToolReportEvents     = 50000
	// TopErrorKinds is how many error kinds a tool report lists per tool.
	TopErrorKinds = 3
)

// KindCount is one entry of a ToolStats error-kind ranking.
type KindCount struct {
	Kind  string `json:"kind"`
	Count int64  `json:"count"`
}

// ToolStats aggregates the model_ergonomics records of one tool. Byte
// figures cover only calls that produced a result (SerializedResultBytes
// not null); Rejected counts the pre-result rejections.
type ToolStats struct {
	Tool          string      `json:"tool"`
	Category      string      `json:"category"`
	Count         int64       `json:"count"`
	Successes     int64       `json:"successes"`
	SuccessRate   float64     `json:"success_rate"`
	Rejected      int64       `json:"rejected"`
	P50MS         int64       `json:"p50_ms"`
	P95MS         int64       `json:"p95_ms"`
	MeanBytes     int64       `json:"mean_result_bytes"`
	P95Bytes      int64       `json:"p95_result_bytes"`
	TopErrorKinds []KindCount `json:"top_error_kinds"`
}

// ToolReport is the per-tool aggregate of the newest model_ergonomics
// records: EventsScanned of EventsAvailable were read; Truncated is true
// when older records were left out.
type ToolReport struct {
	Tools []ToolStats `json:"tools"`
	// LoopTiming is the agent-loop gap aggregate over the newest
	// meaningful MCP calls (as many as the report's limit).
	LoopTiming      LoopTiming `json:"loop_timing"`
	EventsScanned   int64      `json:"events_scanned"`
	EventsAvailable int64      `json:"events_available"`
	Truncated       bool       `json:"truncated"`
}

// BuildToolReport aggregates ms per tool, most-called tool first (ties by
// name). Percentiles are nearest-rank.
func BuildToolReport(ms []ModelErgonomics) []ToolStats {
	type acc struct {
		st        ToolStats
		durations []int64
		bytes     []int64
		errors    map[string]int64
	}
	by := map[string]*acc{}
	for _, m := range ms {
		a := by[m.ToolName]
		if a == nil {
			a = &acc{st: ToolStats{Tool: m.ToolName, Category: m.ToolCategory}, errors: map[string]int64{}}
			by[m.ToolName] = a
		}
		a.st.Count++
		if m.Success {
			a.st.Successes++
		}
		a.durations = append(a.durations, m.DurationMS)
		if m.SerializedResultBytes != nil {
			a.bytes = append(a.bytes, *m.SerializedResultBytes)
		} else {
			a.st.Rejected++
		}
		if m.ErrorKind != "" {
			a.errors[m.ErrorKind]++
		}
	}
	out := make([]ToolStats, 0, len(by))
	for _, a := range by {
		st := a.st
		st.SuccessRate = float64(st.Successes) / float64(st.Count)
		st.P50MS, st.P95MS = percentile(a.durations, 50), percentile(a.durations, 95)
		if len(a.bytes) > 0 {
			var sum int64
			for _, b := range a.bytes {
				sum += b
			}
			st.MeanBytes = sum / int64(len(a.bytes))
			st.P95Bytes = percentile(a.bytes, 95)
		}
		st.TopErrorKinds = []KindCount{}
		for k, n := range a.errors {
			st.TopErrorKinds = append(st.TopErrorKinds, KindCount{Kind: k, Count: n})
		}
		slices.SortFunc(st.TopErrorKinds, func(x, y KindCount) int {
			return cmp.Or(cmp.Compare(y.Count, x.Count), cmp.Compare(x.Kind, y.Kind))
		})
		st.TopErrorKinds = st.TopErrorKinds[:min(len(st.TopErrorKinds), TopErrorKinds)]
		out = append(out, st)
	}
	slices.SortFunc(out, func(x, y ToolStats) int {
		return cmp.Or(cmp.Compare(y.Count, x.Count), cmp.Compare(x.Tool, y.Tool))
	})
	return out
}

// percentile returns the nearest-rank p-th percentile of xs (sorting xs);
// 0 for no values.
func percentile(xs []int64, p int) int64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	rank := (p*len(xs) + 99) / 100 // ceil(p/100 * n)
	return xs[max(rank, 1)-1]
}
