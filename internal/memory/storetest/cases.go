package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/memory"
)

func setCreateReplaceIdempotent(t *testing.T, open func(*testing.T) Backend) {
	be := open(t)
	svc := memory.NewService(be.Store, nil)
	ctx := context.Background()
	r1 := mustSet(t, svc, memory.SetParams{Key: "conventions/tests", Body: "use t.TempDir", Tags: []string{"b", "a", "a"}, Writer: "wc_sess_x"})
	if !r1.Created || !r1.Changed || r1.Entry.Generation != 1 || strings.Join(r1.Entry.Tags, ",") != "a,b" {
		t.Fatalf("create: %+v", r1)
	}
	if g, err := memory.ParseRevision(r1.Entry.Revision); err != nil || g != 1 {
		t.Fatalf("revision %q: %d %v", r1.Entry.Revision, g, err)
	}
	// An identical retry (with or without the old revision) changes nothing.
	for _, exp := range []string{"", r1.Entry.Revision} {
		r := mustSet(t, svc, memory.SetParams{Key: "conventions/tests", Body: "use t.TempDir", Tags: []string{"a", "b"}, ExpectedRevision: exp})
		if r.Changed || r.Created || r.Entry.Revision != r1.Entry.Revision {
			t.Fatalf("identical retry changed state: %+v", r)
		}
	}
	// A different body without a revision is a conflict naming the current one.
	before := be.Snapshot(t)
	_, err := svc.Set(ctx, memory.SetParams{Scope: scopeA, Key: "conventions/tests", Body: "other"})
	wantKind(t, err, failure.RevisionConflict)
	if d := failure.DetailOf(err); d["current_revision"] != r1.Entry.Revision {
		t.Fatalf("conflict detail %v", d)
	}
	if be.Snapshot(t) != before {
		t.Fatal("a conflicting set changed the store")
	}
	r2 := mustSet(t, svc, memory.SetParams{Key: "conventions/tests", Body: "other", ExpectedRevision: r1.Entry.Revision})
	if be.Snapshot(t) == before {
		t.Fatal("snapshot does not see a change")
	}
	if !r2.Changed || r2.Entry.MemoryID != r1.Entry.MemoryID || r2.Entry.Generation != 2 || r2.Entry.Revision == r1.Entry.Revision {
		t.Fatalf("replace: %+v", r2)
	}
	// The stale revision now conflicts, with the current one in detail.
	before = be.Snapshot(t)
	_, err = svc.Set(ctx, memory.SetParams{Scope: scopeA, Key: "conventions/tests", Body: "third", ExpectedRevision: r1.Entry.Revision})
	wantKind(t, err, failure.RevisionConflict)
	if d := failure.DetailOf(err); d["current_revision"] != r2.Entry.Revision {
		t.Fatalf("conflict detail %v", d)
	}
	if be.Snapshot(t) != before {
		t.Fatal("a stale set changed the store")
	}
	e, hist, err := svc.Read(ctx, memory.ReadParams{Scope: scopeA, Key: "conventions/tests", WithHistory: true})
	if err != nil || e.Body != "other" || len(hist) != 2 || hist[0].Revision != r2.Entry.Revision || hist[1].WrittenBy != "wc_sess_x" {
		t.Fatalf("read: %+v %+v %v", e, hist, err)
	}
}

// TestRacingSetsOneWins: writers racing on one key with the same expected
// revision: exactly one wins, every other gets revision_conflict carrying
// the winner's revision.
func racingSetsOneWins(t *testing.T, open func(*testing.T) Backend) {
	be := open(t)
	svc := memory.NewService(be.Store, nil)
	r0 := mustSet(t, svc, memory.SetParams{Key: "k", Body: "v0"})
	const n = 8
	var wg sync.WaitGroup
	res := make([]memory.SetResult, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			res[i], errs[i] = svc.Set(context.Background(), memory.SetParams{Scope: scopeA, Key: "k", Body: fmt.Sprintf("v%d", i+1), ExpectedRevision: r0.Entry.Revision})
		})
	}
	close(start)
	wg.Wait()
	var won []int
	for i, err := range errs {
		if err == nil {
			won = append(won, i)
		}
	}
	if len(won) != 1 {
		t.Fatalf("%d writers won: %v", len(won), errs)
	}
	winner := res[won[0]].Entry.Revision
	for i, err := range errs {
		if i == won[0] {
			continue
		}
		wantKind(t, err, failure.RevisionConflict)
		if failure.DetailOf(err)["current_revision"] != winner {
			t.Fatalf("loser %d saw %v, winner is %s", i, failure.DetailOf(err), winner)
		}
	}
}

