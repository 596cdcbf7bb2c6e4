package app

import (
	"context"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/evidence/storetest"
	"github.com/webcodex/webcodex/internal/retention"
)

// TestRetentionUnitDefaults: without the soak's seam a policy counts in
// days and the purger passes every retention.Interval; with it, in the
// unit and interval the test set.
func TestRetentionUnitDefaults(t *testing.T) {
	var r RetentionConfig
	if got := r.age(3); got != retention.Days(3) || r.passInterval() != retention.Interval {
		t.Fatalf("default: age(3) = %v, interval %v", got, r.passInterval())
	}
	var c Config
	ShortenRetention(&c, time.Minute, 20*time.Second)
	if got := c.Retention.age(3); got != 3*time.Minute || c.Retention.passInterval() != 20*time.Second {
		t.Fatalf("shortened: age(3) = %v, interval %v", got, c.Retention.passInterval())
	}
}

// TestEvidenceTargetPurgesOneBatchPerCall: the evidence target purges one
// journal batch per call, from where the previous one stopped, so a run
// counts the journal's batches and retention.MaxBatchesPerRun bounds them
// as for every other store; the next run starts over and finds nothing.
func TestEvidenceTargetPurgesOneBatchPerCall(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	j, err := evidencedb.Open(ctx, dir, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	n := 2*retention.BatchSize + 7
	storetest.Fill(t, j, 0, n, "s")
	if _, err := j.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	one := 1
	r := RetentionConfig{EvidencePayloadDays: &one}
	p := retention.New(retentionTargets(r, &Stores{}, j, dir), nil, nil)
	runs := p.Pass(ctx)
	if len(runs) != 1 || runs[0].Store != "evidence" || runs[0].Removed.Items != int64(n) || runs[0].Batches != 3 || runs[0].Incomplete || runs[0].Error != "" {
		t.Fatalf("first pass: %+v", runs)
	}
	if runs = p.Pass(ctx); runs[0].Removed.Items != 0 || runs[0].Batches != 0 {
		t.Fatalf("second pass: %+v", runs)
	}
}
