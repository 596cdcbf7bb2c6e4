package app

import (
	"context"
	"io"

	"github.com/webcodex/webcodex/internal/workflow"
)

// ImportLedger imports the version-2 ledger read from r into the workflow
// store of s, refusing every row whose project is not in the registry of s,
// all or nothing ([workflow.ImportLedgerReport]): its report counts the
// sessions and messages imported and the message rows discarded.
func ImportLedger(ctx context.Context, s *Stores, r io.Reader) (workflow.LedgerImport, error) {
	projects := newProjects(s)
	return workflow.ImportLedgerReport(ctx, s.Workflow, r, func(ctx context.Context, id string) error {
		_, err := projects.Get(ctx, id)
		return err
	})
}