func deleteAndRecreateIsNewIncarnation(t *testing.T, open func(*testing.T) Backend) {
	be := open(t)
	svc := memory.NewService(be.Store, nil)
	ctx := context.Background()
	r1 := mustSet(t, svc, memory.SetParams{Key: "k", Body: "same"})
	before := be.Snapshot(t)
	_, err := svc.Delete(ctx, scopeA, "k", "mrev_9_000000000000000000000000")
	wantKind(t, err, failure.RevisionConflict)
	_, err = svc.Delete(ctx, scopeA, "k", "not-a-revision")
	wantKind(t, err, failure.InvalidRevision)
	_, err = svc.Delete(ctx, scopeA, "absent", r1.Entry.Revision)
	wantKind(t, err, failure.UnknownMemory)
	if be.Snapshot(t) != before {
		t.Fatal("a refused delete changed the store")
	}
	if _, err := svc.Delete(ctx, scopeA, "k", r1.Entry.Revision); err != nil {
		t.Fatal(err)
	}
	_, _, err = svc.Read(ctx, memory.ReadParams{Scope: scopeA, MemoryID: r1.Entry.MemoryID})
	wantKind(t, err, failure.UnknownMemory)
	// Setting the deleted revision again is a conflict: the key is gone.
	_, err = svc.Set(ctx, memory.SetParams{Scope: scopeA, Key: "k", Body: "same", ExpectedRevision: r1.Entry.Revision})
	wantKind(t, err, failure.RevisionConflict)
	r2 := mustSet(t, svc, memory.SetParams{Key: "k", Body: "same"})
	if !r2.Created || r2.Entry.MemoryID == r1.Entry.MemoryID || r2.Entry.Revision == r1.Entry.Revision {
		t.Fatalf("re-create kept identity: %+v vs %+v", r2.Entry, r1.Entry)
	}
	if r2.Entry.DefinitionHash != r1.Entry.DefinitionHash {
		t.Fatal("identical content must have the same definition hash")
	}
	be.Snapshot(t) // the kept entry count followed the delete and the create
	_, hist, _ := svc.Read(ctx, memory.ReadParams{Scope: scopeA, Key: "k", WithHistory: true})
	if len(hist) != 1 {
		t.Fatalf("a new incarnation inherited history: %+v", hist)
	}
}

func scopeIsProjectAndRoot(t *testing.T, open func(*testing.T) Backend) {
	be := open(t)
	svc := memory.NewService(be.Store, nil)
	ctx := context.Background()
	mustSet(t, svc, memory.SetParams{Key: "k", Body: "old root"})
	moved := memory.ScopeFor("agent:local:a", "/srv/elsewhere")
	if moved.ID == scopeA.ID || memory.ScopeFor("agent:local:b", "/srv/a").ID == scopeA.ID {
		t.Fatal("scope ids must differ by project and by root")
	}
	_, _, err := svc.Read(ctx, memory.ReadParams{Scope: moved, Key: "k"})
	wantKind(t, err, failure.UnknownMemory)
	es, n, err := svc.List(ctx, moved, 0)
	if err != nil || n != 0 || len(es) != 0 {
		t.Fatalf("moved scope not empty: %v %d %v", es, n, err)
	}
}

