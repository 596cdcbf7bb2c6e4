package app

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/pgnotify"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowpg"
)

// probeWait bounds how long start waits for the LISTEN connection and
// its probe (pgnotify.Listener.Probe) before it serves anyway: waits then
// poll until the connection is up.
const probeWait = 10 * time.Second

// listen starts the replica's LISTEN connection when the stores are in a
// database, and checks that notifications reach it (a transaction-mode
// pooler swallows them: the listener then warns once and waits poll).
func (a *App) listen(ctx context.Context) error {
	if a.Stores.db == nil {
		return nil
	}
	a.listener = pgnotify.Start(context.WithoutCancel(ctx), a.Stores.db, a.Log)
	pctx, cancel := context.WithTimeout(ctx, probeWait)
	defer cancel()
	if err := a.listener.Probe(pctx); err != nil {
		a.Log.Warn("start: cross-replica wakes fall back to polling", "err", err)
	}
	return nil
}

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
		if a.listener != nil {
			a.board = a.board.WithNotifier(a.listener.Topic(workflowpg.BoardChannel))
		}
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
