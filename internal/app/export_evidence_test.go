package app

import (
	"context"

	"github.com/webcodex/webcodex/internal/kernel"
)

// WaitEvidence returns once the evidence records of read-only calls queued
// behind their responses so far are in the journal (the flush every
// reader of the journal runs first), so a test reads the journal's
// database after a real signal instead of polling.
func (a *App) WaitEvidence() error { return a.outbox.flush(context.Background()) }

// RecordEvidence hands r to the app's evidence sink, as the kernel does
// for a call recorded in no session.
func (a *App) RecordEvidence(ctx context.Context, r kernel.Record) error {
	_, err := a.evSink.record(ctx, r)
	return err
}

// EvidenceFailures is the sink's count of records that could not be
// stored (evidence.append_failures).
func (a *App) EvidenceFailures() int64 { return a.evSink.failures.Load() }