func bounds(t *testing.T, open func(*testing.T) Backend) {
	be := open(t)
	svc := memory.NewService(be.Store, nil)
	ctx := context.Background()
	if memory.MaxKeyChars != 128 || memory.MaxBodyBytes != 16384 || memory.MaxBootstrapBytes != 16384 {
		t.Fatal("bounds differ from DESIGN.md §5")
	}
	mustSet(t, svc, memory.SetParams{Key: strings.Repeat("é", memory.MaxKeyChars), Body: strings.Repeat("x", memory.MaxBodyBytes)})
	before := be.Snapshot(t)
	for name, p := range map[string]memory.SetParams{
		"key over":      {Key: strings.Repeat("k", memory.MaxKeyChars+1), Body: "b"},
		"body over":     {Key: "k", Body: strings.Repeat("x", memory.MaxBodyBytes+1)},
		"empty body":    {Key: "k", Body: ""},
		"blank key":     {Key: "  ", Body: "b"},
		"control key":   {Key: "a\nb", Body: "b"},
		"too many tags": {Key: "k", Body: "b", Tags: strings.Fields("a b c d e f g h i j k l m n o p q")[:memory.MaxTags+1]},
		"bad tag":       {Key: "k", Body: "b", Tags: []string{"has space"}},
		"long tag":      {Key: "k", Body: "b", Tags: []string{strings.Repeat("t", memory.MaxTagChars+1)}},
	} {
		p.Scope = scopeA
		_, err := svc.Set(ctx, p)
		if failure.KindOf(err) != failure.InvalidArguments {
			t.Errorf("%s: %v, want invalid_arguments", name, err)
		}
	}
	for _, rev := range []string{"x", "mrev_0_000000000000000000000000", "mrev_1_00", "mrev_1_" + strings.Repeat("0", 60)} {
		_, err := svc.Set(ctx, memory.SetParams{Scope: scopeA, Key: "k", Body: "b", ExpectedRevision: rev})
		if failure.KindOf(err) != failure.InvalidRevision {
			t.Errorf("revision %q: %v, want invalid_revision", rev, err)
		}
	}
	if be.Snapshot(t) != before {
		t.Fatal("refused sets changed the store")
	}
	// History per key keeps MaxHistoryPerKey revisions: the current one
	// (the entry row, never copied into memory_history) and the newest
	// superseded ones.
	r := mustSet(t, svc, memory.SetParams{Key: "h", Body: "0"})
	revs := []string{r.Entry.Revision}
	for i := 1; i <= memory.MaxHistoryPerKey+3; i++ {
		r = mustSet(t, svc, memory.SetParams{Key: "h", Body: fmt.Sprint(i), ExpectedRevision: r.Entry.Revision})
		revs = append(revs, r.Entry.Revision)
	}
	e, hist, _ := svc.Read(ctx, memory.ReadParams{Scope: scopeA, Key: "h", WithHistory: true})
	if len(hist) == 0 || !hist[0].WrittenAt.Equal(e.UpdatedAt) || hist[0].WrittenBy != e.WrittenBy {
		t.Fatalf("the current revision in history %+v does not match the entry %+v", hist, e)
	}
	kept, current := be.KeptHistory(t, r.Entry.MemoryID, r.Entry.Revision)
	if len(hist) != memory.MaxHistoryPerKey || kept != memory.MaxHistoryPerKey-1 || current != 0 {
		t.Fatalf("history %d returned, %d kept (%d of the current revision), want %d", len(hist), kept, current, memory.MaxHistoryPerKey)
	}
	for i, h := range hist {
		want := len(revs) - 1 - i
		if h.Revision != revs[want] || h.Body != fmt.Sprint(want) {
			t.Fatalf("history[%d] = %s %q, want %s %q", i, h.Revision, h.Body, revs[want], fmt.Sprint(want))
		}
	}
}

