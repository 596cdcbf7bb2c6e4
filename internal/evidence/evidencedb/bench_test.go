package evidencedb

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/compact"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencerow"
)

func benchRecord(i int64, sess string) evidence.Record {
	d := evidence.Digest([]byte(strconv.FormatInt(i, 10)))
	return evidence.Record{
		InvocationID: fmt.Sprintf("inv-%012d", i), At: time.Unix(1767225600, i).UTC(), Tool: "read_files",
		Source: evidence.SourceMCP, TransportEra: "2025-11-25",
		Claim:    evidence.Claim{RecordingSessionID: sess, Project: "agent:local:demo", PrincipalKind: "api_token", ClientWindow: d},
		Verified: evidence.Verified{SessionID: sess, Project: "agent:local:demo", Authority: "auth", Lifecycle: "active"},
		Binding:  evidence.BindingVerified, Reasons: []evidence.Reason{evidence.ReasonStoreMatch},
		CheckedKeys: []evidence.CheckKey{evidence.KeyRegistration, evidence.KeyAuthority, evidence.KeyProject},
		SkippedKeys: []evidence.CheckKey{evidence.KeyLifecycle}, SessionRecordDigest: d,
		Outcome: evidence.OutcomeOK, DurationMS: i % 1000, ArgumentsDigest: d, ResultDigest: d,
	}
}

