package workflowrow

import (
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/workflow"
)

// TestEventArgsMatchTheColumns: an events row binds EventArgCount values,
// session_id and one per EventColumns, and the values EventArgs may give
// as NULL are the text columns EventArgNullable names.
func TestEventArgsMatchTheColumns(t *testing.T) {
	args := EventArgs("s", workflow.Event{Seq: 1, At: time.Unix(0, 5), Kind: workflow.EventSessionCreated})
	if n := strings.Count(EventColumns, ",") + 2; len(args) != EventArgCount || n != EventArgCount {
		t.Fatalf("%d args for %d columns, EventArgCount %d", len(args), n, EventArgCount)
	}
	for i, v := range args {
		if (v == nil) != EventArgNullable(i) {
			t.Errorf("arg %d = %#v, nullable %v", i, v, EventArgNullable(i))
		}
	}
}
