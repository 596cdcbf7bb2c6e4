package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// The offline evidence commands (`webcodex evidence ...`, the handoff
// brief of `webcodex session handoff`) open the journal through these, so
// that cmd/webcodex opens no store itself.

// HasJournal reports whether dataDir holds an evidence journal, so that a
// reader which must not create one can skip it.
func HasJournal(dataDir string) bool {
	_, err := os.Stat(filepath.Join(dataDir, EvidenceDB))
	return err == nil
}

// OpenJournal opens the evidence journal in dataDir for an offline
// command, creating it and its signing key when there is none. A key that
// is not the journal's is refused as evidencedb.Open refuses it. No
// periodic checkpoints run; the caller closes the journal.
//
// The records of acknowledged calls still in the workflow ledger's outbox
// (a server killed before its pump took them, or one running now) are
// journaled first, durably and read-only on the ledger, as the next start
// would journal them: what the command then reads or exports includes
// every acknowledged call. A record the journal refuses is left out and
// counted in skipped (nil when none); the server's next start does not
// take it again, since the journal's outbox watermark has passed it.
func OpenJournal(ctx context.Context, dataDir string) (j *evidencedb.Journal, skipped []error, err error) {
	j, err = evidencedb.Open(ctx, dataDir, evidence.Options{})
	if err != nil {
		return nil, nil, err
	}
	applied, _ := j.Watermarks()
	err = workflowdb.ReadOutbox(ctx, filepath.Join(dataDir, WorkflowDB), applied, outboxBatch, func(rows []workflowdb.OutboxRow) error {
		s, err := j.ApplyOutbox(ctx, outboxItems(rows), true)
		skipped = append(skipped, s...)
		return err
	})
	if err != nil {
		j.Close()
		return nil, nil, fmt.Errorf("evidence outbox: %w", err)
	}
	return j, skipped, nil
}

// VerifyJournal verifies the evidence journal in dataDir offline and
// read-only (evidencedb.Verify): findings are in the report; an error
// means the journal could not be read at all. The report also counts the
// records still waiting in the workflow ledger's outbox (OutboxPending),
// read-only too.
func VerifyJournal(ctx context.Context, dataDir string, opts evidence.VerifyOptions) (evidence.Report, error) {
	wf := filepath.Join(dataDir, WorkflowDB)
	opts.OutboxPending = func(ctx context.Context, watermark int64) (int64, error) {
		return workflowdb.PendingOutbox(ctx, wf, watermark)
	}
	return evidencedb.Verify(ctx, dataDir, opts)
}

// RotateJournalKey replaces the signing key of the journal in dataDir,
// keeping the retired public key (evidencedb.RotateKey; refused while
// another process has the journal open). The checkpoints it signs are
// stamped with the current time.
func RotateJournalKey(ctx context.Context, dataDir string) (evidencedb.Rotation, error) {
	return evidencedb.RotateKey(ctx, dataDir, time.Now)
}
