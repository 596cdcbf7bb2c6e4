package benchpair_test

import (
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/benchpair"
)

func TestMedian(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{3 * ms}, 3 * ms},
		{[]time.Duration{5 * ms, 1 * ms, 3 * ms}, 3 * ms},
		{[]time.Duration{4 * ms, 1 * ms, 3 * ms, 2 * ms}, 2500 * time.Microsecond},
	} {
		in := append([]time.Duration(nil), c.in...)
		if got := benchpair.Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Fatalf("Median changed its input: %v", c.in)
			}
		}
	}
}

// TestRunAlternates: the sides run in turns, each at least once.
func TestRunAlternates(t *testing.T) {
	var order []byte
	testing.Benchmark(func(b *testing.B) {
		order = order[:0]
		benchpair.Run(b, "a", func() { order = append(order, 'a') }, "b", func() { order = append(order, 'b') })
	})
	if len(order) < 2 {
		t.Fatalf("ran %q", order)
	}
	for i := 0; i+1 < len(order); i += 2 {
		if order[i] != 'a' || order[i+1] != 'b' {
			t.Fatalf("not alternated: %q", order)
		}
	}
}

// TestRunSidesTakesTurns: three sides run in order, in turns, each at
// least once, and one median is returned per side.
func TestRunSidesTakesTurns(t *testing.T) {
	var order []byte
	var medians []time.Duration
	testing.Benchmark(func(b *testing.B) {
		order = order[:0]
		side := func(c byte) benchpair.Side {
			return benchpair.Side{Name: string(c), F: func() { order = append(order, c) }}
		}
		medians = benchpair.RunSides(b, side('a'), side('b'), side('c'))
	})
	if len(order) < 3 || len(medians) != 3 {
		t.Fatalf("ran %q, medians %v", order, medians)
	}
	for i, c := range order {
		if c != "abc"[i%3] {
			t.Fatalf("not in turns: %q", order)
		}
	}
}
