package app

import "github.com/webcodex/webcodex/internal/workflow"

func newSessions(s *Stores) *workflow.Service { return workflow.NewService(s.Workflow, nil) }

// newBoard is the Session-local message board over the ledger, or nil for
// an app without stores (a registry built only to list the tools).
// It is made once per App: the tools and the kernel's session_attention
// projection share its notifier and its projection claims.
func newBoard(a *App) *workflow.Board {
	if a.Stores == nil || a.Stores.Workflow == nil {
		return nil
	}
	if a.board == nil {
		a.board = workflow.NewBoard(a.Stores.Workflow, nil).WithLogger(a.Log)
	}
	return a.board
}

// newSnapshots is the closeout tools' snapshot-fence reader over the
// ledger, or nil for an app without stores.
func newSnapshots(a *App) workflow.SnapshotReader {
	if a.Stores == nil || a.Stores.Workflow == nil {
		return nil
	}
	return a.Stores.Workflow
}
