package memorydb

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/memory"
)

// benchWords is the vocabulary of the benchmark bodies.
var benchWords = strings.Fields("writer commit fsync ledger session project memory revision scope search snippet " +
	"bounds redact token kernel transport gateway profile window peer board message attention handoff " +
	"sandbox landlock runner shell job validation evidence merkle checkpoint journal audit sqlite wal")

func benchBody(r *rand.Rand, words int) string {
	var b strings.Builder
	for i := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(benchWords[r.IntN(len(benchWords))])
		fmt.Fprintf(&b, "%d", r.IntN(500))
	}
	return b.String()
}

// BenchmarkMemorySearch: memory_search's store query over a scope of
// 10,000 entries (about 1 KiB each), one random term per call; it
// reports the p50 and p99 latency.
func BenchmarkMemorySearch(b *testing.B) {
	st, svc, _ := open(b)
	r := rand.New(rand.NewPCG(1, 2))
	fill(b, st, scopeA, 10_000, func(int) string { return benchBody(r, 120) })
	ctx := context.Background()
	var ds []time.Duration
	for b.Loop() {
		q := benchWords[r.IntN(len(benchWords))] + fmt.Sprint(r.IntN(500))
		start := time.Now()
		if _, _, err := svc.Search(ctx, memory.SearchParams{Scope: scopeA, Query: q}); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), "p99-µs")
}

// benchScope is the scope of a benchmark's m-th set (from 1), cur that
// of the one before: a scope holds MaxEntriesPerScope entries, so a long
// run (-benchtime beyond 2×10,000 calls) moves on to a fresh scope instead
// of failing with memory_scope_full. The plain table needs no such step;
// memory_set pays one more scope row per 10,000 sets.
func benchScope(cur memory.Scope, m int) memory.Scope {
	if m == 1 || (m-1)%memory.MaxEntriesPerScope != 0 {
		return cur
	}
	return memory.ScopeFor(scopeA.Project, fmt.Sprintf("%s/%d", scopeA.Root, m))
}

// openPlain opens the base of the set benchmarks: a two-column table in
// its own database file with memory.db's durability pragmas (WAL,
// synchronous=FULL) on one connection, and its INSERT prepared.
func openPlain(b *testing.B) (*sql.DB, *sql.Stmt) {
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(FULL)", "busy_timeout(10000)"} {
		q.Add("_pragma", p)
	}
	plain, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "plain.db")+"?"+q.Encode())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { plain.Close() })
	plain.SetMaxOpenConns(1)
	if _, err := plain.Exec(`CREATE TABLE kv (k TEXT PRIMARY KEY, body TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	ins, err := plain.Prepare(`INSERT INTO kv (k, body) VALUES (?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	return plain, ins
}

// BenchmarkMemorySetVsInsert times memory_set's service call (a new key:
// CAS decision, entry, history, FTS index, one durable commit) against a
// plain durable SQLite INSERT of the same body into a two-column table
// with the same pragmas, alternated call by call (benchpair). The goal is
// a ratio of at most 2 (set throughput at least half the insert's).
func BenchmarkMemorySetVsInsert(b *testing.B) {
	_, svc, _ := open(b)
	_, ins := openPlain(b)
	r := rand.New(rand.NewPCG(3, 4))
	body := benchBody(r, 120)
	ctx := context.Background()
	var n, m int
	scope := scopeA
	benchpair.Run(b, "sqlite_insert", func() {
		n++
		if _, err := ins.Exec(fmt.Sprintf("k%d", n), body); err != nil {
			b.Fatal(err)
		}
	}, "memory_set", func() {
		m++
		scope = benchScope(scope, m)
		if _, err := svc.Set(ctx, memory.SetParams{Scope: scope, Key: fmt.Sprintf("k%d", m), Body: body}); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkMemorySetVsWriterInsert separates memory_set's own cost from
// the shared writer's: the base is the same two-column INSERT run through
// this store's sqlitedb.Writer (goroutine hand-off, savepoint, durable
// commit), the subject memory_set of a new key.
func BenchmarkMemorySetVsWriterInsert(b *testing.B) {
	st, svc, _ := open(b)
	ctx := context.Background()
	if err := st.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE kv (k TEXT PRIMARY KEY, body TEXT NOT NULL)`)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	ins, err := st.db.Writer.Prepare(ctx, `INSERT INTO kv (k, body) VALUES (?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	body := benchBody(rand.New(rand.NewPCG(5, 6)), 120)
	var n, m int
	scope := scopeA
	benchpair.Run(b, "writer_insert", func() {
		n++
		if err := st.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.StmtContext(ctx, ins).ExecContext(ctx, fmt.Sprintf("k%d", n), body)
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}, "memory_set", func() {
		m++
		scope = benchScope(scope, m)
		if _, err := svc.Set(ctx, memory.SetParams{Scope: scope, Key: fmt.Sprintf("k%d", m), Body: body}); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkMemorySetPages counts the database pages one durable commit
// writes (its WAL frames): memory_set of a new key in a scope that already
// holds 2,000 entries, and the plain INSERT of BenchmarkMemorySetVsInsert.
// Automatic checkpoints are off on both writers, so the WAL keeps every
// frame; after each round of calls a PASSIVE checkpoint reads the frame
// count and a TRUNCATE one empties the WAL for the next round. It reports
// memory_set-pages/op and sqlite_insert-pages/op; ns/op is one call of
// each.
func BenchmarkMemorySetPages(b *testing.B) {
	st, svc, _ := open(b)
	plain, ins := openPlain(b)
	ctx := context.Background()
	body := benchBody(rand.New(rand.NewPCG(3, 4)), 120)
	const filled = 2_000
	fill(b, st, scopeA, filled, func(int) string { return body })
	if err := st.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `PRAGMA wal_autocheckpoint = 0`)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	if _, err := plain.Exec(`PRAGMA wal_autocheckpoint = 0`); err != nil {
		b.Fatal(err)
	}
	// frames returns the WAL's frame count and empties it.
	frames := func(db *sql.DB) int {
		var busy, log, done, n int
		if err := db.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &n, &done); err != nil || busy != 0 {
			b.Fatalf("checkpoint: busy %d, %v", busy, err)
		}
		// TRUNCATE reports the emptied WAL's counts (zero).
		if err := db.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &log, &done); err != nil || busy != 0 {
			b.Fatalf("checkpoint: busy %d, %v", busy, err)
		}
		return n
	}
	frames(st.db.Read)
	frames(plain)
	const round = 100
	var setFrames, insFrames, calls, n int
	m := filled
	scope := scopeA
	for b.Loop() {
		n++
		if _, err := ins.Exec(fmt.Sprintf("k%d", n), body); err != nil {
			b.Fatal(err)
		}
		m++
		scope = benchScope(scope, m)
		if _, err := svc.Set(ctx, memory.SetParams{Scope: scope, Key: fmt.Sprintf("k%d", m), Body: body}); err != nil {
			b.Fatal(err)
		}
		if calls++; calls%round == 0 {
			setFrames += frames(st.db.Read)
			insFrames += frames(plain)
		}
	}
	if calls < round {
		setFrames += frames(st.db.Read)
		insFrames += frames(plain)
	} else {
		calls -= calls % round
	}
	b.ReportMetric(float64(setFrames)/float64(calls), "memory_set-pages/op")
	b.ReportMetric(float64(insFrames)/float64(calls), "sqlite_insert-pages/op")
}