// bulk appends n records in transactions of 10,000 (fast setup for large N).
func bulk(b *testing.B, j *Journal, from, n int64, sess func(int64) string) {
	ctx := context.Background()
	for start := from; start < from+n; start += 10000 {
		end := min(start+10000, from+n)
		err := j.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
			j.mu.Lock()
			defer j.mu.Unlock()
			if err := j.sync(ctx, tx); err != nil {
				return err
			}
			for i := start; i < end; i++ {
				r := evidence.Salted(benchRecord(i, sess(i)))
				canon, err := r.Canonical(j.journalID, j.key.ID, 0)
				if err != nil {
					return err
				}
				if _, err := j.appendLocked(ctx, tx, r, canon); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// benchN is the positive integer in the environment variable name, or
// def.
func benchN(name string, def int64) int64 {
	if n, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil && n > 0 {
		return n
	}
	return def
}

func verifyN() int64 { return benchN("WEBCODEX_BENCH_VERIFY_N", 10000) }

// BenchmarkJournal measures (1) concurrent appends with canonical encoding,
// leaf hashing, tree update and the size-based checkpoint against plain
// inserts of the same rows (same table and indexes, no encoding or
// hashing), (2) offline verification of N records
// (WEBCODEX_BENCH_VERIFY_N, default 10,000), (3) a one-record inclusion
// proof (bundle export) in a journal of N records.
func BenchmarkJournal(b *testing.B) {
	ctx := context.Background()
	var seq atomic.Int64
	b.Run("append/journal", func(b *testing.B) {
		j, err := Open(ctx, b.TempDir(), evidence.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer j.Close()
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := j.Append(ctx, benchRecord(seq.Add(1), "s")); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	// plain: the same rows without the canonical blob, leaf hash, tree or
	// checkpoints (the goal is journal >= 0.7x its throughput);
	// plain_canonical: the same rows with the canonical blob stored but no
	// hashing, tree or signing, which isolates the cost of those.
	for _, withCanon := range []bool{false, true} {
		name := "append/plain"
		if withCanon {
			name = "append/plain_canonical"
		}
		b.Run(name, func(b *testing.B) {
			j, err := Open(ctx, b.TempDir(), evidence.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r := benchRecord(seq.Add(1), "s")
					if err := r.Validate(); err != nil {
						b.Error(err)
						return
					}
					canon, leaf := []byte{}, []byte{}
					if withCanon {
						canon, leaf = encodeNoHash(r), make([]byte, 32)
					}
					args := evidencerow.Args(0, "k", r, canon, leaf)
					args[0] = nil // rowid assigned by SQLite
					err := j.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
						res, err := tx.StmtContext(ctx, j.stmts.insertLeaf).ExecContext(ctx, pick(args, leafArgs)...)
						if err != nil {
							return err
						}
						if args[0], err = res.LastInsertId(); err != nil {
							return err
						}
						_, err = tx.StmtContext(ctx, j.stmts.insertPayload).ExecContext(ctx, pick(args, payloadArgs)...)
						return err
					})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
	n := verifyN()
	dir := b.TempDir()
	j, err := Open(ctx, dir, evidence.Options{})
	if err != nil {
		b.Fatal(err)
	}
	bulk(b, j, 0, n, func(i int64) string {
		if i == n/2 {
			return "one"
		}
		return "s"
	})
	if _, err := j.Checkpoint(ctx); err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("inclusion_proof/N=%d", n), func(b *testing.B) {
		var bun evidence.Bundle
		for b.Loop() {
			if bun, err = j.ExportBundle(ctx, "one"); err != nil {
				b.Fatal(err)
			}
		}
		p := bun.Records[0].InclusionProof
		b.ReportMetric(float64(len(p)), "hashes")
		b.ReportMetric(float64(len(p)*32), "proof_bytes")
	})
	// The proof alone, from the stored nodes and, as before the tree index
	// (decision 0022), by streaming every leaf hash; the two sides
	// alternate within each iteration and report their own times.
	b.Run(fmt.Sprintf("proof_stored_vs_streamed/N=%d", n), func(b *testing.B) {
		idx, size := uint64(n/2), uint64(n)
		var stored, streamed time.Duration
		for b.Loop() {
			t0 := time.Now()
			p1, err := j.InclusionProof(ctx, idx, size)
			t1 := time.Now()
			p2, err2 := streamedProof(ctx, j, idx, size)
			t2 := time.Now()
			if err != nil || err2 != nil || len(p1) != len(p2) || string(p1[0]) != string(p2[0]) {
				b.Fatal(err, err2)
			}
			stored += t1.Sub(t0)
			streamed += t2.Sub(t1)
		}
		b.ReportMetric(float64(stored.Microseconds())/float64(b.N)/1000, "stored_ms/proof")
		b.ReportMetric(float64(streamed.Microseconds())/float64(b.N)/1000, "streamed_ms/proof")
	})
	j.Close()
	// Open with the stored tree state against the leaf stream Open did
	// before the tree index, alternated.
	b.Run(fmt.Sprintf("open_stored_vs_streamed/N=%d", n), func(b *testing.B) {
		var stored, streamed time.Duration
		for b.Loop() {
			t0 := time.Now()
			j, err := Open(ctx, dir, evidence.Options{})
			if err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			rng, err := streamedRange(ctx, j)
			t2 := time.Now()
			if err != nil || rng.End() != uint64(n) {
				b.Fatal(err)
			}
			j.Close()
			stored += t1.Sub(t0)
			streamed += t2.Sub(t1)
		}
		b.ReportMetric(float64(stored.Microseconds())/float64(b.N)/1000, "open_ms")
		b.ReportMetric(float64(streamed.Microseconds())/float64(b.N)/1000, "leaf_stream_ms")
	})
	b.Run(fmt.Sprintf("verify/N=%d", n), func(b *testing.B) {
		// Sample the Go heap while verifying: it must stay flat in N.
		runtime.GC()
		var peak atomic.Uint64
		done := make(chan struct{})
		go func() {
			var ms runtime.MemStats
			for {
				select {
				case <-done:
					return
				case <-time.After(5 * time.Millisecond):
					runtime.ReadMemStats(&ms)
					if ms.HeapAlloc > peak.Load() {
						peak.Store(ms.HeapAlloc)
					}
				}
			}
		}()
		for b.Loop() {
			rep, err := Verify(ctx, dir, evidence.VerifyOptions{})
			if err != nil || !rep.Clean || rep.Records != n {
				b.Fatalf("%v %+v", err, rep.Totals)
			}
		}
		close(done)
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/record")
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak_heap_MiB")
	})
}

func encodeNoHash(r evidence.Record) []byte {
	c, err := r.Canonical("journal", "key", 0)
	if err != nil {
		panic(err)
	}
	return c
}

// streamedProof is the inclusion proof as it was built before the tree
// index: every leaf hash up to size streamed through a TreeBuilder.
func streamedProof(ctx context.Context, j *Journal, index, size uint64) ([][]byte, error) {
	tb := evidence.NewTreeBuilder()
	if err := tb.WantInclusion(index, size); err != nil {
		return nil, err
	}
	rows, err := j.db.Read.QueryContext(ctx, `SELECT leaf_hash FROM records WHERE idx < ? ORDER BY idx`, int64(size))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var leaf []byte
		if err := rows.Scan(&leaf); err != nil {
			return nil, err
		}
		if err := tb.Append(leaf); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return tb.InclusionProof(index, size)
}

// streamedRange is the compact range as Open built it before the tree
// index: from every leaf hash.
func streamedRange(ctx context.Context, j *Journal) (*compact.Range, error) {
	rng := evidence.RangeFactory.NewEmptyRange(0)
	rows, err := j.db.Read.QueryContext(ctx, `SELECT leaf_hash FROM records ORDER BY idx`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var leaf []byte
		if err := rows.Scan(&leaf); err != nil {
			return nil, err
		}
		if err := rng.Append(leaf, nil); err != nil {
			return nil, err
		}
	}
	return rng, rows.Err()
}
