package workflowdb_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

func started(tool, call, inv string, role workflow.Role) workflow.Event {
	return workflow.Event{Kind: workflow.EventToolCallStarted, Tool: tool, CallID: call, InvocationID: inv, Role: role}
}

func finished(tool, call, inv string, role workflow.Role) workflow.Event {
	return workflow.Event{Kind: workflow.EventToolCallFinished, Tool: tool, CallID: call, InvocationID: inv, Role: role, Outcome: workflow.OutcomeOK}
}

func appendEvents(t *testing.T, svc *workflow.Service, id string, evs ...workflow.Event) {
	t.Helper()
	if _, _, err := svc.Append(context.Background(), id, evs...); err != nil {
		t.Fatal(err)
	}
}

// TestOpenCallsBackfilledByMigration: a ledger written before open calls
// were tracked gets its retained open calls at the upgrade.
func TestOpenCallsBackfilledByMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "workflow.db")
	st, err := workflowdb.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := workflow.NewService(st, nil)
	s := start(t, svc)
	appendEvents(t, svc, s.ID, started("write_project_file", "call_done", "inv_1", workflow.RoleBusiness))
	appendEvents(t, svc, s.ID, finished("write_project_file", "call_done", "inv_1", workflow.RoleBusiness))
	appendEvents(t, svc, s.ID, started("run_process", "call_open", "inv_2", workflow.RoleBusiness))
	// Back to the schema before migration 0003.
	if err := st.DB().Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DROP TABLE open_calls`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM schema_migrations WHERE name = '0003_open_calls.sql'`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st = open(t, path)
	calls, err := st.OpenCalls(ctx, 0)
	if err != nil || len(calls) != 1 || calls[0].CallID != "call_open" || calls[0].Tool != "run_process" || calls[0].StartedSeq != 5 {
		t.Fatalf("open calls after the upgrade: %+v %v", calls, err)
	}
}