func entriesPerScopeBound(t *testing.T, open func(*testing.T) Backend) {
	be := open(t)
	svc := memory.NewService(be.Store, nil)
	fill(t, be, scopeA, memory.MaxEntriesPerScope, func(i int) string { return "b" })
	before := be.Snapshot(t)
	_, err := svc.Set(context.Background(), memory.SetParams{Scope: scopeA, Key: "one-more", Body: "b"})
	wantKind(t, err, failure.MemoryScopeFull)
	if be.Snapshot(t) != before {
		t.Fatal("a refused set changed the store")
	}
	// Another scope is not affected.
	mustSet(t, svc, memory.SetParams{Scope: memory.ScopeFor("agent:local:a", "/other"), Key: "one-more", Body: "b"})
}

func search(t *testing.T, open func(*testing.T) Backend) {
	be := open(t)
	svc := memory.NewService(be.Store, nil)
	ctx := context.Background()
	mustSet(t, svc, memory.SetParams{Key: "pitfalls/sqlite", Body: "never hold the writer across an await", Tags: []string{"db"}})
	mustSet(t, svc, memory.SetParams{Key: "conventions/errors", Body: "one table of error kinds; the writer decides", Tags: []string{"style"}})
	mustSet(t, svc, memory.SetParams{Scope: memory.ScopeFor("agent:local:other", "/x"), Key: "writer", Body: "writer writer writer"})
	hits, more, err := svc.Search(ctx, memory.SearchParams{Scope: scopeA, Query: "writer"})
	if err != nil || more || len(hits) != 2 {
		t.Fatalf("search: %+v %v %v", hits, more, err)
	}
	if !strings.Contains(hits[0].Snippet, "[writer]") || hits[0].Score < hits[1].Score {
		t.Fatalf("snippets or ranking: %+v", hits)
	}
	hits, _, _ = svc.Search(ctx, memory.SearchParams{Scope: scopeA, Query: "writer", Tags: []string{"db"}})
	if len(hits) != 1 || hits[0].MemoryKey != "pitfalls/sqlite" {
		t.Fatalf("tag filter: %+v", hits)
	}
	hits, _, _ = svc.Search(ctx, memory.SearchParams{Scope: scopeA, Query: "pitfalls"})
	if len(hits) != 1 || hits[0].MemoryKey != "pitfalls/sqlite" {
		t.Fatalf("key search: %+v", hits)
	}
	hits, more, _ = svc.Search(ctx, memory.SearchParams{Scope: scopeA, Query: "writer", Limit: 1})
	if len(hits) != 1 || !more {
		t.Fatalf("limit: %+v %v", hits, more)
	}
	before := be.Snapshot(t)
	for _, q := range []string{`"unterminated`, `AND writer`, `writer OR`, `nocolumn:writer`, `(writer`, `*`} {
		_, _, err := svc.Search(ctx, memory.SearchParams{Scope: scopeA, Query: q})
		if failure.KindOf(err) != failure.InvalidArguments {
			t.Errorf("query %q: %v, want invalid_arguments", q, err)
		}
	}
	for _, lim := range []int{-1, memory.MaxSearchLimit + 1} {
		_, _, err := svc.Search(ctx, memory.SearchParams{Scope: scopeA, Query: "writer", Limit: lim})
		wantKind(t, err, failure.InvalidArguments)
	}
	_, _, err = svc.Search(ctx, memory.SearchParams{Scope: scopeA, Query: strings.Repeat("a", memory.MaxQueryChars+1)})
	wantKind(t, err, failure.InvalidArguments)
	if be.Snapshot(t) != before {
		t.Fatal("searches changed the store")
	}
}

