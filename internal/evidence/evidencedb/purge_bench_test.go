package evidencedb

import (
	"context"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/evidence"
)

// purgeBenchN is the journal size of BenchmarkVerifyPurged
// (WEBCODEX_BENCH_PURGE_N, default 10,000).
func purgeBenchN() int64 { return benchN("WEBCODEX_BENCH_PURGE_N", 10000) }

// BenchmarkVerifyPurged verifies, alternating in one run, a journal of N
// salted records with none purged and one of the same N with 90% purged
// (ratio = purged / none).
func BenchmarkVerifyPurged(b *testing.B) {
	ctx := context.Background()
	n := purgeBenchN()
	build := func(purged int64) string {
		dir := b.TempDir()
		j, err := Open(ctx, dir, evidence.Options{})
		if err != nil {
			b.Fatal(err)
		}
		bulk(b, j, 0, n, func(int64) string { return "wc_sess_bench" })
		if _, err := j.Checkpoint(ctx); err != nil {
			b.Fatal(err)
		}
		if purged > 0 { // benchRecord i is at 1767225600 s + i ns
			sum, err := j.PurgeBefore(ctx, "bench", time.Unix(1767225600, purged).UTC(), evidence.MaxPurgeBatch)
			if err != nil || sum.Purged != purged {
				b.Fatalf("purge %+v %v", sum, err)
			}
		}
		j.Close()
		return dir
	}
	none, most := build(0), build(n*9/10)
	verifyDir := func(dir string, purged int64) func() {
		return func() {
			rep, err := Verify(ctx, dir, evidence.VerifyOptions{})
			if err != nil || !rep.Clean || rep.Purged != purged || rep.Records != n {
				b.Fatalf("verify: %v clean %v purged %d", err, rep.Clean, rep.Purged)
			}
		}
	}
	b.ResetTimer()
	benchpair.Run(b, "none-purged", verifyDir(none, 0), "90pct-purged", verifyDir(most, n*9/10))
}
