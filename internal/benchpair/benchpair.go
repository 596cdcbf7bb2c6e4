// Package benchpair times the two sides of a comparison alternately, call
// by call, inside one benchmark, so that machine drift moves both sides
// alike (running one side's every repeat first, as -count over two
// sub-benchmarks does, let drift alone move a ratio from 0.84 to 0.28).
//
// It reports each side's median and their ratio as benchmark metrics:
// "<base>-median-ns", "<subject>-median-ns" and "ratio" (subject over
// base). scripts/bench.sh collects the ratios of the headline pairs.
package benchpair

import (
	"slices"
	"testing"
	"time"
)

// Run times base and subject alternately until the benchmark's loop ends
// and reports their medians and ratio. Each side runs at least once.
func Run(b *testing.B, baseName string, base func(), subjectName string, subject func()) {
	b.Helper()
	var tBase, tSubject []time.Duration
	for i := 0; b.Loop(); i++ {
		f, ts := base, &tBase
		if i%2 == 1 {
			f, ts = subject, &tSubject
		}
		start := time.Now()
		f()
		*ts = append(*ts, time.Since(start))
	}
	if len(tSubject) == 0 { // a single iteration: give the subject its turn
		start := time.Now()
		subject()
		tSubject = append(tSubject, time.Since(start))
	}
	mb, ms := Median(tBase), Median(tSubject)
	b.ReportMetric(float64(mb.Nanoseconds()), baseName+"-median-ns")
	b.ReportMetric(float64(ms.Nanoseconds()), subjectName+"-median-ns")
	b.ReportMetric(float64(ms)/float64(mb), "ratio")
}

// Median returns the median of ds (0 for none). It sorts a copy.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