func bootstrap(t *testing.T, open func(*testing.T) Backend) {
	be := open(t)
	svc := memory.NewService(be.Store, nil)
	ctx := context.Background()
	// Empty scope: nothing, not truncated.
	b, err := svc.Bootstrap(ctx, scopeA)
	if err != nil || b.Total != 0 || b.Truncated || len(b.Entries) != 0 {
		t.Fatalf("empty: %+v %v", b, err)
	}
	mustSet(t, svc, memory.SetParams{Key: "old-pinned", Body: "rule", Tags: []string{memory.PinnedTag}})
	mustSet(t, svc, memory.SetParams{Key: "newest", Body: "note"})
	b, _ = svc.Bootstrap(ctx, scopeA)
	if b.Truncated || b.Total != 2 || b.Entries[0].MemoryKey != "old-pinned" || !b.Entries[0].Pinned || b.Entries[1].MemoryKey != "newest" {
		t.Fatalf("order: %+v", b)
	}
	// Many large bodies: bounded, truncation reported, pinned first then newest.
	fill(t, be, scopeA, 40, func(i int) string { return strings.Repeat(fmt.Sprintf("<%d>\"", i), 2000)[:memory.MaxBodyBytes/4] })
	b, err = svc.Bootstrap(ctx, scopeA)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(b)
	if len(raw) > memory.MaxBootstrapBytes {
		t.Fatalf("bootstrap is %d bytes, over %d", len(raw), memory.MaxBootstrapBytes)
	}
	if !b.Truncated || b.Total != 42 || b.Included != len(b.Entries) || b.Included >= b.Total || b.Included < 2 {
		t.Fatalf("truncation: total %d included %d truncated %v", b.Total, b.Included, b.Truncated)
	}
	if b.Entries[0].MemoryKey != "old-pinned" || b.Entries[1].MemoryKey != "fill/00039" {
		t.Fatalf("order under truncation: %s, %s", b.Entries[0].MemoryKey, b.Entries[1].MemoryKey)
	}
	if last := b.Entries[len(b.Entries)-1]; !last.BodyTruncated || len(raw) < memory.MaxBootstrapBytes-600 {
		t.Fatalf("the last entry should be cut to fill the bound: cut=%v size=%d", last.BodyTruncated, len(raw))
	}
}

func purge(t *testing.T, open func(*testing.T) Backend) {
	be := open(t)
	svc := memory.NewService(be.Store, nil)
	ctx := context.Background()
	other := memory.ScopeFor("agent:local:b", "/b")
	mustSet(t, svc, memory.SetParams{Key: "a1", Body: "x"})
	mustSet(t, svc, memory.SetParams{Key: "a2", Body: "x"})
	mustSet(t, svc, memory.SetParams{Scope: other, Key: "b1", Body: "x"})
	sc, err := svc.Scopes(ctx)
	if err != nil || len(sc) != 2 || sc[0].Project != "agent:local:a" || sc[0].Entries != 2 || sc[0].Bytes != 2 {
		t.Fatalf("scopes: %+v %v", sc, err)
	}
	before := be.Snapshot(t)
	_, err = svc.Purge(ctx, memory.ScopeFor("agent:local:none", "/").ID)
	wantKind(t, err, failure.UnknownMemory)
	_, err = svc.Purge(ctx, "bogus")
	wantKind(t, err, failure.InvalidArguments)
	if be.Snapshot(t) != before {
		t.Fatal("a refused purge changed the store")
	}
	n, err := svc.Purge(ctx, scopeA.ID)
	if err != nil || n != 2 {
		t.Fatalf("purge: %d %v", n, err)
	}
	hits, _, _ := svc.Search(ctx, memory.SearchParams{Scope: other, Query: "x"})
	sc, _ = svc.Scopes(ctx)
	if len(sc) != 1 || sc[0].ID != other.ID || len(hits) != 1 {
		t.Fatalf("after purge: %+v %+v", sc, hits)
	}
}

