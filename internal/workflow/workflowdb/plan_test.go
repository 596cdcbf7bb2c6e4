package workflowdb

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/sqlitedb/sqlitetest"
	"github.com/webcodex/webcodex/internal/workflow"
)

// TestQueriesUseTheirIndexes: the partial messages_by_reply (migration
// 0007) holds replies only, and the planner uses it only for a query that
// itself says that reply_to is not empty; without it a session's replies would be
// found by reading every message of the session. Retention's common pass
// stays on messages_by_status.
func TestQueriesUseTheirIndexes(t *testing.T) {
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "workflow.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	list, args := boardListQuery("wc_sess_x", workflow.MessageFilter{ReplyTo: "wc_msg_y", Limit: 10})
	for _, c := range []struct {
		name, query string
		args        []any
	}{
		{"replies", qReplies, []any{"wc_sess_x", "wc_msg_y", 10}},
		{"list by reply_to", list, args},
	} {
		plan := queryPlan(t, st, c.query, c.args...)
		if !strings.Contains(plan, "USING INDEX messages_by_reply") {
			t.Errorf("%s: plan %q does not use messages_by_reply", c.name, plan)
		}
	}
	// The session-event purge (session_events_days) finds and counts its
	// sessions through the partial sessions_purgeable (migration 0010).
	for _, q := range []string{`SELECT session_id, header_json, retained ` + sqlPurgeable + ` LIMIT 1`, `SELECT COUNT(*), COALESCE(SUM(retained), 0) ` + sqlPurgeable} {
		if plan := queryPlan(t, st, q, 1); !strings.Contains(plan, "USING INDEX sessions_purgeable") {
			t.Errorf("session-event purge: plan %q does not use sessions_purgeable", plan)
		}
	}
	// The common retention pass reads each class's oldest rows from
	// messages_by_status (in seq order, so each arm stops at its limit),
	// with no sort in SQL.
	plan := queryPlan(t, st, qOldest[fmt.Sprint(workflow.RetentionPasses[0])], "wc_sess_x", "", "", 1)
	if n := strings.Count(plan, "USING INDEX messages_by_status (session_id=? AND status=?)"); n != 2 || strings.Contains(plan, "SCAN m") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("first retention pass: plan %q, want both arms on messages_by_status", plan)
	}
}

func queryPlan(t *testing.T, st *Store, query string, args ...any) string {
	t.Helper()
	return sqlitetest.Plan(t, st.db.Read, query, args...)
}
