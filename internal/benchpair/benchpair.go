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
	m := RunSides(b, Side{baseName, base}, Side{subjectName, subject})
	b.ReportMetric(float64(m[1])/float64(m[0]), "ratio")
}

// Side is one side of a comparison: its name (the prefix of its
// "<name>-median-ns" metric) and one call.
type Side struct {
	Name string
	F    func()
}

// RunSides times sides in turns (one call of each, in order, then again)
// until the benchmark's loop ends, reports each side's median as
// "<name>-median-ns" and returns the medians in the order of sides. Each
// side runs at least once. The caller reports the ratios it compares.
func RunSides(b *testing.B, sides ...Side) []time.Duration {
	b.Helper()
	times := make([][]time.Duration, len(sides))
	for i := 0; b.Loop(); i++ {
		k := i % len(sides)
		start := time.Now()
		sides[k].F()
		times[k] = append(times[k], time.Since(start))
	}
	for k, s := range sides { // a short loop: give every side its turn
		if len(times[k]) == 0 {
			start := time.Now()
			s.F()
			times[k] = append(times[k], time.Since(start))
		}
	}
	medians := make([]time.Duration, len(sides))
	for k, s := range sides {
		medians[k] = Median(times[k])
		b.ReportMetric(float64(medians[k].Nanoseconds()), s.Name+"-median-ns")
	}
	return medians
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