func listingBounds(t *testing.T, open func(*testing.T) Backend) {
	be := open(t)
	svc := memory.NewService(be.Store, nil)
	ctx := context.Background()
	fill(t, be, scopeA, memory.MaxListEntries+5, func(i int) string { return "b" })
	es, n, err := svc.List(ctx, scopeA, 0)
	if err != nil || len(es) != memory.MaxListEntries || n != memory.MaxListEntries+5 {
		t.Fatalf("list: %d of %d, %v", len(es), n, err)
	}
	if es[0].MemoryKey != fmt.Sprintf("fill/%05d", memory.MaxListEntries+4) {
		t.Fatalf("list is not newest first: %s", es[0].MemoryKey)
	}
	for i := range memory.MaxScopeList + 1 {
		fill(t, be, memory.ScopeFor(fmt.Sprintf("agent:local:p%d", i), "/r"), 1, func(int) string { return "b" })
	}
	sc, err := svc.Scopes(ctx)
	if err != nil || len(sc) != memory.MaxScopeList {
		t.Fatalf("scopes: %d, %v", len(sc), err)
	}
	// A snippet holds at most SnippetTokens tokens.
	words := make([]string, 200)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	words[100] = "needle"
	mustSet(t, svc, memory.SetParams{Key: "long", Body: strings.Join(words, " ")})
	hits, _, err := svc.Search(ctx, memory.SearchParams{Scope: scopeA, Query: "needle"})
	if err != nil || len(hits) != 1 {
		t.Fatalf("search: %v %v", hits, err)
	}
	if got := len(strings.Fields(strings.Trim(hits[0].Snippet, "…"))); got > memory.SnippetTokens || !strings.Contains(hits[0].Snippet, "[needle]") {
		t.Fatalf("snippet of %d tokens: %q", got, hits[0].Snippet)
	}
}

// searchSyntax: the FTS5 query forms give the same match sets on every
// backend, and a match in the key ranks before matches in bodies.
func searchSyntax(t *testing.T, open func(*testing.T) Backend) {
	be := open(t)
	svc := memory.NewService(be.Store, nil)
	ctx := context.Background()
	mustSet(t, svc, memory.SetParams{Key: "pitfalls/sqlite", Body: "never hold the writer across an await", Tags: []string{"db"}})
	mustSet(t, svc, memory.SetParams{Key: "conventions/errors", Body: "one table of error kinds; the writer decides", Tags: []string{"style"}})
	mustSet(t, svc, memory.SetParams{Key: "notes/locks", Body: "a lock waits for the Writer lock"})
	mustSet(t, svc, memory.SetParams{Key: "writer", Body: "see the other notes"})
	for q, want := range map[string]string{
		`Writer`:                       "conventions/errors notes/locks pitfalls/sqlite writer",
		`writer NOT lock`:              "conventions/errors pitfalls/sqlite writer",
		`hold OR kinds`:                "conventions/errors pitfalls/sqlite",
		`"the writer decides"`:         "conventions/errors",
		`"writer decides the"`:         "",
		`writ*`:                        "conventions/errors notes/locks pitfalls/sqlite writer",
		`pit*`:                         "pitfalls/sqlite",
		`memory_key:sqlite`:            "pitfalls/sqlite",
		`body:sqlite`:                  "",
		`tag_text:db`:                  "pitfalls/sqlite",
		`(hold OR waits) AND lock`:     "notes/locks",
		`lock NOT writer waits`:        "",
		`waits NOT hold lock`:          "notes/locks",
		`never AND (await OR nope)`:    "pitfalls/sqlite",
		`"t.TempDir" OR "error kinds"`: "conventions/errors",
	} {
		hits, _, err := svc.Search(ctx, memory.SearchParams{Scope: scopeA, Query: q, Limit: memory.MaxSearchLimit})
		if err != nil {
			t.Errorf("query %q: %v", q, err)
			continue
		}
		keys := make([]string, len(hits))
		for i, h := range hits {
			keys[i] = h.MemoryKey
		}
		slices.Sort(keys)
		if got := strings.Join(keys, " "); got != want {
			t.Errorf("query %q matched %q, want %q", q, got, want)
		}
	}
	for _, q := range []string{`(hold OR waits) lock`, `lock (hold)`, `memory_key:`} {
		if _, _, err := svc.Search(ctx, memory.SearchParams{Scope: scopeA, Query: q}); failure.KindOf(err) != failure.InvalidArguments {
			t.Errorf("query %q: %v, want invalid_arguments", q, err)
		}
	}
	hits, _, err := svc.Search(ctx, memory.SearchParams{Scope: scopeA, Query: "writer"})
	if err != nil || len(hits) != 4 || hits[0].MemoryKey != "writer" {
		t.Fatalf("a key match must rank first: %+v %v", hits, err)
	}
}
