package workflowdb

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/workflow"
)

// TestQueriesUseTheirIndexes: the partial messages_by_reply (migration
// 0007) holds replies only, and the planner uses it only for a query that
// itself says reply_to != ”; without it a session's replies would be
// found by reading every message of the session.
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
		rows, err := st.db.Read.Query(`EXPLAIN QUERY PLAN `+c.query, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if !strings.Contains(strings.Join(plan, "\n"), "USING INDEX messages_by_reply") {
			t.Errorf("%s: plan %q does not use messages_by_reply", c.name, plan)
		}
	}
}
