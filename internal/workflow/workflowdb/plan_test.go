package workflowdb

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

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
	rows, err := st.db.Read.Query(`EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "\n")
}
