package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// BenchmarkRecordedCallPostgresVsSQLite alternates, round by round, the
// same round of recorded calls on a server on SQLite (a data directory)
// and on one on PostgreSQL (pgtest's cluster): in a round each of n
// clients posts one note to its own session's board recorded in that
// session (ledger events, the board and the evidence outbox, all
// durable). "ratio" is PostgreSQL's round time over SQLite's, so
// PostgreSQL's throughput relative to SQLite's is 1/ratio (issue 27's
// goal: at least 0.5 at 1 client, at least 1 at 32).
func BenchmarkRecordedCallPostgresVsSQLite(b *testing.B) {
	for _, clients := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			sqlite := openBenchApp(b, b.TempDir(), "bench="+b.TempDir())
			postgres := openBenchAppOn(b, pgtest.URL(b), "bench="+b.TempDir())
			benchpair.Run(b, "sqlite", postRound(b, sqlite, clients), "postgres", postRound(b, postgres, clients))
		})
	}
}

// postRound returns one round: each of n clients posts a note to its own
// session, recorded in it, all at once.
func postRound(b *testing.B, a *app.App, n int) func() { return spreadRound(b, []*app.App{a}, n) }

// openBenchAppOn is openBenchApp on the PostgreSQL database at url.
func openBenchAppOn(b *testing.B, url string, projects ...string) *app.App {
	return openReplica(b, url, "", projects...)
}

// openReplica is openBenchAppOn with the evidence key file key (""
// for the data directory's own), which every replica of one database
// shares.
func openReplica(b *testing.B, url, key string, projects ...string) *app.App {
	ctx := context.Background()
	cfg, _ := app.LoadConfig(b.TempDir(), func(string) string { return "" })
	cfg.DatabaseURL, cfg.EvidenceKey = url, key
	a, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	if _, err := a.RegisterProjects(ctx, projects); err != nil {
		b.Fatal(err)
	}
	return a
}
