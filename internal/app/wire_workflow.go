package app

import "github.com/webcodex/webcodex/internal/workflow"

func newSessions(s *Stores) *workflow.Service { return workflow.NewService(s.Workflow, nil) }

// newBoard is the Session-local message board over the ledger, or nil for
// an app without stores (a registry built only to list the tools).
func newBoard(a *App) *workflow.Board {
	if a.Stores == nil || a.Stores.Workflow == nil {
		return nil
	}
	return workflow.NewBoard(a.Stores.Workflow, nil)
}

// newSnapshots is the closeout tools' snapshot-fence reader over the
// ledger, or nil for an app without stores.
func newSnapshots(a *App) workflow.SnapshotReader {
	if a.Stores == nil || a.Stores.Workflow == nil {
		return nil
	}
	return a.Stores.Workflow
}
