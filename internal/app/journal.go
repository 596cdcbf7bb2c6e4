package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/evidence/evidencepg"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
	"github.com/webcodex/webcodex/internal/workflow/workflowpg"
)

// The offline evidence commands (`webcodex evidence ...`, the handoff
// brief of `webcodex session handoff`) open the journal through these, so
// that cmd/webcodex opens no store itself.

// HasJournal reports whether the deployment has an evidence journal, so
// that a reader which must not create one can skip it. A deployment on a
// database has one from its first start.
func HasJournal(cfg Config) bool {
	if cfg.DatabaseURL != "" {
		return true
	}
	_, err := os.Stat(filepath.Join(cfg.DataDir, EvidenceDB))
	return err == nil
}

// OpenJournal opens the deployment's evidence journal for an offline
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
func OpenJournal(ctx context.Context, cfg Config) (_ Journal, skipped []error, err error) {
	if cfg.DatabaseURL != "" {
		return openDatabaseJournal(ctx, cfg)
	}
	dataDir := cfg.DataDir
	j, err := evidencedb.Open(ctx, dataDir, evidence.Options{})
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

// VerifyJournal verifies the deployment's evidence journal offline and
// read-only (evidencedb.Verify, evidencepg.Verify): findings are in the
// report; an error means the journal could not be read at all. The report
// also counts the records still waiting in the workflow ledger's outbox
// (OutboxPending), read-only too.
func VerifyJournal(ctx context.Context, cfg Config, opts evidence.VerifyOptions) (evidence.Report, error) {
	if cfg.DatabaseURL != "" {
		return verifyDatabaseJournal(ctx, cfg, opts)
	}
	dataDir := cfg.DataDir
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
func RotateJournalKey(ctx context.Context, cfg Config) (evidencedb.Rotation, error) {
	if cfg.DatabaseURL != "" {
		return evidencedb.Rotation{}, failure.New(failure.Unavailable, "rotating the signing key of a journal in PostgreSQL is not supported yet; the journal keeps its key")
	}
	return evidencedb.RotateKey(ctx, cfg.DataDir, time.Now)
}

// dbJournal is a journal in a database opened for an offline command:
// closing it closes the database too.
type dbJournal struct {
	Journal
	db *pgdb.DB
}

func (j dbJournal) Close() error {
	err := j.Journal.Close()
	j.db.Close()
	return err
}

// openDatabaseJournal is OpenJournal for a deployment on a database: the
// ledger's outbox (the workflow schema) is journaled first, as at start.
func openDatabaseJournal(ctx context.Context, cfg Config) (Journal, []error, error) {
	db, err := pgdb.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, nil, err
	}
	j, err := evidencepg.Open(ctx, db, cfg.evidenceKeyFile(), evidence.Options{})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	var skipped []error
	applied, _ := j.Watermarks()
	for {
		rows, err := workflowpg.ReadOutbox(ctx, db, applied, outboxBatch)
		if err == nil && len(rows) > 0 {
			var s []error
			s, err = j.ApplyOutbox(ctx, outboxItems(rows), true)
			skipped = append(skipped, s...)
			applied = rows[len(rows)-1].Seq
		}
		if err != nil {
			db.Close()
			return nil, nil, fmt.Errorf("evidence outbox: %w", err)
		}
		if len(rows) < outboxBatch {
			return dbJournal{Journal: j, db: db}, skipped, nil
		}
	}
}

// verifyDatabaseJournal is VerifyJournal for a deployment on a database.
func verifyDatabaseJournal(ctx context.Context, cfg Config, opts evidence.VerifyOptions) (evidence.Report, error) {
	db, err := pgdb.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return evidence.Report{}, err
	}
	defer db.Close()
	opts.OutboxPending = func(ctx context.Context, after int64) (int64, error) { return workflowpg.PendingOutbox(ctx, db, after) }
	return evidencepg.Verify(ctx, db, opts)
}
