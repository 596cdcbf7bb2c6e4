package memorypg

import (
	"context"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/memory"
	"github.com/webcodex/webcodex/internal/memory/storetest"
)

// TestSearchRanksOnlyTheNewestCandidates: the best match (its key is the
// word) is ranked while it is among the newest MaxRankedCandidates
// matches, and is not seen once MaxRankedCandidates newer ones match.
func TestSearchRanksOnlyTheNewestCandidates(t *testing.T) {
	if MaxRankedCandidates != 500 {
		t.Fatalf("MaxRankedCandidates = %d, the cap reference postgres-2026.md §7 measured is 500", MaxRankedCandidates)
	}
	ctx := context.Background()
	st, db := openStore(t)
	svc := memory.NewService(st, nil)
	scope := storetest.ScopeA
	entries := storetest.FillEntries(MaxRankedCandidates+1, func(int) string { return "a needle in the hay" })
	entries[0].MemoryKey, entries[0].Body = "needle", "needle needle needle" // the oldest
	fill(t, db, scope, entries)
	top := func() string {
		t.Helper()
		hits, _, err := svc.Search(ctx, memory.SearchParams{Scope: scope, Query: "needle", Limit: 1})
		if err != nil || len(hits) != 1 {
			t.Fatalf("search: %+v %v", hits, err)
		}
		return hits[0].MemoryKey
	}
	if got := top(); got == "needle" {
		t.Fatal("the oldest match was ranked although MaxRankedCandidates newer ones match")
	}
	if _, err := svc.Delete(ctx, scope, entries[1].MemoryKey, entries[1].Revision); err != nil {
		t.Fatal(err)
	}
	if got := top(); got != "needle" {
		t.Fatalf("top hit %q, want the best match once it is among the newest %d", got, MaxRankedCandidates)
	}
}

// TestQueryTranslation pins the FTS5-to-tsquery translation.
func TestQueryTranslation(t *testing.T) {
	for q, want := range map[string]string{
		`writer`:                    `'writer'`,
		`Writer lock`:               `('writer' & 'lock')`,
		`a OR b c`:                  `('a' | ('b' & 'c'))`,
		`a AND b NOT c`:             `('a' & ('b' & !'c'))`,
		`"hold the writer"`:         `('hold' <-> 'the' <-> 'writer')`,
		`writ*`:                     `'writ':*`,
		`body:writer`:               `'writer':C`,
		`memory_key:(pit* OR x)`:    `('pit':*A | 'x':A)`,
		`"t.TempDir" é`:             `(('t' <-> 'tempdir') & 'é')`,
		`(a OR b) AND "say ""hi"""`: `(('a' | 'b') & ('say' <-> 'hi'))`,
	} {
		got, err := tsquery(q)
		if err != nil || got != want {
			t.Errorf("tsquery(%q) = %q, %v; want %q", q, got, err, want)
		}
	}
	// Valid FTS5 this translation refuses (no tsquery equivalent kept).
	for _, q := range []string{`^lock`, `NEAR(a b)`, `a + b`, `{body memory_key}:a`} {
		if _, err := tsquery(q); failure.KindOf(err) != failure.InvalidArguments {
			t.Errorf("tsquery(%q): %v, want invalid_arguments", q, err)
		}
	}
}
