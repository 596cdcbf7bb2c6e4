package app

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
)

// TestBehindEvidenceFailuresCounted: a read-only call's record that the
// journal refuses in its writer (a reused invocation id) is counted in the
// sink's failures and logged once its batch ends; one refused before it
// is queued (invalid) is counted and returned at once. Neither changes
// the journal.
func TestBehindEvidenceFailuresCounted(t *testing.T) {
	ctx := context.Background()
	j, err := evidencedb.Open(ctx, t.TempDir(), evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var logs bytes.Buffer
	s := &evidenceSink{journal: j, log: slog.New(slog.NewTextHandler(&logs, nil))}
	r := kernel.Record{InvocationID: "inv_dup", At: time.Now(), Tool: "read_files", Source: kernel.SourceInternal,
		Binding: kernel.Binding{State: evidence.BindingSessionless, Reasons: []evidence.Reason{evidence.ReasonNoRecorderRequested}},
		Outcome: evidence.OutcomeOK}
	for range 2 {
		if err := s.record(ctx, r); err != nil {
			t.Fatalf("a behind append reported %v before it ran", err)
		}
	}
	s.wait()
	if got := s.failures.Load(); got != 1 || !strings.Contains(logs.String(), "inv_dup") {
		t.Fatalf("failures %d, log %q; want the reused invocation counted and logged", got, logs.String())
	}
	bad := r
	bad.InvocationID, bad.Tool = "inv_bad", ""
	if err := s.record(ctx, bad); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("invalid record: %v, want invalid_arguments", err)
	}
	if got := s.failures.Load(); got != 2 {
		t.Fatalf("failures %d after an invalid record, want 2", got)
	}
	if head, err := j.Head(ctx); err != nil || head.Size != 1 {
		t.Fatalf("head %+v %v, want the one record", head, err)
	}
}
