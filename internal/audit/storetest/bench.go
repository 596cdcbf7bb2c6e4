package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
)

// BenchmarkAppendBatch measures a store's cost per event when the group
// commit writes batches of 1 to 256 (one commit per batch), and
// sanitizing the same event, to show where an audited request's cost
// goes. open returns a new, empty store.
func BenchmarkAppendBatch(b *testing.B, open func(b *testing.B) audit.Store) {
	ev := audit.Event{EventView: audit.EventView{Endpoint: "/api/tools/call", Operation: "tools_call", ActionName: "read_files",
		Project: "agent:local:p", Status: audit.EventSuccess, HTTPStatus: 200, DurationMS: 1, RequestBytes: 90, ResponseBytes: 300,
		Summary: map[string]any{"transport": "rest", "tool": "read_files", "model_ergonomics": audit.ModelErgonomics{
			SchemaVersion: 6, ToolName: "read_files", ToolCategory: "files", Success: true, ExecutionState: "completed"}}}}
	b.Run("sanitize", func(b *testing.B) {
		for b.Loop() {
			audit.Sanitize(ev)
		}
	})
	for _, size := range []int{1, 16, 64, 256} {
		b.Run(fmt.Sprintf("append/batch=%d", size), func(b *testing.B) {
			st := open(b)
			s := audit.Sanitize(ev)
			s.SessionID = "bench"
			batch := make([]audit.Event, size)
			n := 0
			for b.Loop() {
				s.EventID = fmt.Sprint("e", n)
				batch[n%size] = s
				n++
				if n%size == 0 {
					if err := st.AppendEvents(ctx, batch, audit.MaxEventsPerSession, time.Now()); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
