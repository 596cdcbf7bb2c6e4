package memorydb

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/webcodex/webcodex/internal/memory"
)

// BenchmarkMemorySearchScale times memory_search (the default limit) in
// scopes of 1,000 and 10,000 entries, for a term every entry holds (its
// tag) and a rare one.
func BenchmarkMemorySearchScale(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		st, svc, _ := open(b)
		r := rand.New(rand.NewPCG(1, 2))
		fill(b, st, scopeA, n, func(int) string { return benchBody(r, 120) })
		for _, q := range []string{"fill", "writer7"} {
			b.Run(fmt.Sprintf("%d/%s", n, q), func(b *testing.B) {
				for b.Loop() {
					if _, _, err := svc.Search(context.Background(), memory.SearchParams{Scope: scopeA, Query: q}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
